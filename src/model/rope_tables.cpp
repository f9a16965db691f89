#include "model/rope_tables.h"

#include <cmath>

namespace qvl {
namespace {

// inv_freq as torch computes it in float32: 1 / base^(arange(0, dim, 2) / dim).
std::vector<float> inverse_frequencies(float base, int dim) {
  std::vector<float> f(dim / 2);
  for (int j = 0; j < dim / 2; ++j) {
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(dim);
    f[j] = 1.0f / std::pow(base, exponent);
  }
  return f;
}

// cos/sin of a float32 angle, correctly rounded to float.
inline void angle(float a, float* c, float* s) {
  *c = static_cast<float>(std::cos(static_cast<double>(a)));
  *s = static_cast<float>(std::sin(static_cast<double>(a)));
}

}  // namespace

TextRope::TextRope(const TextConfig& config)
    : inv_freq_(inverse_frequencies(static_cast<float>(config.rope_theta), config.head_dim)) {
  const int half = config.head_dim / 2;
  const std::vector<int>& s = config.mrope_section;  // 3 entries summing to half (io/model_config.cpp)
  axis_.assign(half, 0);
  for (int j = 0; j < half; ++j) {
    if (config.mrope_interleaved) {
      if (j % 3 == 1 && j < 3 * s[1]) axis_[j] = 1;
      if (j % 3 == 2 && j < 3 * s[2]) axis_[j] = 2;
    } else {
      axis_[j] = j < s[0] ? 0 : (j < s[0] + s[1] ? 1 : 2);
    }
  }
}

void TextRope::fill(const Pos3* pos, int64_t n, float* cos, float* sin) const {
  const int64_t half = this->half();
  for (int64_t i = 0; i < n; ++i) {
    const float p[3] = {static_cast<float>(pos[i].t), static_cast<float>(pos[i].h), static_cast<float>(pos[i].w)};
    for (int64_t j = 0; j < half; ++j) angle(inv_freq_[j] * p[axis_[j]], &cos[i * half + j], &sin[i * half + j]);
  }
}

VisionRope::VisionRope(int head_dim, float theta) : inv_freq_(inverse_frequencies(theta, head_dim / 2)) {}

void VisionRope::fill(const int32_t* rows, const int32_t* cols, int64_t n, float* cos, float* sin) const {
  const int64_t q = static_cast<int64_t>(inv_freq_.size()), half = 2 * q;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < q; ++j) {
      angle(inv_freq_[j] * static_cast<float>(rows[i]), &cos[i * half + j], &sin[i * half + j]);
      angle(inv_freq_[j] * static_cast<float>(cols[i]), &cos[i * half + q + j], &sin[i * half + q + j]);
    }
  }
}

}  // namespace qvl
