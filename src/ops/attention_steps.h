// Internal: the AVX-512 steps of many-query attention that the AMX kernel
// (amx_attention.cpp) and the AVX512-BF16 one (bf16_attention.cpp) share, so
// their Fast precision computes the same numbers: bf16 rounding, the base-2
// exponential, query packing and one block's online softmax, with lanes as
// query rows (the "transposed blocks" below). Layouts are the AMX kernel's:
// a work item is kT query rows, a block kStep keys.
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

// The keys each of an item's kT query rows (from i0, `rows` of them real)
// sees: end[r] positions, causal from q_pos0, else all nkv; rows past
// `rows` see what the last one does (their output is dropped, but they must
// not be empty). Returns the most any row sees and the fewest all see.
struct ItemKeys {
  int64_t most = 0, all_see = 0;
};
inline ItemKeys item_keys(bool causal, int64_t q_pos0, int64_t nkv, int64_t i0, int64_t rows, int32_t* end) {
  ItemKeys k{0, nkv};
  for (int64_t r = 0; r < kT; ++r) {
    const int64_t i = i0 + std::min(r, rows - 1);
    end[r] = static_cast<int32_t>(causal ? std::clamp<int64_t>(q_pos0 + i + 1, 0, nkv) : nkv);
    k.most = std::max<int64_t>(k.most, end[r]);
    k.all_see = std::min<int64_t>(k.all_see, end[r]);
  }
  return k;
}

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

// One block's online softmax, row by row: s [16][32] scores (base 2), row r
// sees keys [0, valid[r]) of the block. P's parts go to p_out [part][16][32]
// bf16; o [16][dh] is rescaled by 2^(m_old - m_new), m and l updated. No
// longer what the AMX kernel runs (softmax_block_t below): the
// specification of bf16_dot_steps.h's softmax_rows16, the int8 kernel's.
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

// --- Transposed blocks: lanes are query rows -------------------------------
//
// The AMX kernel computes Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·Pᵀ, so that a block's scores
// come out as kStep rows of kT lanes (one key each, a lane per query row) and
// its softmax needs no reduction across lanes: a row's maximum over the block
// is a lane-wise max of kStep vectors, its sum a lane-wise sum. The running
// maximum m is an integer, and grows lazily: only when a block's maximum
// passes it by more than kLazyMax. Weights 2^(s - m) are then at most
// 2^kLazyMax, and a rescale of O and l by 2^(m_old - m_new) is exact (a power
// of two) and rare, so O can stay in the tile unit's accumulators.

constexpr float kLazyMax = 8.0f;  // weights up to 2^8 before m catches up

// r[i] lane j <-> r[j] lane i: the 16x16 matrix of 32-bit elements in r
// transposed in place (within 128-bit lanes by pairs and quads, then the
// 128-bit blocks across registers).
QVL_AVX512 inline void transpose16(__m512i* r) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int g = 0; g < 16; g += 4) {  // u[g + c], 128-bit lane L: rows g..g+3 at column 4L + c
    u[g] = _mm512_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm512_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm512_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm512_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i a0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), a1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
    const __m512i b0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE), b1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_i32x4(a0, a1, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(a0, a1, 0xDD);
    r[8 + c] = _mm512_shuffle_i32x4(b0, b1, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(b0, b1, 0xDD);
  }
}

// v's bits with its bf16 rounded to nearest even in the high half: as
// split_regs for Fast (denormals to zero, sign kept), or (Normal) for a v
// known to be a normal float or zero.
template <bool Normal = false>
QVL_AVX512 inline __m512i round_bf16_high(__m512 v) {
  __m512i bits = _mm512_castps_si512(v);
  if constexpr (!Normal) {
    const __mmask16 denormal =
        _mm512_cmplt_epu32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x00800000));
    bits = _mm512_mask_and_epi32(bits, denormal, bits, _mm512_set1_epi32(static_cast<int>(0x80000000u)));
  }
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  return _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
}

// a and b lane by lane as pairs of bf16, part by part: out[part] lane i the
// pair (a[i], b[i]), a's low (split_regs' parts and rounding).
template <bool Normal = false>
QVL_AVX512 inline void split_pairs(__m512 a, __m512 b, int parts, __m512i* out) {
  if (parts == 1) {
    out[0] = _mm512_mask_blend_epi16(0xAAAAAAAAu, _mm512_srli_epi32(round_bf16_high<Normal>(a), 16),
                                     round_bf16_high<Normal>(b));
    return;
  }
  __m256i ea[3], eb[3];
  split_regs(a, parts, ea);
  split_regs(b, parts, eb);
  for (int part = 0; part < parts; ++part)
    out[part] = _mm512_or_si512(_mm512_cvtepu16_epi32(ea[part]), _mm512_slli_epi32(_mm512_cvtepu16_epi32(eb[part]), 16));
}

// 32 floats, lo then hi, as 32 bf16 in order, part by part (split_regs).
QVL_AVX512 inline void split_32(__m512 lo, __m512 hi, int parts, __m512i* out) {
  if (parts == 1) {
    const __m512i odd_words = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29,
                                               27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    out[0] = _mm512_permutex2var_epi16(round_bf16_high(lo), odd_words, round_bf16_high(hi));
    return;
  }
  __m256i l[3], h[3];
  split_regs(lo, parts, l);
  split_regs(hi, parts, h);
  for (int part = 0; part < parts; ++part) out[part] = _mm512_inserti64x4(_mm512_castsi256_si512(l[part]), h[part], 1);
}

// The query rows of one item as Qᵀ in tdpbf16ps's B layout, scaled:
// [step of 32 dims][part][16 dim pairs kk][16 rows], each uint32 the pair
// (q[r][32 step + 2kk], q[r][32 step + 2kk + 1]); rows past `rows` zero.
// The AVX512-BF16 kernel reads the same layout as [dh/2 pairs][16 rows].
QVL_AVX512 inline void pack_queries_t(const float* q, int64_t rows, int64_t q_stride, int64_t dh, float qscale,
                                      int parts, uint32_t* out) {
  const __m512 vs = _mm512_set1_ps(qscale);
  for (int64_t st = 0; st < dh / kStep; ++st) {
    __m512i m[3][16];
    for (int64_t r = 0; r < kT; ++r) {
      __m512i x[3] = {};
      if (r < rows) {
        const float* row = q + r * q_stride + st * kStep;
        split_32(_mm512_mul_ps(_mm512_loadu_ps(row), vs), _mm512_mul_ps(_mm512_loadu_ps(row + 16), vs), parts, x);
      }
      for (int part = 0; part < parts; ++part) m[part][r] = x[part];
    }
    for (int part = 0; part < parts; ++part) {
      transpose16(m[part]);
      for (int64_t kk = 0; kk < kT; ++kk) _mm512_storeu_si512(out + ((st * parts + part) * kT + kk) * kT, m[part][kk]);
    }
  }
}

// 2^x lane by lane for x <= kLazyMax, zero where the lane is off in `keep`
// (whatever x is there: -inf, NaN) or 2^x is below the floats: 2^f for f =
// x - floor(x) in [0, 1) (vreduceps), times 2^floor(x) (vscalefps). 2^f is
// √2·2^(f - 1/2) by its Taylor series to degree `Degree` about 1/2, its
// terms gathered by powers of f: within 5.6e-5 for 4 (a fortieth of a
// weight's bf16 rounding), 9.4e-9 for 7 (Exact).
template <int Degree>
QVL_AVX512 inline __m512 exp2_lanes(__m512 x, __mmask16 keep) {
  static_assert(Degree == 4 || Degree == 7);
  const __m512 f = _mm512_reduce_ps(x, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 p;
  if constexpr (Degree == 7) {
    p = _mm512_set1_ps(2.1570623008967995e-05f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.00014234163537607647f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.0013453791996116257f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.0096104880213100409f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.055507199373299246f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.24022572808713175f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.69314729249738272f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.99999999297109377f));
  } else {
    p = _mm512_set1_ps(0.013602088628663626f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.05129048598389345f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.2423927222642393f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.692596512402056f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0000556843187292f));
  }
  return _mm512_maskz_scalef_ps(keep, p, x);
}

// One block's online softmax with lanes as query rows: sT [kStep][16]
// scores (base 2) of keys j0 + j, lane r seeing those below end[r] (all of
// them where `full`). m and l ([16], m an integer or -inf) are updated and
// the weights 2^(s - m) written to w [kStep][16] (pack_weights makes them
// tile rows). Returns the lanes whose m grew from a finite value, whose O
// must be scaled by 2^scale_by[r] (an exact power of two; l already is).
// Fast (Parts 1) takes 2^f to degree 4, Exact (3) to degree 7.
QVL_AVX512 inline __mmask16 visible_keys(bool full, __m512i end, int64_t j) {
  return full ? 0xffff : _mm512_cmpgt_epi32_mask(end, _mm512_set1_epi32(static_cast<int>(j)));
}
template <int Parts>
QVL_AVX512 inline __mmask16 softmax_block_t(const float* sT, int64_t j0, const int32_t* end, bool full, float* m,
                                            float* l, float* w, float* scale_by) {
  constexpr int kDegree = Parts == 1 ? 4 : 7;
  const __m512 ninf = _mm512_set1_ps(kNegInf);
  const __m512i vend = _mm512_loadu_si512(end);
  const __m512 m_old = _mm512_loadu_ps(m);
  __m512 mx[4] = {ninf, ninf, ninf, ninf};
  __m512 sum[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  // Once every row has its m, a block rarely passes it by kLazyMax: the
  // weights are taken against m as it is, the block's maximum beside them,
  // and only where some row's maximum does pass it is the block taken again
  // below (a row that does not grow gets the same numbers either way).
  if (_mm512_cmp_ps_mask(m_old, ninf, _CMP_EQ_OQ) == 0) {
#pragma GCC unroll 32
    for (int j = 0; j < kStep; ++j) {
      const __m512 x = _mm512_loadu_ps(sT + j * kT);
      const __mmask16 seen = visible_keys(full, vend, j0 + j);
      mx[j % 4] = _mm512_mask_max_ps(mx[j % 4], seen, mx[j % 4], x);
      const __m512 p = exp2_lanes<kDegree>(_mm512_sub_ps(x, m_old), seen);
      sum[j % 4] = _mm512_add_ps(sum[j % 4], p);
      _mm512_storeu_ps(w + j * kT, p);
    }
    const __m512 block_max = _mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3]));
    if (_mm512_cmp_ps_mask(block_max, _mm512_add_ps(m_old, _mm512_set1_ps(kLazyMax)), _CMP_GT_OQ) == 0) {
      const __m512 block_sum = _mm512_add_ps(_mm512_add_ps(sum[0], sum[1]), _mm512_add_ps(sum[2], sum[3]));
      _mm512_storeu_ps(l, _mm512_add_ps(_mm512_loadu_ps(l), block_sum));
      _mm512_storeu_ps(scale_by, _mm512_setzero_ps());
      return 0;
    }
    for (int i = 0; i < 4; ++i) mx[i] = ninf, sum[i] = _mm512_setzero_ps();
  }
#pragma GCC unroll 32
  for (int j = 0; j < kStep; ++j)
    mx[j % 4] = _mm512_mask_max_ps(mx[j % 4], visible_keys(full, vend, j0 + j), mx[j % 4], _mm512_loadu_ps(sT + j * kT));
  const __m512 block_max = _mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3]));
  // m_old + kLazyMax is -inf where m_old is: any visible key raises it.
  const __mmask16 grow = _mm512_cmp_ps_mask(block_max, _mm512_add_ps(m_old, _mm512_set1_ps(kLazyMax)), _CMP_GT_OQ);
  const __m512 m_new = _mm512_mask_roundscale_ps(m_old, grow, block_max, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  const __mmask16 rescale = grow & _mm512_cmp_ps_mask(m_old, ninf, _CMP_NEQ_OQ);
  const __m512 by = _mm512_maskz_sub_ps(rescale, m_old, m_new);
#pragma GCC unroll 32
  for (int j = 0; j < kStep; ++j) {
    const __m512 p =
        exp2_lanes<kDegree>(_mm512_sub_ps(_mm512_loadu_ps(sT + j * kT), m_new), visible_keys(full, vend, j0 + j));
    sum[j % 4] = _mm512_add_ps(sum[j % 4], p);
    _mm512_storeu_ps(w + j * kT, p);
  }
  const __m512 l_old = _mm512_loadu_ps(l);
  const __m512 block_sum = _mm512_add_ps(_mm512_add_ps(sum[0], sum[1]), _mm512_add_ps(sum[2], sum[3]));
  _mm512_storeu_ps(l, _mm512_add_ps(_mm512_mask_scalef_ps(l_old, rescale, l_old, by), block_sum));
  _mm512_storeu_ps(m, m_new);
  _mm512_storeu_ps(scale_by, by);
  return rescale;
}

// A block's weights w [kStep][16] as Pᵀ [Parts][16 key pairs][16] in
// tdpbf16ps's B layout: keys 2t and 2t + 1 as B row t, each lane the pair
// of its row's weights (split_pairs: Fast rounds to nearest even; a weight
// below the normal floats rounds as its bits and reads as zero in every
// product, DAZ).
template <int Parts>
QVL_AVX512 inline void pack_weights(const float* w, uint32_t* pT) {
#pragma GCC unroll 16
  for (int t = 0; t < kStep / 2; ++t) {
    __m512i x[Parts];
    split_pairs<true>(_mm512_loadu_ps(w + 2 * t * kT), _mm512_loadu_ps(w + (2 * t + 1) * kT), Parts, x);
    for (int part = 0; part < Parts; ++part) _mm512_storeu_si512(pT + (part * kT + t) * kT, x[part]);
  }
}

#define QVL_AVX512_BF16_CVT __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")))

// pack_weights<1> with vcvtne2ps2bf16, for CPUs with AVX512-BF16: the same
// bits for every weight of a normal float or zero (to nearest even), a
// denormal one zero. The instruction puts one key's 16 lanes after the
// other's; vpermw interleaves them into pairs.
QVL_AVX512_BF16_CVT inline void pack_weights_cvt(const float* w, uint32_t* pT) {
  const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22,
                                              6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
#pragma GCC unroll 16
  for (int t = 0; t < kStep / 2; ++t) {
    const __m512i halves =
        (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(w + (2 * t + 1) * kT), _mm512_loadu_ps(w + 2 * t * kT));
    _mm512_storeu_si512(pT + t * kT, _mm512_permutexvar_epi16(interleave, halves));
  }
}

}  // namespace qvl::attention_steps
#endif
