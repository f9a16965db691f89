// Internal: the two passes of a softmax, per Highway target, for the
// translation units in ops/ that need them (attention's online softmax,
// softmax and log_sum_exp). Included after hwy/foreach_target.h, so it is
// compiled once per target like the file that includes it; the guard below
// is Highway's per-target toggle, not a plain include guard.
#if defined(QVL_OPS_SIMD_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef QVL_OPS_SIMD_SOFTMAX_INL_H_
#undef QVL_OPS_SIMD_SOFTMAX_INL_H_
#else
#define QVL_OPS_SIMD_SOFTMAX_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace simd {
namespace HWY_NAMESPACE {

// The largest of x[0..n) (-inf for n = 0).
HWY_INLINE float MaxOf(const float* x, int64_t n) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto mx = hn::Set(d, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + N <= n; i += N) mx = hn::Max(mx, hn::LoadU(d, x + i));
  float m = hn::GetLane(hn::MaxOfLanes(d, mx));
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// x = exp(x - m) in place; returns Σ exp (lanes first, then the tail).
HWY_INLINE float ExpSubSum(float* x, int64_t n, float m) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto vm = hn::Set(d, m);
  auto sum = hn::Zero(d);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vm));
    hn::StoreU(e, d, x + i);
    sum = hn::Add(sum, e);
  }
  float s = hn::GetLane(hn::SumOfLanes(d, sum));
  for (; i < n; ++i) s += (x[i] = std::exp(x[i] - m));
  return s;
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#endif  // per-target guard
