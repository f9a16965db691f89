// Highway bf16 -> Q8/Q4 group quantizers (see simd_quant.h). Each group of
// quant::kGroup weights is a few whole vectors of at most 16 f32 lanes, so the
// low and high halves of a Q4 group (packed into one byte) are whole vectors
// too. A partial last group is zero-padded: zeros change neither the group's
// max nor, since they quantize to code 0, its codes, exactly as in the scalar
// twin.
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_quant.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include <algorithm>
#include <cstring>

#include "ops/quant.h"
#include "ops/simd_quant.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DQ = hn::CappedTag<float, 16>;
using VQ = hn::Vec<DQ>;
constexpr int64_t kG = quant::kGroup;

HWY_INLINE VQ LoadBf16(DQ d, const uint16_t* p) {
  const hn::Rebind<uint16_t, DQ> du16;
  const hn::Rebind<uint32_t, DQ> du32;
  return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
}

HWY_INLINE float Bf16Scalar(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The source weights as f32 lanes: bf16 (as published) or f32 (an FP8
// checkpoint dequantized at load, WeightMatrix::from_f32).
HWY_INLINE VQ LoadWeights(DQ d, const uint16_t* p) { return LoadBf16(d, p); }
HWY_INLINE VQ LoadWeights(DQ d, const float* p) { return hn::LoadU(d, p); }
HWY_INLINE float Scalar(uint16_t h) { return Bf16Scalar(h); }
HWY_INLINE float Scalar(float f) { return f; }

// Rounded, clamped codes of v·inv as int32 (same operation order as the
// scalar twin: multiply, round half to even, clamp).
HWY_INLINE hn::Vec<hn::Rebind<int32_t, DQ>> Codes(DQ d, VQ v, VQ inv, VQ lo, VQ hi) {
  const hn::Rebind<int32_t, DQ> di;
  return hn::ConvertTo(di, hn::Max(lo, hn::Min(hi, hn::Round(hn::Mul(v, inv)))));
}

// max |w| over one group of kG bf16 weights. Vectors are reloaded rather
// than kept in an array: sizeless (SVE) vectors cannot be array elements,
// and the group is in L1 anyway.
template <typename Src>
float GroupAbsMax(const Src* w) {
  const DQ d;
  const size_t N = hn::Lanes(d);
  VQ amax = hn::Zero(d);
  for (size_t k = 0; k < static_cast<size_t>(kG) / N; ++k) amax = hn::Max(amax, hn::Abs(LoadWeights(d, w + k * N)));
  return hn::GetLane(hn::MaxOfLanes(d, amax));
}

template <typename Src>
uint16_t GroupQ8(const Src* w, int8_t* q) {
  const DQ d;
  const size_t N = hn::Lanes(d);
  const size_t nv = static_cast<size_t>(kG) / N;
  const float m = GroupAbsMax(w);
  const uint16_t h = quant::f16_ceil(m / 127.0f);
  const float scale = quant::f16_to_f32(h);
  const VQ inv = hn::Set(d, scale > 0 ? 1.0f / scale : 0.0f);
  const VQ lo = hn::Set(d, -127.0f), hi = hn::Set(d, 127.0f);
  const hn::Rebind<int8_t, DQ> d8;
  for (size_t k = 0; k < nv; ++k) hn::StoreU(hn::DemoteTo(d8, Codes(d, LoadWeights(d, w + k * N), inv, lo, hi)), d8, q + k * N);
  return h;
}

template <typename Src>
uint16_t GroupQ4(const Src* w, uint8_t* packed) {
  const DQ d;
  const size_t N = hn::Lanes(d);
  const size_t nv = static_cast<size_t>(kG) / N;
  const float m = GroupAbsMax(w);
  // The scalar twin keeps the FIRST weight of largest magnitude (strict >),
  // with 0 when all are zero.
  float extreme = 0.0f;
  if (m > 0) {
    const VQ mv = hn::Set(d, m);
    for (size_t k = 0; k < nv; ++k) {
      const intptr_t i = hn::FindFirstTrue(d, hn::Eq(hn::Abs(LoadWeights(d, w + k * N)), mv));
      if (i >= 0) {
        extreme = Scalar(w[k * N + static_cast<size_t>(i)]);
        break;
      }
    }
  }
  uint16_t h = quant::f16_ceil(m / 8.0f);
  if (extreme > 0) h |= 0x8000;
  const float scale = quant::f16_to_f32(h);
  const VQ inv = hn::Set(d, scale != 0 ? 1.0f / scale : 0.0f);
  const VQ lo = hn::Set(d, -8.0f), hi = hn::Set(d, 7.0f);
  const hn::Rebind<int32_t, DQ> di;
  const hn::Rebind<uint8_t, DQ> d8;
  const auto bias = hn::Set(di, 8);
  const size_t half = nv / 2;  // element j and j + kGroup/2 share byte j
  for (size_t k = 0; k < half; ++k) {
    auto low = hn::Add(Codes(d, LoadWeights(d, w + k * N), inv, lo, hi), bias);
    auto high = hn::Add(Codes(d, LoadWeights(d, w + (k + half) * N), inv, lo, hi), bias);
    hn::StoreU(hn::DemoteTo(d8, hn::Or(low, hn::ShiftLeft<4>(high))), d8, packed + k * N);
  }
  return h;
}

template <bool kQ8, typename Src>
void QuantizeRows(const Src* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  const int64_t groups = quant::groups(cols);
  const int64_t row_bytes = kQ8 ? quant::q8_row_bytes(cols) : quant::q4_row_bytes(cols);
  const int64_t group_bytes = kQ8 ? kG : kG / 2;
  const int64_t full = cols / kG;
  for (int64_t r = 0; r < rows; ++r) {
    const Src* w = src + r * cols;
    uint8_t* q = quants + r * row_bytes;
    uint16_t* s = scales + r * groups;
    for (int64_t g = 0; g < groups; ++g) {
      const Src* gw = w + g * kG;
      Src pad[kG];
      if (g >= full) {
        const int64_t count = cols - g * kG;
        std::memset(pad, 0, sizeof(pad));
        std::memcpy(pad, gw, static_cast<size_t>(count) * sizeof(Src));
        gw = pad;
      }
      uint8_t* gq = q + g * group_bytes;
      s[g] = kQ8 ? GroupQ8(gw, reinterpret_cast<int8_t*>(gq)) : GroupQ4(gw, gq);
    }
  }
}

// One row of activations (quant::quantize_x_scalar is the specification).
#if QVL_X86_AVX512
// Up to 16 whole groups of 32 activations on AVX-512: QuantizeX's numbers
// with fewer instructions and shorter chains. Each group's max |x| is found
// first and the 16 scales and reciprocals are then one vector division each
// (IEEE division, so the scalar twin's bits), not two scalar divisions on
// every group's chain. Highway's ConvertTo guards against out-of-range lanes
// (five more instructions a vector) and its DemoteTo to int8 packs twice and
// permutes; here the lanes are already rounded and clamped to ±127, so a
// truncating conversion is exact, and vpmovsdb narrows them in one step.
// 14 -> ~6 ns a group on Zen 4 (one thread, from L1): rounding a GEMM's x
// was ~2 % of a document page's first token.
HWY_INLINE void QuantizeGroupsAvx512(const float* x, int64_t n, int8_t* codes, float* scales, int32_t* sums) {
  alignas(64) float amax[16] = {}, inv[16];
  for (int64_t g = 0; g < n; ++g) {
    const __m512 a =
        _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + 32 * g)), _mm512_abs_ps(_mm512_loadu_ps(x + 32 * g + 16)));
    amax[g] = _mm512_reduce_max_ps(a);
  }
  const __m512 d = _mm512_div_ps(_mm512_load_ps(amax), _mm512_set1_ps(127.0f));
  const __mmask16 positive = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_GT_OQ);
  _mm512_store_ps(inv, _mm512_maskz_div_ps(positive, _mm512_set1_ps(1.0f), d));
  _mm512_mask_storeu_ps(scales, static_cast<__mmask16>((1u << n) - 1), d);
  const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  for (int64_t g = 0; g < n; ++g) {
    const __m512 s = _mm512_set1_ps(inv[g]);
    auto code = [&](const float* v) {  // Codes(): multiply, round half to even, clamp (same operand order)
      const __m512 r =
          _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(v), s), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      return _mm512_cvttps_epi32(_mm512_max_ps(lo, _mm512_min_ps(hi, r)));
    };
    const __m512i q0 = code(x + 32 * g), q1 = code(x + 32 * g + 16);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 32 * g), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 32 * g + 16), _mm512_cvtsepi32_epi8(q1));
    sums[g] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
}
#endif

// One row of activations, group by group, in portable vectors (every
// target; on AVX-512 the partial last group only).
void QuantizeXPortable(const float* x, int64_t k, const quant::XRow& o) {
  const DQ d;
  const size_t N = hn::Lanes(d);
  const size_t nv = static_cast<size_t>(kG) / N;
  const hn::Rebind<int32_t, DQ> di;
  const hn::Rebind<int8_t, DQ> d8;
  const VQ lo = hn::Set(d, -127.0f), hi = hn::Set(d, 127.0f);
  const int64_t groups = quant::groups(k);
  for (int64_t g = 0; g < groups; ++g) {
    const float* xg = x + g * kG;
    float pad[kG];
    if ((g + 1) * kG > k) {
      std::memset(pad, 0, sizeof(pad));
      std::memcpy(pad, xg, static_cast<size_t>(k - g * kG) * sizeof(float));
      xg = pad;
    }
    VQ amax = hn::Zero(d);
    for (size_t j = 0; j < nv; ++j) amax = hn::Max(amax, hn::Abs(hn::LoadU(d, xg + j * N)));
    const float scale = hn::GetLane(hn::MaxOfLanes(d, amax)) / 127.0f;
    const VQ inv = hn::Set(d, scale > 0 ? 1.0f / scale : 0.0f);
    auto sum = hn::Zero(di);
    for (size_t j = 0; j < nv; ++j) {
      const auto q = Codes(d, hn::LoadU(d, xg + j * N), inv, lo, hi);
      sum = hn::Add(sum, q);
      hn::StoreU(hn::DemoteTo(d8, q), d8, o.codes + g * kG + static_cast<int64_t>(j * N));
    }
    o.scales[g] = scale;
    o.sums[g] = hn::GetLane(hn::SumOfLanes(di, sum));
  }
}

void QuantizeX(const float* x, int64_t k, const quant::XRow& out) {
#if QVL_X86_AVX512
  static_assert(kG == 32, "QuantizeGroupsAvx512 takes groups of two 16-lane vectors");
  const int64_t whole = k / kG;
  int8_t* codes = out.codes;
  float* scales = out.scales;
  int32_t* sums = out.sums;
  for (int64_t g = 0; g < whole; g += 16)
    QuantizeGroupsAvx512(x + g * kG, std::min<int64_t>(16, whole - g), codes + g * kG, scales + g, sums + g);
  if (whole * kG < k)
    QuantizeXPortable(x + whole * kG, k - whole * kG, {codes + whole * kG, scales + whole, sums + whole});
#else
  QuantizeXPortable(x, k, out);
#endif
}

void QuantizeRowsQ8(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  QuantizeRows<true>(src, rows, cols, quants, scales);
}
void QuantizeRowsQ4(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  QuantizeRows<false>(src, rows, cols, quants, scales);
}
void QuantizeRowsQ8F32(const float* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  QuantizeRows<true>(src, rows, cols, quants, scales);
}
void QuantizeRowsQ4F32(const float* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  QuantizeRows<false>(src, rows, cols, quants, scales);
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qvl::simd {

HWY_EXPORT(QuantizeRowsQ8);
HWY_EXPORT(QuantizeRowsQ4);
HWY_EXPORT(QuantizeX);
HWY_EXPORT(QuantizeRowsQ8F32);
HWY_EXPORT(QuantizeRowsQ4F32);

void quantize_x(const float* x, int64_t k, const quant::XRow& out) { HWY_DYNAMIC_DISPATCH(QuantizeX)(x, k, out); }

void quantize_rows_q8(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ8)(src, rows, cols, quants, scales);
}
void quantize_rows_q4(const uint16_t* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ4)(src, rows, cols, quants, scales);
}
void quantize_rows_q8(const float* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ8F32)(src, rows, cols, quants, scales);
}
void quantize_rows_q4(const float* src, int64_t rows, int64_t cols, uint8_t* quants, uint16_t* scales) {
  HWY_DYNAMIC_DISPATCH(QuantizeRowsQ4F32)(src, rows, cols, quants, scales);
}

}  // namespace qvl::simd
#endif
