// Measures this machine's limits, so benchmarks can report each kernel as a
// fraction of what the hardware does in the same run (the machine may be
// shared, so absolute figures drift).
#pragma once

#include <cstddef>

#include "ops/thread_pool.h"

namespace qvl {

// FP32 FMA throughput of pool.size() threads, each running an unrolled loop of
// independent FMAs on the widest SIMD target. GFLOP/s (an FMA counts 2).
double measure_fma_peak_gflops(ThreadPool& pool, double seconds = 0.3);

// Read bandwidth over a buffer of `bytes` (much larger than the caches), split
// across the pool, best of `passes`. GB/s (1e9 bytes).
double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes = size_t(1) << 30, int passes = 5);

// The same over a caller-owned buffer of n floats (already touched), so the
// limit can be re-measured next to each benchmark on a machine whose load drifts.
double measure_read_bandwidth_gbs(ThreadPool& pool, const float* buf, size_t n, int passes);

// Name of the SIMD target chosen at run time (e.g. "AVX3", "AVX2").
const char* simd_target_name();

}  // namespace qvl
