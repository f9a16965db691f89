// What this CPU (and its OS) offers beyond what Highway dispatches on: the
// dot-product and tile instructions that qvl's hand-written kernels and the
// unit-peak probes use. Read once per process from CPUID and XGETBV on
// x86-64, from the hardware capabilities Linux reports (getauxval) on
// AArch64; every kernel that needs one of these checks it at run time, so one
// binary runs on any x86-64, or any AArch64. Fields of the other architecture
// are false.
#pragma once

#include <cstdint>

namespace qvl {

struct CpuFeatures {
  bool avx512 = false;       // F, BW, VL, DQ, and the OS saves zmm state (XCR0 bits 5-7)
  bool avx512_vnni = false;  // vpdpbusd zmm
  bool avx_vnni = false;     // vpdpbusd ymm, VEX-encoded (Alder Lake, Zen 5)
  bool avx512_bf16 = false;  // vdpbf16ps, vcvtne2ps2bf16
  // AMX (Intel SDM vol. 1 ch. 3.3, "Intel Advanced Matrix Extensions"): the
  // CPU has the tile unit (CPUID.(7,0):EDX bits 24 tile, 22 bf16, 25 int8)
  // and the OS enables tile state in XCR0 (bits 17 XTILECFG, 18 XTILEDATA).
  // Using it also needs permission per process: amx_tile_state_granted().
  bool amx_tile = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;
  // Vendor and family (CPUID.1:EAX base + extended family), for the few
  // choices that were measured to differ between microarchitectures of the
  // same ISA (e.g. how decode prefetches bf16 weights: AMD family 0x19 is
  // Zen 3/4, 0x1A Zen 5).
  bool amd = false;
  int family = 0;
  // AArch64 (Arm ARM, "The AArch64 Application Level Programmers' Model";
  // Linux Documentation/arch/arm64/elf_hwcaps.rst). FEAT_DotProd: SDOT/UDOT
  // (int8 products summed in int32 lanes, 4 per lane); FEAT_I8MM: SMMLA
  // (a 2x8 by 8x2 int8 matrix product into 2x2 int32); FEAT_BF16: BFDOT,
  // BFMMLA (bf16 pairs into f32, round to odd). Armv8.2 makes none of them
  // mandatory: Cortex-A76 and Neoverse N1 have the dot product only;
  // Neoverse V1/N2/V2 (Graviton 3/4), Cortex-A710 and later have all three.
  bool arm_dotprod = false;  // HWCAP_ASIMDDP
  bool arm_i8mm = false;     // HWCAP2_I8MM
  bool arm_bf16 = false;     // HWCAP2_BF16
  bool arm_sve = false;      // HWCAP_SVE (Highway's SVE targets; reported, not used by qvl's own kernels)
};

// Read on first call; later calls return the same values. Under a SIMD limit
// (simd_limit()) these are the features of a CPU whose best is that target.
const CpuFeatures& cpu_features();

// A process-wide ceiling on the SIMD target, so the whole suite (or any run)
// can take on one machine the paths an older CPU takes: the environment
// variable QVL_SIMD_TARGET names a Highway target (as hwy::TargetName spells
// it: "AVX2", "EMU128", "AVX3", "NEON", ...). Read once per process, before
// the first dispatch; Highway then dispatches to nothing better
// (hwy::DisableTargets) and cpu_features() drops what that target lacks
// (limit_features). An unknown name, or one this CPU cannot run, ends the
// process with one line saying which names it could take.
struct SimdLimit {
  int64_t target = 0;  // a Highway target bit; 0: no limit
  const char* name = "";
};
const SimdLimit& simd_limit();

// The rule cpu_features() applies under a limit: AVX-512 only at AVX3 or
// better, AVX512-VNNI at AVX3_DL or better, AVX512-BF16 at AVX3_ZEN4 or better
// (the first Highway target that requires it; none in Highway 1.0.3), and
// none of AVX-VNNI and AMX, which no Highway target implies. On AArch64: SVE
// only at SVE or better, and the dot product, I8MM and BF16 only at a target
// that requires them (NEON_BF16, Highway 1.2+), so a limit to NEON is a plain
// Armv8.0 CPU and qvl's SDOT/SMMLA/BFMMLA kernels step aside.
CpuFeatures limit_features(CpuFeatures f, int64_t target);

// Whether this process may execute tile instructions: amx_tile, and Linux
// granted XTILEDATA on request (arch_prctl(ARCH_REQ_XCOMP_PERM), kernel 5.16+;
// without it the first tile instruction raises SIGILL, which is what
// llama.cpp's AMX build dies of in VMs that hide the state). Asked once per
// process; the grant covers every thread, each of which must still load its
// own tile configuration (ldtilecfg) before its first tile instruction.
bool amx_tile_state_granted();

}  // namespace qvl
