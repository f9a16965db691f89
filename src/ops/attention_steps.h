// Internal: the AVX-512 steps of many-query attention that the AMX kernel
// (amx_attention.cpp) and the AVX512-BF16 one (bf16_attention.cpp) share, so
// their Fast precision computes the same numbers: bf16 rounding, the base-2
// exponential, query packing and one block's online softmax. Layouts are the
// AMX kernel's: a work item is kT query rows, a block kStep keys.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// For every file that includes this one: GCC 12 reports the intrinsics' own _mm512_undefined_* placeholders (here
// in _mm512_reduce_*) as uninitialized once they are inlined into a function
// with a target attribute (GCC bug 105593, fixed in 13); nothing of ours is.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

namespace qvl::attention_steps {

constexpr int64_t kT = 16;     // query rows per work item
constexpr int64_t kStep = 32;  // keys per softmax block; bf16 of head_dim per packed query step
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

#define QVL_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma")))

// 2^x for x <= 0 (x = -inf gives 0): as Exp2NonPositive in
// simd_attention.cpp, x = n + f, 2^f by its Taylor series to degree 7,
// 2^n into the exponent; clamped at -126, then zeroed where x < -126.
QVL_AVX512 inline __m512 exp2_non_positive(__m512 x) {
  const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_LT_OQ);
  x = _mm512_max_ps(x, _mm512_set1_ps(-126.0f));
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(1.5252733804059841e-05f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.5403530393381608e-04f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-03f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-03f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-02f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-01f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_add_epi32(_mm512_castps_si512(p), _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23));
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~tiny), _mm512_castsi512_ps(bits));
}

// 16 floats as bf16 parts, part by part in out[]: Fast rounds to nearest
// even (finite inputs, as scalar::round_bf16 for them; denormals to zero),
// Exact cuts as split_bf16.
QVL_AVX512 inline void split_regs(__m512 v, int parts, __m256i* out) {
  if (parts == 1) {
    __m512i bits = _mm512_castps_si512(v);
    const __mmask16 denormal =
        _mm512_cmplt_epu32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x00800000));
    bits = _mm512_mask_and_epi32(bits, denormal, bits, _mm512_set1_epi32(static_cast<int>(0x80000000u)));
    bits =
        _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                                                _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1))));
    out[0] = _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16));
    return;
  }
  const __m512i keep = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int part = 0; part < 3; ++part) {
    const __m512i bits = _mm512_castps_si512(v);
    out[part] = _mm512_cvtepi32_epi16(_mm512_srli_epi32(bits, 16));
    v = _mm512_sub_ps(v, _mm512_castsi512_ps(_mm512_and_si512(bits, keep)));  // exact
  }
}

// The same, stored: part `part` at out + part·part_stride.
QVL_AVX512 inline void split_16(__m512 v, int parts, uint16_t* out, int64_t part_stride) {
  __m256i r[3];
  split_regs(v, parts, r);
  for (int part = 0; part < parts; ++part)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + part * part_stride), r[part]);
}

// 16 K or V elements as f32 (f16 widened exactly).
template <class T>
QVL_AVX512 inline __m512 load_16(const T* p) {
  if constexpr (std::is_same_v<T, float>) return _mm512_loadu_ps(p);
  else return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The query rows of one item as A tiles: [step][part][16][32] bf16, scaled.
QVL_AVX512 inline void pack_queries(const float* q, int64_t rows, int64_t q_stride, int64_t dh, float qscale, int parts,
                                    uint16_t* out) {
  const __m512 vs = _mm512_set1_ps(qscale);
  for (int64_t r = 0; r < kT; ++r)
    for (int64_t c = 0; c < dh; c += 16) {
      const __m512 x = r < rows ? _mm512_mul_ps(_mm512_loadu_ps(q + r * q_stride + c), vs) : _mm512_setzero_ps();
      split_16(x, parts, out + ((c / kStep) * parts * kT + r) * kStep + c % kStep, kT * kStep);
    }
}

// One block's online softmax, row by row: s [16][32] scores (base 2), row r
// sees keys [0, valid[r]) of the block. P's parts go to p_out [part][16][32]
// bf16; o [16][dh] is rescaled by 2^(m_old - m_new), m and l updated.
QVL_AVX512 inline void softmax_block(const float* s, const int64_t* valid, int parts, float* m, float* l, float* o,
                                     int64_t dh, uint16_t* p_out) {
  for (int64_t r = 0; r < kT; ++r) {
    const int64_t n = std::clamp<int64_t>(valid[r], 0, kStep);
    const __mmask16 m0 = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
    const __mmask16 m1 = static_cast<__mmask16>(n <= 16 ? 0 : n >= 32 ? 0xffff : (1u << (n - 16)) - 1);
    const __m512 ninf = _mm512_set1_ps(kNegInf);
    const __m512 s0 = _mm512_mask_loadu_ps(ninf, m0, s + r * kStep);
    const __m512 s1 = _mm512_mask_loadu_ps(ninf, m1, s + r * kStep + 16);
    const float mx = _mm512_reduce_max_ps(_mm512_max_ps(s0, s1));
    const float m_new = std::max(m[r], mx);
    __m512 p0 = _mm512_setzero_ps(), p1 = _mm512_setzero_ps();
    if (m_new != kNegInf) {  // else: nothing seen yet, nothing to add
      const __m512 vm = _mm512_set1_ps(m_new);
      p0 = exp2_non_positive(_mm512_sub_ps(s0, vm));
      p1 = exp2_non_positive(_mm512_sub_ps(s1, vm));
      const float corr = m[r] == kNegInf ? 0.0f : std::exp2(m[r] - m_new);
      l[r] = l[r] * corr + _mm512_reduce_add_ps(_mm512_add_ps(p0, p1));
      m[r] = m_new;
      if (corr != 1.0f) {
        const __m512 vc = _mm512_set1_ps(corr);
        for (int64_t c = 0; c < dh; c += 16)
          _mm512_storeu_ps(o + r * dh + c, _mm512_mul_ps(_mm512_loadu_ps(o + r * dh + c), vc));
      }
    }
    split_16(p0, parts, p_out + r * kStep, kT * kStep);
    split_16(p1, parts, p_out + r * kStep + 16, kT * kStep);
  }
}

}  // namespace qvl::attention_steps
#endif
