// Scalar reference twins (see scalar.h).
#include "ops/scalar.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/quant.h"
#include "util/error.h"

namespace qvl::scalar {

void bf16_to_f32(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = qvl::bf16_to_f32(src[i]);
}

void rms_norm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    float ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    float inv = 1.0f / std::sqrt(ss / static_cast<float>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) o[i] = xr[i] * inv * weight[i];
  }
}

void layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
                float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    float sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += xr[i];
    float mean = sum / static_cast<float>(dim);
    float var = 0;  // two passes: E[(x-mean)²] does not cancel like E[x²]-mean²
    for (int64_t i = 0; i < dim; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    float inv = 1.0f / std::sqrt(var / static_cast<float>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) o[i] = (xr[i] - mean) * inv * gamma[i] + beta[i];
  }
}

// 0.5·x·(1 + tanh(u)) = x / (1 + exp(-2u)): no cancellation for negative x.
void gelu_tanh(float* x, int64_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float u = k * (v + 0.044715f * v * v * v);
    x[i] = v / (1.0f + std::exp(std::min(-2.0f * u, 88.0f)));
  }
}

// 0.5·x·(1 + erf(x/√2)) = 0.5·x·erfc(-x/√2): accurate for negative x too.
void gelu_erf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * std::erfc(-x[i] * 0.7071067811865476f);
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = gate[i];
    out[i] = g / (1.0f + std::exp(std::min(-g, 88.0f))) * up[i];
  }
}

void add(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

double log_sum_exp(const float* x, int64_t n, float scale) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  if (mx == -std::numeric_limits<float>::infinity()) return mx;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(scale) * (x[i] - mx));
  return static_cast<double>(scale) * mx + std::log(sum);
}

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best] || (std::isnan(x[best]) && !std::isnan(x[i]))) best = i;
  return best;
}

void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
          const float* sin) {
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* xh = x + t * stride + h * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        float a = xh[i], b = xh[i + half];
        xh[i] = a * c[i] - b * s[i];
        xh[i + half] = b * c[i] + a * s[i];
      }
    }
  }
}

namespace {

// Integer code of a quantized weight (the stored value before the scale).
int code_at(const quant::View& v, int64_t r, int64_t c) {
  const int64_t g = c / quant::kGroup, j = c % quant::kGroup;
  if (v.q8) return static_cast<int8_t>(*v.byte(r, g, j));
  const uint8_t byte = *v.byte(r, g, j % (quant::kGroup / 2));
  return (j < quant::kGroup / 2 ? (byte & 15) : (byte >> 4)) - 8;
}

}  // namespace

float weight_at(const WeightMatrix& w, int64_t r, int64_t c) {
  switch (w.format()) {
    case WeightFormat::F32: return static_cast<const float*>(w.data())[r * w.cols() + c];
    case WeightFormat::BF16: return qvl::bf16_to_f32(static_cast<const uint16_t*>(w.data())[r * w.cols() + c]);
    case WeightFormat::Q8:
    case WeightFormat::Q4: {
      quant::View v = quant::view(w);
      return quant::f16_to_f32(v.scale(r, c / quant::kGroup)) * static_cast<float>(code_at(v, r, c));
    }
  }
  return 0;
}

void matmul_rows(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
                 int64_t ldy, int64_t row_begin, int64_t row_end) {
  const int64_t k = w.cols();
  if (w.format() == WeightFormat::Q8 || w.format() == WeightFormat::Q4) {
    // x rounded to 8 bits per group (quant::quantize_x_scalar); per group an
    // exact integer dot product, times both scales, summed in f32 with one
    // rounding per group (fused, as the SIMD kernels' FMA does; spelled out so
    // no compiler setting of -ffp-contract changes it).
    const quant::View v = quant::view(w);
    std::vector<int8_t> codes(static_cast<size_t>(v.groups * quant::kGroup));
    std::vector<float> scales(static_cast<size_t>(v.groups));
    std::vector<int32_t> sums(static_cast<size_t>(v.groups));
    for (int64_t i = 0; i < m; ++i) {
      quant::quantize_x_scalar(x + i * ldx, k, {codes.data(), scales.data(), sums.data()});
      for (int64_t n = row_begin; n < row_end; ++n) {
        float acc = 0;
        for (int64_t g = 0; g < v.groups; ++g) {
          int32_t dot = 0;
          for (int64_t j = 0; j < quant::kGroup; ++j)
            dot += code_at(v, n, g * quant::kGroup + j) * codes[static_cast<size_t>(g * quant::kGroup + j)];
          acc = std::fma(static_cast<float>(dot), quant::f16_to_f32(v.scale(n, g)) * scales[static_cast<size_t>(g)], acc);
        }
        y[i * ldy + n] = acc + (bias ? bias[n] : 0.0f);
      }
    }
    return;
  }
  for (int64_t i = 0; i < m; ++i) {
    const float* xi = x + i * ldx;
    for (int64_t n = row_begin; n < row_end; ++n) {
      float acc = 0;
      for (int64_t c = 0; c < k; ++c) acc += xi[c] * weight_at(w, n, c);
      y[i * ldy + n] = acc + (bias ? bias[n] : 0.0f);
    }
  }
}

void matmul(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
            int64_t ldy) {
  matmul_rows(x, m, ldx, w, bias, y, ldy, 0, w.rows());
}

uint16_t round_bf16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const uint32_t mag = bits & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  if (mag < 0x00800000u) return static_cast<uint16_t>((bits >> 16) & 0x8000);  // zero, denormal
  if (mag == 0x7f800000u) return static_cast<uint16_t>(bits >> 16);             // infinity
  bits += 0x7fffu + ((bits >> 16) & 1);  // round to nearest, ties to even
  return static_cast<uint16_t>(bits >> 16);
}

void matmul_bf16_fast(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
                      int64_t ldy) {
  if (w.format() != WeightFormat::BF16) fail("matmul_bf16_fast: weights are ", weight_format_name(w.format()), ", not bf16");
  const int64_t k = w.cols(), n = w.rows(), kp = (k + 1) / 2;
  const uint16_t* wd = static_cast<const uint16_t*>(w.data());
  auto daz = [](uint16_t b) { return (b & 0x7f80) == 0 ? static_cast<uint16_t>(b & 0x8000) : b; };
  std::vector<float> xr(static_cast<size_t>(2 * kp));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t c = 0; c < 2 * kp; ++c) xr[c] = c < k ? qvl::bf16_to_f32(round_bf16(x[i * ldx + c])) : 0.0f;
    for (int64_t j = 0; j < n; ++j) {
      const uint16_t* wr = wd + j * k;
      float acc = 0;
      for (int64_t p = 0; p < kp; ++p) {
        const float w0 = qvl::bf16_to_f32(daz(wr[2 * p]));
        const float w1 = 2 * p + 1 < k ? qvl::bf16_to_f32(daz(wr[2 * p + 1])) : 0.0f;
        acc += xr[2 * p + 1] * w1;
        acc += xr[2 * p] * w0;
      }
      y[i * ldy + j] = acc + (bias ? bias[j] : 0.0f);
    }
  }
}

void attention_row(const float* q, const float* k, const float* v, float* out, int64_t kv_begin, int64_t kv_end,
                   int64_t head_dim, int64_t kv_stride, float scale) {
  // Online softmax (Milakov & Gimelshein 2018): running max m, running sum l.
  float m = -std::numeric_limits<float>::infinity(), l = 0;
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0;
  for (int64_t j = kv_begin; j < kv_end; ++j) {
    const float* kj = k + j * kv_stride;
    float s = 0;
    for (int64_t d = 0; d < head_dim; ++d) s += q[d] * kj[d];
    s *= scale;
    float m_new = std::max(m, s);
    float correction = std::exp(m - m_new), p = std::exp(s - m_new);
    l = l * correction + p;
    const float* vj = v + j * kv_stride;
    for (int64_t d = 0; d < head_dim; ++d) out[d] = out[d] * correction + p * vj[d];
    m = m_new;
  }
  float inv = l > 0 ? 1.0f / l : 0.0f;
  for (int64_t d = 0; d < head_dim; ++d) out[d] *= inv;
}

void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p) {
  const int64_t group = p.q_heads / p.kv_heads;
  for (int64_t i = 0; i < p.nq; ++i) {
    int64_t end = p.causal ? std::min(p.nkv, p.q_pos0 + i + 1) : p.nkv;
    for (int64_t h = 0; h < p.q_heads; ++h) {
      int64_t kvh = h / group;
      attention_row(q + i * p.q_stride + h * p.head_dim, k + kvh * p.head_dim, v + kvh * p.head_dim,
                    out + i * p.out_stride + h * p.head_dim, 0, end, p.head_dim, p.kv_stride, p.scale);
    }
  }
}

}  // namespace qvl::scalar
