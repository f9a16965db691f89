// Internal: the AArch64 block kernels of the q8/q4 matmul (neon_matmul_quant.cpp),
// called by simd_matmul_quant.cpp in place of its x86 and portable block kernels
// on the NEON target. Every other part of the product (rounding x, the work split,
// the GEMM's tiles and chunks) is the one all CPUs share.
//
// Arithmetic, for every kernel and the scalar twin (scalar::matmul_rows): per x
// row, output row and group of 32, the exact integer dot product of the weight
// codes and x's codes, converted to f32 (exact: |dot| <= 32·127·127 < 2^24) and
// fused into the row's f32 accumulator, acc = fma(dot, d_w·d_x, acc), groups in
// order from acc = 0; then y = acc + bias. Only the way the integer sums are
// formed differs between kernels, and integer sums are exact, so every kernel
// gives the twin's bits.
#pragma once

#include <cstdint>

#include "ops/quant.h"

namespace qvl::neon {

// Which instruction forms the integer sums.
//   Sdot:  SDOT (FEAT_DotProd): 4 byte products per int32 lane; a 16-byte
//          vector of weights holds 4 bytes of 4 rows as stored (quant.h), so
//          lane r is row r, x's 4 bytes broadcast (the by-element form).
//   Smmla: SMMLA (FEAT_I8MM): a 2x8 by 8x2 int8 product into 2x2 int32 lanes,
//          two weight rows by two x rows; twice SDOT's products per
//          instruction where the x rows come in pairs.
enum class Int8Kernel { None, Sdot, Smmla };

// The kernel for m rows of x on this CPU: Smmla with I8MM and m >= 2 (one row
// would fill half of every product with zeros), else Sdot with the dot
// product; None without it (pre-Armv8.2 cores, and every other architecture).
Int8Kernel int8_kernel(int64_t m);
// Whether `k` can run here (cpu_features()).
bool int8_kernel_available(Int8Kernel k);
// "SDOT", "SMMLA" (what matmul_kernel() reports), or "none".
const char* int8_kernel_name(Int8Kernel k);

// x rounded for the integer products (quant::XRow per row): codes of row i,
// group g at codes + i·row_stride + g·group_stride; d_x and corr at
// [i·srow + g·sgroup]. corr = -8·Σ codes for q4 weights (stored as q + 8);
// the kernels read q8 codes as signed and do not use it.
struct QuantX {
  const int8_t* codes;
  const float* scales;
  const int32_t* corrs;
  int64_t row_stride, group_stride;  // bytes
  int64_t srow, sgroup;              // elements
};

// Weight blocks [b0, b1) of v (16 rows each, quant.h) against m rows of x,
// 1 <= m <= 8: y[i·ldy + r] = row r's product with x row i (+ bias[r]) for the
// rows r < n of those blocks. Requires int8_kernel_available(k).
void quant_range(Int8Kernel k, int64_t m, const quant::View& v, const QuantX& x, int64_t b0, int64_t b1, int64_t n,
                 const float* bias, float* y, int64_t ldy);

}  // namespace qvl::neon
