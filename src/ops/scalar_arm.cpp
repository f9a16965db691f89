// Scalar twins of the AArch64 kernels (scalar_arm.h).
#include "ops/scalar_arm.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "ops/scalar.h"
#include "util/error.h"

namespace qvl::scalar {
namespace {

constexpr float kMinNormal = 0x1p-126f;

uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// A value below the smallest normal as a zero of its sign (inputs and
// results of BFDotAdd alike).
float flush(float v) { return std::fabs(v) < kMinNormal ? std::copysign(0.0f, v) : v; }

// bf16 -> f32 with a denormal read as zero.
float bf16_daz(uint16_t b) { return flush(qvl::bf16_to_f32(b)); }

// a·b for two bf16 values: exact (8 + 8 significant bits), then flushed.
float mul(float a, float b) { return flush(static_cast<float>(static_cast<double>(a) * static_cast<double>(b))); }

// a + b rounded to odd, flushed. The error of the sum to nearest is exact
// (TwoSum), so the exact sum is s + e: when e != 0 its truncation toward zero
// is s, or the float next to s toward zero when |s + e| < |s|, and the last
// bit of that is set. A result below the smallest normal before rounding
// stays below it after (the largest denormal is odd), so it is flushed.
float add_round_odd(float a, float b) {
  const float s = a + b;
  if (!std::isfinite(s)) return s;
  const float bv = s - a;
  const float e = (a - (s - bv)) + (b - bv);
  if (e == 0.0f) return flush(s);
  uint32_t u = to_bits(s);
  if ((e < 0.0f) != (s < 0.0f)) --u;  // |exact| < |s|: one step toward zero (sign and magnitude)
  return flush(from_bits(u | 1u));
}

}  // namespace

float bfdot_add(float acc, uint16_t x0, uint16_t x1, uint16_t w0, uint16_t w1) {
  const float prod = add_round_odd(mul(bf16_daz(x0), bf16_daz(w0)), mul(bf16_daz(x1), bf16_daz(w1)));
  return add_round_odd(flush(acc), prod);
}

void matmul_bf16_fast_arm(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
                          int64_t ldy) {
  if (w.format() != WeightFormat::BF16)
    fail("matmul_bf16_fast_arm: weights are ", weight_format_name(w.format()), ", not bf16");
  const int64_t k = w.cols(), n = w.rows(), k4 = (k + 3) / 4 * 4;
  const uint16_t* wd = static_cast<const uint16_t*>(w.data());
  std::vector<uint16_t> xr(static_cast<size_t>(k4)), wr(static_cast<size_t>(k4));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < k4; ++c) xr[c] = c < k ? round_bf16(x[i * ldx + c]) : 0;
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t c = 0; c < k4; ++c) wr[c] = c < k ? wd[j * k + c] : 0;
      float acc = 0.0f;
      for (int64_t p = 0; p < k4 / 2; ++p) acc = bfdot_add(acc, xr[2 * p], xr[2 * p + 1], wr[2 * p], wr[2 * p + 1]);
      y[i * ldy + j] = acc + (bias ? bias[j] : 0.0f);
    }
  }
}

}  // namespace qvl::scalar
