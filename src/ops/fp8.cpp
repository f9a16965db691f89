// FP8 E4M3 -> f32 (ops.h): a table of the 256 values, built once from the
// bit layout.
#include <array>
#include <cmath>
#include <limits>

#include "ops/ops.h"

namespace qvl {
namespace {

float decode_e4m3(uint8_t v) {
  const float sign = (v & 0x80) ? -1.0f : 1.0f;
  const int exponent = (v >> 3) & 0xf, mantissa = v & 0x7;
  if (e4m3_is_nan(v)) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: m/8 · 2^(1-7)
  return sign * std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
}

const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = decode_e4m3(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

}  // namespace

float e4m3_to_f32(uint8_t v) { return e4m3_table()[v]; }

int64_t e4m3_to_f32_scaled(const uint8_t* src, int64_t n, float scale, float* dst) {
  const float* table = e4m3_table().data();
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    nan |= e4m3_is_nan(src[i]);
    dst[i] = table[src[i]] * scale;
  }
  if (!nan) return -1;
  for (int64_t i = 0; i < n; ++i)
    if (e4m3_is_nan(src[i])) return i;
  return -1;
}

}  // namespace qvl
