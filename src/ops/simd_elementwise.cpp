// Highway element-wise kernels (see simd_elementwise.h). Whole vectors in the
// body, a partial vector (LoadN/StoreN-style masked copy) for the tail.
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_elementwise.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "ops/simd_softmax-inl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/ops.h"
#include "ops/simd_elementwise.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Applies f to every vector of x[0..n) → out; the tail goes through a padded
// stack buffer so f always sees whole vectors.
template <class F>
HWY_INLINE void Map1(const float* x, float* out, int64_t n, const F& f) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(f(d, hn::LoadU(d, x + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
    std::memset(buf, 0, sizeof(buf));
    std::memcpy(buf, x + i, sizeof(float) * (n - i));
    hn::Store(f(d, hn::Load(d, buf)), d, buf);
    std::memcpy(out + i, buf, sizeof(float) * (n - i));
  }
}

template <class F>
HWY_INLINE void Map2(const float* a, const float* b, float* out, int64_t n, const F& f) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(f(d, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float ba[HWY_MAX_BYTES / sizeof(float)], bb[HWY_MAX_BYTES / sizeof(float)];
    std::memset(ba, 0, sizeof(ba));
    std::memset(bb, 0, sizeof(bb));
    std::memcpy(ba, a + i, sizeof(float) * (n - i));
    std::memcpy(bb, b + i, sizeof(float) * (n - i));
    hn::Store(f(d, hn::Load(d, ba), hn::Load(d, bb)), d, ba);
    std::memcpy(out + i, ba, sizeof(float) * (n - i));
  }
}

float SumSquares(const float* x, int64_t n) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  VF s0 = hn::Zero(d), s1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    VF a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + N);
    s0 = hn::MulAdd(a, a, s0);
    s1 = hn::MulAdd(b, b, s1);
  }
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) s += x[i] * x[i];
  return s;
}

float Sum(const float* x, int64_t n, float shift) {  // Σ (x - shift)
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const VF vs = hn::Set(d, shift);
  VF s0 = hn::Zero(d);
  int64_t i = 0;
  for (; i + N <= n; i += N) s0 = hn::Add(s0, hn::Sub(hn::LoadU(d, x + i), vs));
  float s = hn::GetLane(hn::SumOfLanes(d, s0));
  for (; i < n; ++i) s += x[i] - shift;
  return s;
}

float SumSqDev(const float* x, int64_t n, float mean) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const VF vm = hn::Set(d, mean);
  VF s0 = hn::Zero(d);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    VF dv = hn::Sub(hn::LoadU(d, x + i), vm);
    s0 = hn::MulAdd(dv, dv, s0);
  }
  float s = hn::GetLane(hn::SumOfLanes(d, s0));
  for (; i < n; ++i) s += (x[i] - mean) * (x[i] - mean);
  return s;
}

void Bf16ToF32(const uint16_t* src, float* dst, int64_t n) {
  const DF d;
  const hn::Rebind<uint16_t, DF> du16;
  const hn::Rebind<uint32_t, DF> du32;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, src + i)))), d, dst + i);
  for (; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(src[i]) << 16;
    std::memcpy(dst + i, &bits, 4);
  }
}

void RmsNorm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    const float inv = 1.0f / std::sqrt(SumSquares(xr, dim) / static_cast<float>(dim) + eps);
    Map2(xr, weight, out + r * dim, dim, [inv](DF d, VF a, VF w) { return hn::Mul(hn::Mul(a, hn::Set(d, inv)), w); });
  }
}

void LayerNorm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
               float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* o = out + r * dim;
    const float mean = Sum(xr, dim, 0.0f) / static_cast<float>(dim);
    const float inv = 1.0f / std::sqrt(SumSqDev(xr, dim, mean) / static_cast<float>(dim) + eps);
    // (x - mean)·inv·gamma, then + beta
    Map2(xr, gamma, o, dim, [mean, inv](DF d, VF a, VF g) {
      return hn::Mul(hn::Mul(hn::Sub(a, hn::Set(d, mean)), hn::Set(d, inv)), g);
    });
    Map2(o, beta, o, dim, [](DF, VF a, VF b) { return hn::Add(a, b); });
  }
}

// x / (1 + exp(-2u)), u = √(2/π)(x + 0.044715x³); the exponent is capped
// where exp overflows (the result is then -0 to within f32 anyway).
void GeluTanh(float* x, int64_t n) {
  Map1(x, x, n, [](DF d, VF v) {
    const VF k = hn::Set(d, -2.0f * 0.7978845608028654f);
    VF v3 = hn::Mul(hn::Mul(v, v), v);
    VF arg = hn::Mul(k, hn::MulAdd(hn::Set(d, 0.044715f), v3, v));
    VF e = hn::Exp(d, hn::Min(arg, hn::Set(d, 88.0f)));
    return hn::Div(v, hn::Add(hn::Set(d, 1.0f), e));
  });
}

// gelu(x) = 0.5·x·erfc(-x/√2). erfc(z), z >= 0, from the Chebyshev fit of
// Numerical Recipes (Press et al., 2nd ed., §6.2, "erfcc"): fractional error
// < 1.2e-7 for all z; erfc(-z) = 2 - erfc(z).
void GeluErf(float* x, int64_t n) {
  Map1(x, x, n, [](DF d, VF v) {
    VF z = hn::Mul(hn::Abs(v), hn::Set(d, 0.7071067811865476f));
    VF t = hn::Div(hn::Set(d, 1.0f), hn::MulAdd(hn::Set(d, 0.5f), z, hn::Set(d, 1.0f)));
    VF p = hn::Set(d, 0.17087277f);
    p = hn::MulAdd(p, t, hn::Set(d, -0.82215223f));
    p = hn::MulAdd(p, t, hn::Set(d, 1.48851587f));
    p = hn::MulAdd(p, t, hn::Set(d, -1.13520398f));
    p = hn::MulAdd(p, t, hn::Set(d, 0.27886807f));
    p = hn::MulAdd(p, t, hn::Set(d, -0.18628806f));
    p = hn::MulAdd(p, t, hn::Set(d, 0.09678418f));
    p = hn::MulAdd(p, t, hn::Set(d, 0.37409196f));
    p = hn::MulAdd(p, t, hn::Set(d, 1.00002368f));
    p = hn::MulAdd(p, t, hn::Set(d, -1.26551223f));
    VF erfc = hn::Mul(t, hn::Exp(d, hn::Sub(p, hn::Mul(z, z))));
    VF phi2 = hn::IfThenElse(hn::Lt(v, hn::Zero(d)), erfc, hn::Sub(hn::Set(d, 2.0f), erfc));  // erfc(-x/√2)
    return hn::Mul(hn::Mul(hn::Set(d, 0.5f), v), phi2);
  });
}

void SiluMul(const float* gate, const float* up, float* out, int64_t n) {
  Map2(gate, up, out, n, [](DF d, VF g, VF u) {
    VF e = hn::Exp(d, hn::Min(hn::Neg(g), hn::Set(d, 88.0f)));
    return hn::Mul(hn::Div(g, hn::Add(hn::Set(d, 1.0f), e)), u);
  });
}

void AddKernel(const float* a, const float* b, float* out, int64_t n) {
  Map2(a, b, out, n, [](DF, VF x, VF y) { return hn::Add(x, y); });
}

void Softmax(float* x, int64_t n) {
  if (n <= 0) return;
  const float inv = 1.0f / ExpSubSum(x, n, MaxOf(x, n));
  Map1(x, x, n, [inv](DF dd, VF v) { return hn::Mul(v, hn::Set(dd, inv)); });
}

// Blocks of 1024 sum their exps in f32 lanes (64 terms a lane), and the
// blocks add in double, so a 152k vocabulary loses no more than a short f32
// sum does; Highway's Exp is within a few ulp of exp.
double LogSumExp(const float* x, int64_t n, float scale) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const float m = MaxOf(x, n);
  if (m == kNegInf) return m;
  const VF vm = hn::Set(d, m), vs = hn::Set(d, scale), lowest = hn::Set(d, kNegInf);
  constexpr int64_t kBlock = 1024;  // a multiple of N: only the last block has a tail
  double sum = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t end = std::min(n, b + kBlock);
    VF part = hn::Zero(d);
    int64_t i = b;
    for (; i + N <= end; i += N) {
      const VF v = hn::LoadU(d, x + i);
      // -inf (a masked token) adds exactly 0, not Exp's clamped tail.
      part = hn::Add(part, hn::IfThenZeroElse(hn::Eq(v, lowest), hn::Exp(d, hn::Mul(hn::Sub(v, vm), vs))));
    }
    sum += hn::GetLane(hn::SumOfLanes(d, part));
    for (; i < end; ++i) sum += std::exp(static_cast<double>(scale) * (x[i] - m));
  }
  return static_cast<double>(scale) * m + std::log(sum);
}

// Two passes: the largest value (lanes, then across), then the first index
// holding it. A scalar std::max_element took 82 us over a 152k vocabulary
// on a Zen 5 VM, 0.5 % of a q4 decode step.
int64_t Argmax(const float* x, int64_t n) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // NaN never wins a comparison: masked out before the max.
  VF mx = hn::Set(d, kNegInf);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const VF v = hn::LoadU(d, x + i);
    mx = hn::Max(mx, hn::IfThenElse(hn::Eq(v, v), v, mx));
  }
  float m = hn::GetLane(hn::MaxOfLanes(d, mx));
  for (; i < n; ++i)
    if (x[i] > m) m = x[i];
  const VF vm = hn::Set(d, m);
  for (i = 0; i + N <= n; i += N) {
    const intptr_t lane = hn::FindFirstTrue(d, hn::Eq(hn::LoadU(d, x + i), vm));
    if (lane >= 0) return i + lane;
  }
  for (; i < n; ++i)
    if (x[i] == m) return i;
  return 0;  // all NaN
}

void Rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
          const float* sin) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t half = head_dim / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* c = cos + t * half;
    const float* s = sin + t * half;
    for (int64_t h = 0; h < heads; ++h) {
      float* a = x + t * stride + h * head_dim;
      float* b = a + half;
      int64_t i = 0;
      for (; i + N <= half; i += N) {
        VF va = hn::LoadU(d, a + i), vb = hn::LoadU(d, b + i), vc = hn::LoadU(d, c + i), vs = hn::LoadU(d, s + i);
        hn::StoreU(hn::Sub(hn::Mul(va, vc), hn::Mul(vb, vs)), d, a + i);
        hn::StoreU(hn::Add(hn::Mul(vb, vc), hn::Mul(va, vs)), d, b + i);
      }
      for (; i < half; ++i) {
        float va = a[i], vb = b[i];
        a[i] = va * c[i] - vb * s[i];
        b[i] = vb * c[i] + va * s[i];
      }
    }
  }
}

// f32 -> f16 as ops.h specifies (round to nearest even, saturating at
// ±65504, NaN kept). x86 converts with F16C (vcvtps2ph rounds to nearest even
// in the default MXCSR mode); Highway's portable DemoteTo truncates, so other
// targets use the scalar specification.
void F32ToF16(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR && !defined(HWY_DISABLE_F16C)
  const DF d;
  const hn::Rebind<hwy::float16_t, DF> d16;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const VF hi = hn::Set(d, 65504.0f), lo = hn::Set(d, -65504.0f);
  for (; i + N <= n; i += N) {
    const VF v = hn::LoadU(d, src + i);
    const VF c = hn::IfThenElse(hn::IsNaN(v), v, hn::Min(hn::Max(v, lo), hi));
    hn::StoreU(hn::DemoteTo(d16, c), d16, reinterpret_cast<hwy::float16_t*>(dst + i));
  }
#endif
  for (; i < n; ++i) dst[i] = qvl::f32_to_f16(src[i]);
}

// f16 -> f32 is exact on every target.
void F16ToF32(const uint16_t* src, float* dst, int64_t n) {
  const DF d;
  const hn::Rebind<hwy::float16_t, DF> d16;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(hn::PromoteTo(d, hn::LoadU(d16, reinterpret_cast<const hwy::float16_t*>(src + i))), d, dst + i);
  for (; i < n; ++i) dst[i] = qvl::f16_to_f32(src[i]);
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qvl::simd {

HWY_EXPORT(Bf16ToF32);
HWY_EXPORT(RmsNorm);
HWY_EXPORT(LayerNorm);
HWY_EXPORT(GeluTanh);
HWY_EXPORT(GeluErf);
HWY_EXPORT(SiluMul);
HWY_EXPORT(AddKernel);
HWY_EXPORT(Softmax);
HWY_EXPORT(LogSumExp);
HWY_EXPORT(Argmax);
HWY_EXPORT(Rope);
HWY_EXPORT(F32ToF16);
HWY_EXPORT(F16ToF32);

void bf16_to_f32(const uint16_t* src, float* dst, int64_t n) { HWY_DYNAMIC_DISPATCH(Bf16ToF32)(src, dst, n); }
void rms_norm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps) {
  HWY_DYNAMIC_DISPATCH(RmsNorm)(x, weight, out, rows, dim, eps);
}
void layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
                float eps) {
  HWY_DYNAMIC_DISPATCH(LayerNorm)(x, gamma, beta, out, rows, dim, eps);
}
void gelu_tanh(float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(GeluTanh)(x, n); }
void gelu_erf(float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(GeluErf)(x, n); }
void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate, up, out, n);
}
void add(const float* a, const float* b, float* out, int64_t n) { HWY_DYNAMIC_DISPATCH(AddKernel)(a, b, out, n); }
void softmax(float* x, int64_t n) { HWY_DYNAMIC_DISPATCH(Softmax)(x, n); }
double log_sum_exp(const float* x, int64_t n, float scale) { return HWY_DYNAMIC_DISPATCH(LogSumExp)(x, n, scale); }
int64_t argmax(const float* x, int64_t n) { return HWY_DYNAMIC_DISPATCH(Argmax)(x, n); }
void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
          const float* sin) {
  HWY_DYNAMIC_DISPATCH(Rope)(x, tokens, heads, head_dim, stride, cos, sin);
}

void f32_to_f16(const float* src, uint16_t* dst, int64_t n) { HWY_DYNAMIC_DISPATCH(F32ToF16)(src, dst, n); }
void f16_to_f32(const uint16_t* src, float* dst, int64_t n) { HWY_DYNAMIC_DISPATCH(F16ToF32)(src, dst, n); }

}  // namespace qvl::simd
#endif
