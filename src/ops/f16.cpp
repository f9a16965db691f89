// IEEE half precision <-> f32, for the KV cache. The scalar functions are the
// specification; the bulk conversion's SIMD kernel gives the same bits.
#include <cmath>
#include <cstring>

#include "ops/ops.h"
#include "ops/quant.h"
#include "ops/simd_elementwise.h"

namespace qvl {

float f16_to_f32(uint16_t v) { return quant::f16_to_f32(v); }

uint16_t f32_to_f16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00 | static_cast<uint16_t>((abs >> 13) & 0x3ff);  // quiet NaN
  if (abs >= 0x477fe000u) return sign | 0x7bff;  // >= 65504 (and inf): the largest finite f16
  if (abs < 0x38800000u) {
    // Below 2^-14: an f16 subnormal, a multiple of 2^-24. The scaling is
    // exact; lrint rounds to nearest even (the default mode), and 1024 is the
    // encoding of the smallest normal.
    return sign | static_cast<uint16_t>(std::lrint(std::fabs(v) * 16777216.0f));
  }
  uint32_t m = abs - 0x38000000u;  // exponent rebiased from 127 to 15
  m += 0xfffu + ((m >> 13) & 1);   // round the 23-bit mantissa to 10 bits, ties to even
  return sign | static_cast<uint16_t>(m >> 13);
}

void f32_to_f16(const float* src, uint16_t* dst, int64_t n) { simd::f32_to_f16(src, dst, n); }
void f16_to_f32(const uint16_t* src, float* dst, int64_t n) { simd::f16_to_f32(src, dst, n); }

}  // namespace qvl
