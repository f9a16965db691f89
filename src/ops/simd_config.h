// Internal: included first by every Highway translation unit in ops/ so all
// of them compile the same set of targets. SSSE3/SSE4 are skipped to halve
// build time: a pre-AVX2 x86-64 runs the portable code instead.
// On AArch64 the SVE targets are skipped: the kernels keep arrays of vectors
// (accumulator tiles, unrolled chains), which sizeless SVE types cannot be
// elements of, so they compile for NEON (128-bit, every AArch64 CPU) and the
// portable baseline; qvl's own NEON kernels (neon_*.cpp) add the dot-product,
// int8 and bf16 matrix instructions where the CPU has them (cpu_features.h).
#pragma once

#ifndef HWY_DISABLED_TARGETS
#if defined(__aarch64__)
#define HWY_DISABLED_TARGETS (HWY_SVE | HWY_SVE2 | HWY_SVE_256 | HWY_SVE2_128)
#else
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif
#endif

// What the x86 target being compiled offers, as rules over Highway's ordering
// (hwy/detect_targets.h: a lower value is a better target, and every x86
// target better than another includes its instructions). Highway 1.0.3 stops
// at AVX3_DL; 1.1+ adds AVX3_ZEN4 and AVX3_SPR above it, which must take the
// same kernels, not fall back to the portable ones.
//   QVL_X86_AVX2:   AVX2 + FMA + F16C (16 ymm registers) or better
//   QVL_X86_AVX512: AVX-512 F/BW/DQ/VL (32 zmm registers) or better
//   QVL_X86_VNNI:   AVX3_DL or better: the CPU check for these targets
//                   requires AVX512-VNNI (vpdpbusd).
#define QVL_X86_AVX2 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2)
#define QVL_X86_AVX512 (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3)
#define QVL_X86_VNNI (HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3_DL)
