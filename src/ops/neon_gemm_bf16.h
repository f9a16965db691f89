// Internal: the fast bf16 GEMM of MatmulPrecision::Fast on AArch64 with
// FEAT_BF16 (neon_gemm_bf16.cpp), reached through simd::gemm_bf16
// (simd_gemm_bf16.h) as the AVX512-BF16 kernel is on x86. Its arithmetic is
// Arm's (BFDotAdd: each pair summed, then added, rounding to odd), so its
// twin is scalar::matmul_bf16_fast_arm (scalar_arm.h), not the x86 one.
#pragma once

#include "ops/simd_matmul.h"

namespace qvl::neon {

//   Bfmmla: BFMMLA, a 2x4 by 4x2 bf16 product into 2x2 f32 lanes (two x
//           rows by two weight rows, 4 of k): 16 multiply-adds an instruction.
//   Bfdot:  BFDOT by element, one pair of k into 4 f32 lanes (4 weight rows,
//           one x row): 8 multiply-adds an instruction.
// Both add each output's pairs in k's order, so both give the twin's bits.
enum class Bf16Kernel { None, Bfdot, Bfmmla };

// Whether `k` can run here (cpu_features().arm_bf16; FEAT_BF16 has both).
bool bf16_kernel_available(Bf16Kernel k);
// The kernel gemm_bf16 runs: Bfmmla where the CPU has BF16, else None.
Bf16Kernel bf16_kernel();
// "BFMMLA", "BFDOT" or "none".
const char* bf16_kernel_name(Bf16Kernel k);

// y = round_bf16(x) · Wᵀ (+ bias) for BF16 weights, as
// scalar::matmul_bf16_fast_arm specifies, with kernel `k` (available).
void gemm_bf16(Bf16Kernel k, const simd::MatmulArgs& a, ThreadPool& pool);

}  // namespace qvl::neon
