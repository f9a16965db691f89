// Helpers shared by the ops tests: seeded random data, buffers placed at a
// chosen misalignment, and error measures.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/ops.h"

namespace qvl::testing {

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint16_t> random_bf16(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = f32_to_bf16(dist(rng));
  return v;
}

// A buffer whose data() starts `offset_floats` past a 64-byte boundary, so
// kernels see misaligned pointers.
template <typename T>
class Misaligned {
 public:
  Misaligned(const std::vector<T>& src, int offset) : storage_(src.size() + 64 / sizeof(T) + 16), offset_(0) {
    auto addr = reinterpret_cast<uintptr_t>(storage_.data());
    size_t to64 = ((64 - addr % 64) % 64) / sizeof(T);
    offset_ = to64 + static_cast<size_t>(offset);
    for (size_t i = 0; i < src.size(); ++i) storage_[offset_ + i] = src[i];
  }
  T* data() { return storage_.data() + offset_; }
  const T* data() const { return storage_.data() + offset_; }
  std::vector<T> copy(size_t n) const { return std::vector<T>(data(), data() + n); }

 private:
  std::vector<T> storage_;
  size_t offset_;
};

// max |a - b| / (|b| + floor)
inline double max_rel_err(const float* a, const float* b, int64_t n, double floor) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i)
    worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])) / (std::fabs(double(b[i])) + floor));
  return worst;
}

// ||a - b|| / ||b||
inline double rel_l2(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// An attention call's shape, with strides padded past the heads (3 floats
// on q and out, 5 on k/v) so no kernel can assume rows are packed.
struct AttentionShape {
  int64_t nq, nkv, qh, kvh, dh;
  bool causal;
  int64_t q_pos0;
};

inline AttentionParams attention_params(const AttentionShape& s, MatmulPrecision precision) {
  AttentionParams p;
  p.nq = s.nq, p.nkv = s.nkv, p.q_heads = s.qh, p.kv_heads = s.kvh, p.head_dim = s.dh;
  p.q_stride = p.out_stride = s.qh * s.dh + 3, p.kv_stride = s.kvh * s.dh + 5;
  p.scale = 1.0f / std::sqrt(static_cast<float>(s.dh)), p.causal = s.causal, p.q_pos0 = s.q_pos0;
  p.precision = precision;
  return p;
}

// The output's elements (strides skipped), query by query.
inline std::vector<float> attention_heads(const std::vector<float>& x, const AttentionParams& p) {
  std::vector<float> out;
  for (int64_t i = 0; i < p.nq; ++i)
    for (int64_t j = 0; j < p.q_heads * p.head_dim; ++j) out.push_back(x[static_cast<size_t>(i * p.out_stride + j)]);
  return out;
}

}  // namespace qvl::testing

#include <hwy/targets.h>

#include <functional>
#include <string>

namespace qvl::testing {

// Runs fn once per SIMD target this binary has and this CPU supports (e.g.
// AVX3, AVX2, EMU128), forcing the dispatch to it; fn gets the target name.
inline void for_each_target(const std::function<void(const std::string&)>& fn) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    fn(hwy::TargetName(target));
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace qvl::testing
