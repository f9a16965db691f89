// Measures this machine's limits, so benchmarks can report each kernel as a
// fraction of what the hardware does in the same run (the machine may be
// shared, so absolute figures drift).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ops/thread_pool.h"

namespace qvl {

// FP32 FMA throughput of pool.size() threads, each running an unrolled loop of
// independent FMAs on the widest SIMD target. GFLOP/s (an FMA counts 2).
double measure_fma_peak_gflops(ThreadPool& pool, double seconds = 0.3);

// The peak of every multiply unit this CPU has, pool.size() threads, each a
// register-only loop of independent chains (unit_peaks.cpp), so a compute
// figure can be given as a fraction of the unit its kernel ran on. G
// operations/s, a multiply-add counting 2; 0 for a unit the CPU lacks (or,
// for AMX, the OS does not grant: amx_tile_state_granted()).
struct UnitPeaks {
  double fma_f32_gflops = 0;                  // FP32 FMA, widest Highway target
  double int8_dot_gops = 0;                   // vpdpbusd (AArch64: SMMLA, else SDOT): int8 products summed in int32
  const char* int8_dot_instruction = "none";  // which encoding: zmm (AVX512-VNNI) or ymm (AVX-VNNI); SMMLA or SDOT
  double bf16_dot_gflops = 0;                 // vdpbf16ps zmm (AVX512-BF16); AArch64: BFMMLA (FEAT_BF16)
  double amx_bf16_gflops = 0;                 // tdpbf16ps (AMX-BF16)
  double amx_int8_gops = 0;                   // tdpbssd (AMX-INT8)
};
UnitPeaks measure_unit_peaks(ThreadPool& pool, double seconds_each = 0.3);

// The peak of one of those units as measure_unit_peaks measures it (0 where
// the CPU lacks it): a benchmark re-measures the unit of the kernel it times
// right before it, as the machine's load drifts. Int16Madd is vpmaddubsw ymm,
// the int8 unit of the x86 kernels without VNNI.
enum class MatmulUnit;  // matmul.h
double measure_unit_peak(ThreadPool& pool, MatmulUnit unit, double seconds = 0.1);

// vpmaddubsw ymm + vpmaddwd ymm pairs (32 multiply-adds each, summed exactly
// in 32 bits): what the q8 kernel without VNNI needs per 32 multiply-adds,
// the limit it can reach on a CPU whose two instructions share ports. 0
// without AVX2.
double measure_maddubs_madd_peak_gops(ThreadPool& pool, double seconds = 0.1);

// One thread's vdpbf16ps rate over its FP32 FMA rate (flops each), measured
// in turn; 0 without AVX512-BF16. Tells whether bf16 dot products pay on this
// CPU: about 2 on Zen 4, 0.5 on Sapphire Rapids (issue 15's figures).
double measure_bf16_dot_vs_fma(double seconds_each = 0.04);

// Read bandwidth over a buffer of `bytes` (much larger than the caches), split
// across the pool, best of `passes`, each pass timing three read loops (plain
// adds; a shift and mask per load; that with a prefetch per 4 KB page: which
// reads most depends on the machine and its load). GB/s (1e9 bytes).
double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t(1) << 30, int passes = 5);

// A buffer of n floats to measure over, touched by the pool's threads, on
// the 2 MB pages the weights get (util/huge_pages.h): from 4 KB pages the
// limit reads lower than what decode streams (one Zen 5 thread: 28 against
// 35 GB/s), which would flatter decode's fraction of it.
std::shared_ptr<float> bandwidth_buffer(ThreadPool& pool, size_t n);

// The same over such a buffer, so the limit can be re-measured next to each
// benchmark on a machine whose load drifts.
double measure_read_bandwidth_gbs(ThreadPool& pool, const float* buf, size_t n, int passes);

// Name of the SIMD target chosen at run time (e.g. "AVX3", "AVX2").
const char* simd_target_name();

}  // namespace qvl
