// Internal: the AArch64 unit-peak loops (neon_peaks.cpp) that unit_peaks.cpp
// times for the int8 and bf16 units (machine_limits.h, UnitPeaks): register-only,
// 12 independent chains, each compiled for its instruction alone and to be
// called only where cpu_features() says the CPU has it. Each returns the
// operations it did (a multiply-add counts 2); `seed` keeps it from folding.
#pragma once

#include <cstdint>

namespace qvl::neon {

double sdot_loop(int64_t iterations, int seed);    // SDOT: 4 lanes × 4 int8 products = 16 multiply-adds
double smmla_loop(int64_t iterations, int seed);   // SMMLA: 2×2 lanes × 8 int8 products = 32
double bfmmla_loop(int64_t iterations, int seed);  // BFMMLA: 2×2 lanes × 4 bf16 products = 16

}  // namespace qvl::neon
