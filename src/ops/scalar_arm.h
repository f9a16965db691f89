// Scalar twins of the AArch64 kernels whose arithmetic is their own, not the
// x86 one (scalar.h holds the shared ones). Plain C++: they build and are
// tested on every architecture.
#pragma once

#include <cstdint>

#include "ops/matmul.h"

namespace qvl::scalar {

// BFDotAdd, the step of Arm's BFDOT and BFMMLA (FEAT_BF16 without FEAT_EBF16,
// i.e. FPCR.EBF = 0, as Linux runs user code; Arm ARM pseudocode BFDotAdd):
//   acc + x0·w0 + x1·w1, as round_odd(acc + round_odd(x0·w0 + x1·w1))
// with bf16 inputs (denormals read as zero), each product exact, both sums
// rounded to odd (the truncated value, its last bit set when inexact), and a
// result below the smallest normal (before rounding) flushed to a zero of its
// sign. Unlike x86's vdpbf16ps (scalar::matmul_bf16_fast), the pair is summed
// first and the rounding is not to nearest. For finite values in range.
float bfdot_add(float acc, uint16_t x0, uint16_t x1, uint16_t w0, uint16_t w1);

// The specification of MatmulPrecision::Fast on AArch64 (neon_gemm_bf16.h):
// y = round_bf16(x) · Wᵀ (+ bias) for BF16 W. Per output, acc = +0, then
// k's pairs in order (k padded with zeros to a multiple of 4, as BFMMLA
// takes 4 at a time), acc = bfdot_add(acc, x[2p], x[2p+1], w[2p], w[2p+1]);
// y = acc + bias (rounded to nearest). round_bf16 as scalar.h.
void matmul_bf16_fast_arm(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
                          int64_t ldy);

}  // namespace qvl::scalar
