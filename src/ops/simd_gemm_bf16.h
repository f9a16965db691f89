// Internal: the fast bf16 GEMM of MatmulPrecision::Fast (matmul.h), reached
// through matmul() (matmul.cpp) for BF16 weights and m > kSmallM.
#pragma once

#include "ops/simd_matmul.h"

namespace qvl::simd {

// Whether this CPU has AVX512-BF16 (x86-64) or FEAT_BF16 (AArch64: BFMMLA,
// neon_gemm_bf16.h, whose twin is scalar::matmul_bf16_fast_arm).
bool gemm_bf16_supported();

// y = round_bf16(x) · Wᵀ (+ bias) for a BF16 matrix, as scalar::matmul_bf16_fast
// specifies. Requires gemm_bf16_supported().
void gemm_bf16(const MatmulArgs& a, ThreadPool& pool);

}  // namespace qvl::simd
