// dot_rows (dot_rows.h) with Highway: four independent accumulators per row
// (the FMA latency hidden), a masked load for the tail; and its scalar twin.
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_dot_rows.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include "ops/dot_rows.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void DotRows(const float* rows, int64_t n_rows, int64_t dim, const float* q, float* out) {
  const hn::ScalableTag<float> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* x = rows + r * dim;
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    int64_t i = 0;
    for (; i + 4 * N <= dim; i += 4 * N) {
      a0 = hn::MulAdd(hn::LoadU(d, x + i), hn::LoadU(d, q + i), a0);
      a1 = hn::MulAdd(hn::LoadU(d, x + i + N), hn::LoadU(d, q + i + N), a1);
      a2 = hn::MulAdd(hn::LoadU(d, x + i + 2 * N), hn::LoadU(d, q + i + 2 * N), a2);
      a3 = hn::MulAdd(hn::LoadU(d, x + i + 3 * N), hn::LoadU(d, q + i + 3 * N), a3);
    }
    for (; i + N <= dim; i += N) a0 = hn::MulAdd(hn::LoadU(d, x + i), hn::LoadU(d, q + i), a0);
    if (i < dim) {
      const auto m = hn::FirstN(d, static_cast<size_t>(dim - i));
      a1 = hn::MulAdd(hn::MaskedLoad(m, d, x + i), hn::MaskedLoad(m, d, q + i), a1);
    }
    out[r] = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qvl {
namespace simd {
HWY_EXPORT(DotRows);
}  // namespace simd

void dot_rows(const float* rows, int64_t n_rows, int64_t dim, const float* q, float* out) {
  HWY_DYNAMIC_DISPATCH(simd::DotRows)(rows, n_rows, dim, q, out);
}

namespace scalar {
void dot_rows(const float* rows, int64_t n_rows, int64_t dim, const float* q, float* out) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float s = 0;
    for (int64_t i = 0; i < dim; ++i) s += rows[r * dim + i] * q[i];
    out[r] = s;
  }
}
}  // namespace scalar

}  // namespace qvl
#endif
