// Internal: Highway bf16/f32 -> Q8/Q4 group quantizers (layout in quant.h),
// bit-identical to quant::quantize_rows_*_scalar for finite weights.
#pragma once

#include <cstdint>

#include "ops/quant.h"

namespace qvl::simd {

void quantize_rows_q8(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales);
void quantize_rows_q4(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales);
// The same from f32 weights (WeightMatrix::from_f32), bit-identical to the
// f32 overloads of quant::quantize_rows_*_scalar for finite weights.
void quantize_rows_q8(const float* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales);
void quantize_rows_q4(const float* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales);

// One activation row, bit-identical to quant::quantize_x_scalar for finite x.
void quantize_x(const float* x, int64_t k, const quant::XRow& out);

}  // namespace qvl::simd
