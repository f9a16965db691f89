// Internal: Highway bf16 -> Q8/Q4 group quantizers (layout in quant.h),
// bit-identical to quant::quantize_rows_*_scalar for finite weights.
#pragma once

#include <cstdint>

namespace qvl::simd {

void quantize_rows_q8(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, float* scales);
void quantize_rows_q4(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, float* scales);

}  // namespace qvl::simd
