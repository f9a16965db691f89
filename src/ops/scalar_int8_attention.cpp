// Scalar twin of the int8 attention kernel (int8_attention.h, which states
// the numbers): the same roundings, integer dot products, base-2 exponential
// polynomial, sum orders and products, one query row at a time, so that the
// kernel's bits are the twin's in calls without a causal mask (P·V in
// integers) and only the f32 order within a block's bf16 P·V can differ in
// causal ones.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/int8_attention.h"
#include "ops/ops.h"
#include "ops/scalar.h"

namespace qvl::scalar {
namespace {

constexpr int64_t kBlock = 32;  // keys per softmax block
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// x·mul (where mul is not 1) less shift (where given) rounded to int8 with one
// scale: n[c] and the returned scale, all zero for a zero row.
float round_row_i8(const float* x, int64_t dh, float mul, const float* shift, int32_t* n) {
  std::vector<float> y(x, x + dh);
  float a = 0.0f;
  for (int64_t c = 0; c < dh; ++c) {
    if (mul != 1.0f) y[c] *= mul;
    if (shift) y[c] -= shift[c];
    a = std::max(a, std::fabs(y[c]));
  }
  if (!(a > 0.0f)) {
    std::fill(n, n + dh, 0);
    return 0.0f;
  }
  const float inv = 127.0f / a;
  for (int64_t c = 0; c < dh; ++c) n[c] = std::clamp(static_cast<int32_t>(std::nearbyint(y[c] * inv)), -127, 127);
  return a / 127.0f;
}

// 2^x for x <= 0 or -inf as the kernel takes it (int8_attention.h): 2^n
// applied by ldexp, exact or correctly rounded as vscalefps.
float exp2_poly(float x) {
  if (!(x > kNegInf)) return 0.0f;
  const float n = std::nearbyint(x), f = x - n;
  float p = int8dot::kExp2Poly[3];
  p = std::fma(p, f, int8dot::kExp2Poly[2]);
  p = std::fma(p, f, int8dot::kExp2Poly[1]);
  p = std::fma(p, f, int8dot::kExp2Poly[0]);
  p = std::fma(p, f, 1.0f);
  return std::ldexp(p, static_cast<int>(std::max(n, -1000.0f)));
}

// Σ of 16 lanes in bf16_dot_steps::reduce_rows16's order.
float sum16_as_reduce_rows16(const float* x) {
  float t[4];
  for (int k = 0; k < 4; ++k) t[k] = (x[k] + x[8 + k]) + (x[4 + k] + x[12 + k]);
  return (t[0] + t[2]) + (t[1] + t[3]);
}

float bf16_value(float x) { return qvl::bf16_to_f32(round_bf16(x)); }

// Each kv head's mean K (or V) row over the call's keys, [kv_heads][dh]: f32
// sums in key order, then divided by nkv (the kernel's mean_rows).
std::vector<float> channel_means(const float* x, const AttentionParams& p) {
  const int64_t dh = p.head_dim;
  std::vector<float> mean(static_cast<size_t>(p.kv_heads * dh), 0.0f);
  for (int64_t h = 0; h < p.kv_heads; ++h) {
    for (int64_t j = 0; j < p.nkv; ++j)
      for (int64_t c = 0; c < dh; ++c) mean[h * dh + c] += x[j * p.kv_stride + h * dh + c];
    for (int64_t c = 0; c < dh; ++c) mean[h * dh + c] /= static_cast<float>(p.nkv);
  }
  return mean;
}

}  // namespace

void attention_int8_fast(const float* q, const float* k, const float* v, float* out, const AttentionParams& p) {
  const int64_t dh = p.head_dim, group = p.q_heads / p.kv_heads;
  const float qscale = p.scale * 1.4426950408889634f;  // log2(e)
  // K smoothed (non-causal) and rounded, per kv head and key.
  const std::vector<float> mean =
      p.causal ? std::vector<float>(static_cast<size_t>(p.kv_heads * dh), 0.0f) : channel_means(k, p);
  std::vector<int32_t> kn(static_cast<size_t>(p.kv_heads * p.nkv * dh));
  std::vector<float> ks(static_cast<size_t>(p.kv_heads * p.nkv));
  for (int64_t h = 0; h < p.kv_heads; ++h)
    for (int64_t j = 0; j < p.nkv; ++j)
      ks[h * p.nkv + j] = round_row_i8(k + j * p.kv_stride + h * dh, dh, 1.0f, p.causal ? nullptr : &mean[h * dh],
                                       &kn[(h * p.nkv + j) * dh]);
  // Non-causal (with keys): V less its channel means, in int8 with one scale
  // a channel.
  const bool int8_values = !p.causal && p.nkv > 0;
  std::vector<float> v_mean, v_scale(static_cast<size_t>(p.kv_heads * dh), 0.0f);
  std::vector<int32_t> vn;
  if (int8_values) {
    v_mean = channel_means(v, p);
    vn.resize(static_cast<size_t>(p.kv_heads * p.nkv * dh));
    for (int64_t h = 0; h < p.kv_heads; ++h)
      for (int64_t c = 0; c < dh; ++c) {
        const float mu = v_mean[h * dh + c];
        float a = 0.0f;
        for (int64_t j = 0; j < p.nkv; ++j) a = std::max(a, std::fabs(v[j * p.kv_stride + h * dh + c] - mu));
        v_scale[h * dh + c] = a / (127.0f * 255.0f);
        const float inv = a > 0.0f ? 127.0f / a : 0.0f;
        for (int64_t j = 0; j < p.nkv; ++j)
          vn[(h * p.nkv + j) * dh + c] = std::clamp(
              static_cast<int32_t>(std::nearbyint((v[j * p.kv_stride + h * dh + c] - mu) * inv)), -127, 127);
      }
  }
  std::vector<int32_t> qn(static_cast<size_t>(dh));
  std::vector<float> o(static_cast<size_t>(dh)), block(static_cast<size_t>(dh));
  for (int64_t i = 0; i < p.nq; ++i) {
    const int64_t end = p.causal ? std::clamp<int64_t>(p.q_pos0 + i + 1, 0, p.nkv) : p.nkv;
    for (int64_t h = 0; h < p.q_heads; ++h) {
      const int64_t kvh = h / group;
      const float sq = round_row_i8(q + i * p.q_stride + h * dh, dh, qscale, nullptr, qn.data());
      float m = kNegInf, l = 0.0f;
      std::fill(o.begin(), o.end(), 0.0f);
      for (int64_t j0 = 0; j0 < end; j0 += kBlock) {
        float s[kBlock], w[kBlock], mx = kNegInf;
        for (int64_t t = 0; t < kBlock; ++t) {
          const int64_t j = j0 + t;
          s[t] = kNegInf;
          if (j < end) {
            const int32_t* kj = &kn[(kvh * p.nkv + j) * dh];
            int32_t dot = 0;
            for (int64_t c = 0; c < dh; ++c) dot += qn[c] * kj[c];
            s[t] = static_cast<float>(dot) * (sq * ks[kvh * p.nkv + j]);
          }
          mx = std::max(mx, s[t]);
        }
        if (int8_values) {  // P in u8 against the block's maximum, V in int8
          if (mx == kNegInf) continue;  // no key of this block seen
          const float m_new = std::max(m, mx), corr = exp2_poly(m - m_new), bs = exp2_poly(mx - m_new);
          int32_t codes[kBlock];
          for (int64_t t = 0; t < kBlock; ++t) {
            w[t] = exp2_poly(s[t] - mx);
            codes[t] = static_cast<int32_t>(std::nearbyint(w[t] * 255.0f));
          }
          if (corr != 1.0f)
            for (float& x : o) x *= corr;
          float lanes[16];
          for (int t = 0; t < 16; ++t) lanes[t] = w[t] + w[16 + t];
          l = std::fma(l, corr, bs * sum16_as_reduce_rows16(lanes));
          m = m_new;
          for (int64_t c = 0; c < dh; ++c) {
            int32_t dot = 0;
            for (int64_t t = 0; t < kBlock && j0 + t < end; ++t) dot += codes[t] * vn[(kvh * p.nkv + j0 + t) * dh + c];
            o[c] = std::fma(static_cast<float>(dot), bs, o[c]);
          }
          continue;
        }
        const float m_new = std::max(m, mx);
        if (m_new == kNegInf) continue;  // nothing seen yet: weights 0
        const float corr = exp2_poly(m - m_new);
        for (int64_t t = 0; t < kBlock; ++t) w[t] = exp2_poly(s[t] - m_new);
        if (corr != 1.0f)
          for (float& x : o) x *= corr;
        float lanes[16];
        for (int t = 0; t < 16; ++t) lanes[t] = w[t] + w[16 + t];
        l = std::fma(l, corr, sum16_as_reduce_rows16(lanes));
        m = m_new;
        // P·V from zero, pairs of keys as vdpbf16ps takes them (odd first).
        std::fill(block.begin(), block.end(), 0.0f);
        for (int64_t t = 0; t < kBlock; t += 2)
          for (int t2 : {1, 0}) {
            const int64_t j = j0 + t + t2;
            if (j >= p.nkv) continue;  // zero-padded keys: exact zeros
            const float pw = bf16_value(w[t + t2]);
            const float* vj = v + j * p.kv_stride + kvh * dh;
            for (int64_t c = 0; c < dh; ++c) block[c] += pw * bf16_value(vj[c]);
          }
        for (int64_t c = 0; c < dh; ++c) o[c] += block[c];
      }
      const float inv = l > 0 ? 1.0f / l : 0.0f;
      for (int64_t c = 0; c < dh; ++c)
        out[i * p.out_stride + h * dh + c] =
            int8_values ? std::fma(o[c] * inv, v_scale[kvh * dh + c], v_mean[kvh * dh + c]) : o[c] * inv;
    }
  }
}

}  // namespace qvl::scalar
