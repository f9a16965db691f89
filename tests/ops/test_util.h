// Helpers shared by the ops tests: seeded random data, buffers placed at a
// chosen misalignment, error measures, and the checks every many-query
// attention kernel must pass.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "ops/thread_pool.h"

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

// A many-query kernel (called as kernel(q, k, v, out, p, pool), with f32
// or f16 K/V) on a causal prompt of p.nq queries, whole and cut into pieces
// of 1, 2, 15, 16, 1, 23, 32, ... queries (each after the ones before, as
// q_pos0 says; every other piece on one thread): the engine cuts prompts
// anywhere, down to single tokens, and every piece must give the bits of
// the same rows in one call.
template <class Kernel>
void expect_prefill_pieces_give_one_call(Kernel kernel, const AttentionParams& p, const std::vector<float>& q,
                                         const std::vector<float>& k, const std::vector<float>& v) {
  ThreadPool two(2), one(1);
  std::vector<float> whole(q.size(), 0.0f), pieces(q.size(), 0.0f);
  kernel(q.data(), k.data(), v.data(), whole.data(), p, two);
  const int64_t lengths[] = {1, 2, 15, 16, 1, 23, 32};
  for (int64_t i0 = 0, i = 0; i0 < p.nq; ++i) {
    AttentionParams piece = p;
    piece.nq = std::min(lengths[i % 7], p.nq - i0), piece.nkv = i0 + piece.nq, piece.q_pos0 = i0;
    kernel(q.data() + i0 * p.q_stride, k.data(), v.data(), pieces.data() + i0 * p.out_stride, piece,
           i % 2 ? one : two);
    i0 += piece.nq;
  }
  EXPECT_EQ(pieces, whole) << "head_dim " << p.head_dim;
}

// The kernel on f16 K/V gives the bits of the same values widened to f32.
template <class Kernel>
void expect_f16_kv_gives_widened_bits(Kernel kernel, const AttentionParams& p, const std::vector<float>& q,
                                      const std::vector<uint16_t>& k16, const std::vector<uint16_t>& v16,
                                      const std::vector<float>& kw, const std::vector<float>& vw,
                                      const std::string& what) {
  ThreadPool pool(2);
  std::vector<float> from16(q.size(), 0.0f), fromw(q.size(), 0.0f);
  kernel(q.data(), k16.data(), v16.data(), from16.data(), p, pool);
  kernel(q.data(), kw.data(), vw.data(), fromw.data(), p, pool);
  ASSERT_EQ(from16, fromw) << what;
}

}  // namespace qvl::testing

// The targets the ops library compiles (simd_config.h, first), so
// for_each_target forces only those: a target the kernels lack would run
// another one under its name.
#include "ops/simd_config.h"
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
