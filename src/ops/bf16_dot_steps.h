// Internal: the AVX512-BF16 steps that the vdpbf16ps attention kernel
// (bf16_attention.cpp) and the vpdpbusd one (int8_attention.cpp) share: V
// packed to bf16 pairs, one block's online softmax for 16 rows at once, the
// block's P·V with vdpbf16ps, and the loop over work items (one query head,
// 16 query rows) that strings them together. Only Q·Kᵀ differs between the
// two kernels; it is the `Tile` the loop is given.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "ops/attention_steps.h"
#include "ops/ops.h"
#include "ops/scratch.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

namespace qvl::bf16_dot_steps {

using attention_steps::kNegInf;
using attention_steps::kStep;
using attention_steps::kT;

#define QVL_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,f16c")))

// 16 K or V values as bf16, rounded to nearest even (denormals to zero, as
// attention_steps::split_regs rounds for Fast): vcvtneps2bf16.
template <class T>
QVL_AVX512_BF16 inline __m256i bf16_16(const T* p) {
  return (__m256i)_mm512_cvtneps_pbh(attention_steps::load_16(p));
}

QVL_AVX512_BF16 inline __m512bh as_bh(__m512i x) { return (__m512bh)x; }

// Vp of kv head h, block kb (zeros past nkv): [16 key pairs][dh] uint32, the
// pair (v[2t][c], v[2t+1][c]) at t·dh + c.
template <class T>
QVL_AVX512_BF16 inline void pack_v_block(const T* v, const AttentionParams& p, int64_t h, int64_t kb, uint32_t* vp) {
  const int64_t dh = p.head_dim;
  for (int64_t kk = 0; kk < kStep / 2; ++kk) {
    const int64_t j = kb * kStep + 2 * kk;
    const T* r0 = j < p.nkv ? v + j * p.kv_stride + h * dh : nullptr;
    const T* r1 = j + 1 < p.nkv ? v + (j + 1) * p.kv_stride + h * dh : nullptr;
    for (int64_t c = 0; c < dh; c += 16) {
      const __m256i even = r0 ? bf16_16(r0 + c) : _mm256_setzero_si256();
      const __m256i odd = r1 ? bf16_16(r1 + c) : _mm256_setzero_si256();
      const __m512i pair =
          _mm512_or_si512(_mm512_cvtepu16_epi32(even), _mm512_slli_epi32(_mm512_cvtepu16_epi32(odd), 16));
      _mm512_storeu_si512(vp + kk * dh + c, pair);
    }
  }
}

// O [R][dh] columns [c0, c0 + 16·CT) += P·V for one block: pa is
// softmax_rows16's P [16][32] bf16 (row r's key pair kk at r·16 + kk as
// uint32), vb one block of Vp. The block's sum starts at zero and is then
// added to O, as the AMX kernel adds its C tiles.
template <int R, int CT>
QVL_AVX512_BF16 inline void values(const uint32_t* pa, int64_t r0, const uint32_t* vb, int64_t dh, int64_t c0,
                                   float* o) {
  __m512 acc[R][CT];
  for (int r = 0; r < R; ++r)
    for (int ct = 0; ct < CT; ++ct) acc[r][ct] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < kStep / 2; ++kk) {
    __m512i vv[CT];
    for (int ct = 0; ct < CT; ++ct) vv[ct] = _mm512_loadu_si512(vb + kk * dh + c0 + ct * 16);
    for (int r = 0; r < R; ++r) {
      const __m512i pb = _mm512_set1_epi32(static_cast<int>(pa[(r0 + r) * 16 + kk]));
      for (int ct = 0; ct < CT; ++ct) acc[r][ct] = _mm512_dpbf16_ps(acc[r][ct], as_bh(pb), as_bh(vv[ct]));
    }
  }
  for (int r = 0; r < R; ++r)
    for (int ct = 0; ct < CT; ++ct) {
      float* dst = o + (r0 + r) * dh + c0 + ct * 16;
      _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), acc[r][ct]));
    }
}

// Lane r of the result = op over the 16 lanes of v[r], for 16 rows at once:
// halves of the rows folded into each other, then quarters, then within
// 128-bit lanes, then a permutation (~46 instructions for 16 rows, against
// ~8 dependent shuffles and ops a row for _mm512_reduce_*). Per row, with x
// its 16 lanes and t[k] = (x[k] + x[8+k]) + (x[4+k] + x[12+k]), the sum is
// (t[0] + t[2]) + (t[1] + t[3]) (scalar::sum16_as_reduce_rows16).
struct MaxOp {
  QVL_AVX512_BF16 __m512 operator()(__m512 a, __m512 b) const { return _mm512_max_ps(a, b); }
};
struct AddOp {
  QVL_AVX512_BF16 __m512 operator()(__m512 a, __m512 b) const { return _mm512_add_ps(a, b); }
};

template <class Op>
QVL_AVX512_BF16 inline __m512 reduce_rows16(const __m512* v, Op op) {
  __m512 x[8], y[4], z[2];
  for (int i = 0; i < 8; ++i)  // 128-bit blocks: [row 2i, row 2i, row 2i+1, row 2i+1]
    x[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44), _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  for (int i = 0; i < 4; ++i)  // blocks: rows 4i .. 4i+3
    y[i] = op(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x88), _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; ++i)  // block k: row 8i + k in lanes 0-1, row 8i + 4 + k in lanes 2-3
    z[i] = op(_mm512_shuffle_ps(y[2 * i], y[2 * i + 1], 0x44), _mm512_shuffle_ps(y[2 * i], y[2 * i + 1], 0xEE));
  const __m512 r = op(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xDD));
  // Lane 4k + j now holds row 4j + k.
  const __m512i to_rows = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(to_rows, r);
}

// 2^x for x <= 0 (-inf gives 0) as the AMX kernel takes it, which the bf16
// kernel must match (softmax_rows16's Exp2; int8_attention.cpp has another).
struct Exp2Degree7 {
  QVL_AVX512_BF16 __m512 operator()(__m512 x) const { return attention_steps::exp2_non_positive(x); }
};

// One block's online softmax for the 16 rows of an item at once: the numbers
// of attention_steps::softmax_block (the bf16 kernel's specification), with
// the rows' maxima and sums reduced together (reduce_rows16), the rescale
// factor 2^(m_old - m_new) from the same polynomial as the weights, l updated
// by one fused multiply-add, and P rounded by vcvtne2ps2bf16 (to nearest
// even, denormals to zero, as split_regs does for Fast). s [16][32] scores in
// base 2, row r seeing keys [0, valid[r]); P goes to pa [16][16] pairs; o
// [16][dh] is rescaled, m and l updated. Against softmax_block only the order
// of the sum of a row's weights differs, and the rescale factor by the
// polynomial's error (< 6e-9 relative) with Exp2Degree7;
// scalar::attention_int8_fast does these very operations with the int8
// kernel's Exp2.
// The first step of a block's online softmax for 16 rows: row r sees keys
// [0, valid[r]) of the block's 32 (s [16][32]), as masks of its two halves
// (m0, m1), and part[r] holds its scores' maximum lane by lane (-inf where
// masked), for reduce_rows16.
QVL_AVX512_BF16 inline void block_row_maxima(const float* s, const int64_t* valid, __mmask16* m0, __mmask16* m1,
                                             __m512* part) {
  const __m512 ninf = _mm512_set1_ps(kNegInf);
  for (int r = 0; r < kT; ++r) {
    const int64_t n = std::clamp<int64_t>(valid[r], 0, kStep);
    m0[r] = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
    m1[r] = static_cast<__mmask16>(n <= 16 ? 0 : n >= 32 ? 0xffff : (1u << (n - 16)) - 1);
    part[r] = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, m0[r], s + r * kStep),
                            _mm512_mask_loadu_ps(ninf, m1[r], s + r * kStep + 16));
  }
}

// One live row of a block: its weights 2^(s - mx) in two halves of 16 keys
// (0 where masked), and its partial output o [dh] rescaled by cr where that
// is not 1 (a new maximum).
template <class Exp2>
QVL_AVX512_BF16 inline void row_weights(const Exp2& exp2, const float* s, __mmask16 m0, __mmask16 m1, float mx,
                                        float cr, float* o, int64_t dh, __m512& p0, __m512& p1) {
  const __m512 ninf = _mm512_set1_ps(kNegInf), vm = _mm512_set1_ps(mx);
  p0 = exp2(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, m0, s), vm));
  p1 = exp2(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, m1, s + 16), vm));
  if (cr != 1.0f) {
    const __m512 vc = _mm512_set1_ps(cr);
    for (int64_t c = 0; c < dh; c += 16) _mm512_storeu_ps(o + c, _mm512_mul_ps(_mm512_loadu_ps(o + c), vc));
  }
}

template <class Exp2>
QVL_AVX512_BF16 inline void softmax_rows16(const float* s, const int64_t* valid, float* m, float* l, float* o,
                                           int64_t dh, uint32_t* pa) {
  const Exp2 exp2;
  const __m512 ninf = _mm512_set1_ps(kNegInf);
  __mmask16 m0[kT], m1[kT];
  __m512 part[kT];
  block_row_maxima(s, valid, m0, m1, part);
  const __m512 m_old = _mm512_loadu_ps(m);
  const __m512 m_new = _mm512_max_ps(m_old, reduce_rows16(part, MaxOp()));
  // Rows that have seen no key yet keep m = -inf, l = 0 and weights 0.
  const __mmask16 live = _mm512_cmp_ps_mask(m_new, ninf, _CMP_NEQ_OQ);
  const __m512 corr =
      _mm512_maskz_mov_ps(live, exp2(_mm512_sub_ps(m_old, m_new)));  // 0 where m_old is -inf
  alignas(64) float mn[kT], cr[kT];
  _mm512_store_ps(mn, m_new);
  _mm512_store_ps(cr, corr);
  for (int r = 0; r < kT; ++r) {
    __m512 p0 = _mm512_setzero_ps(), p1 = _mm512_setzero_ps();
    if ((live >> r) & 1) row_weights(exp2, s + r * kStep, m0[r], m1[r], mn[r], cr[r], o + r * dh, dh, p0, p1);
    _mm512_storeu_si512(pa + r * 16, (__m512i)_mm512_cvtne2ps_pbh(p1, p0));
    part[r] = _mm512_add_ps(p0, p1);
  }
  const __m512 sum = reduce_rows16(part, AddOp());
  const __m512 l_old = _mm512_loadu_ps(l);
  _mm512_storeu_ps(l, _mm512_mask_mov_ps(l_old, live, _mm512_fmadd_ps(l_old, corr, sum)));
  _mm512_storeu_ps(m, _mm512_mask_mov_ps(m_old, live, m_new));
}

// The work items of many-query attention, claimed one at a time as the
// threads go (a causal item's later queries see more keys, so items differ in
// cost): per item (query head h, rows [i0, i0 + 16)), per block of 32 keys up
// to the last row's causal end, S from the Tile, then the block's softmax
// and P·V from the Pv, and last each row's output from the Pv. make_tile()
// gives each thread its Tile, which has
//   void load(p, h, i0, rows)        query head h's rows [i0, i0 + rows),
//                                    rows <= 16, the rest as zero queries
//   void scores(int64_t block, int64_t rows, float* s)   S [16][32] in base
//                                    2 against the keys of block (kv head ·
//                                    blocks + index); rows past `rows` may
//                                    be left as they were (a short piece's
//                                    rows past nq are never output)
// and pv (shared by the threads) has
//   void block(s, valid, rows, block, m, l, o, scratch)   the online softmax
//                                    step and O [16][dh] += P·V for rows
//                                    [0, rows), row r seeing keys
//                                    [0, valid[r]) of the block; scratch has
//                                    kScratchU32 per thread
//   void finish(kvh, o, l, dst)      one row's output from its O and l
// Each row's arithmetic depends on its own query and visible keys alone
// (blocks past a row's end add exact zeros), so a causal prefill in pieces
// gives the bits of one call.
constexpr int64_t kScratchU32 = kT * kStep;

template <class MakeTile, class Pv>
void run_items_with(const AttentionParams& p, float* out, ThreadPool& pool, MakeTile make_tile, const Pv& pv) {
  const int64_t dh = p.head_dim, group = p.q_heads / p.kv_heads;
  const int64_t blocks = (p.nkv + kStep - 1) / kStep;
  const int64_t qblocks = (p.nq + kT - 1) / kT, items = p.q_heads * qblocks;
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    auto tile = make_tile();
    ScratchVector<uint32_t> scratch(static_cast<size_t>(kScratchU32));
    ScratchVector<float> o(static_cast<size_t>(kT * dh)), s(static_cast<size_t>(kT * kStep));
    for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const int64_t h = item / qblocks, i0 = item % qblocks * kT, rows = std::min(kT, p.nq - i0), kvh = h / group;
      tile.load(p, h, i0, rows);
      // Keys each row sees; rows past nq see what the last one does (their
      // output is dropped, but they must not be empty).
      int64_t end[kT], item_end = 0;
      for (int64_t r = 0; r < kT; ++r) {
        const int64_t i = i0 + std::min(r, rows - 1);
        end[r] = p.causal ? std::clamp<int64_t>(p.q_pos0 + i + 1, 0, p.nkv) : p.nkv;
        item_end = std::max(item_end, end[r]);
      }
      alignas(64) float m[kT], l[kT];
      std::fill(m, m + kT, kNegInf);
      std::fill(l, l + kT, 0.0f);
      std::fill(o.begin(), o.end(), 0.0f);
      for (int64_t j0 = 0; j0 < item_end; j0 += kStep) {
        const int64_t block = kvh * blocks + j0 / kStep;
        tile.scores(block, rows, s.data());
        int64_t valid[kT];
        for (int64_t r = 0; r < kT; ++r) valid[r] = end[r] - j0;
        pv.block(s.data(), valid, rows, block, m, l, o.data(), scratch.data());
      }
      for (int64_t r = 0; r < rows; ++r)
        pv.finish(kvh, o.data() + r * dh, l[r], out + (i0 + r) * p.out_stride + h * dh);
    }
  });
}

// P in bf16 (softmax_rows16 with Exp2, whose 2^0 must be exactly 1), P·V on
// vdpbf16ps from vp ([kv head][block][16 key pairs][dh] bf16 pairs,
// pack_v_block), out = O / l.
template <class Exp2>
struct Bf16Values {
  const uint32_t* vp;
  int64_t dh;
  QVL_AVX512_BF16 void block(const float* s, const int64_t* valid, int64_t rows, int64_t block, float* m, float* l,
                             float* o, uint32_t* pa) const {
    softmax_rows16<Exp2>(s, valid, m, l, o, dh, pa);
    const uint32_t* vb = vp + block * (kStep / 2 * dh);
    for (int64_t r0 = 0; r0 < rows; r0 += 4) {  // rows past nq: no output, no P·V
      int64_t c0 = 0;
      for (; c0 + 64 <= dh; c0 += 64) values<4, 4>(pa, r0, vb, dh, c0, o);
      if (c0 < dh) values<4, 2>(pa, r0, vb, dh, c0, o);  // dh is a multiple of 32
    }
  }
  void finish(int64_t, const float* o, float l, float* dst) const {
    const float inv = l > 0 ? 1.0f / l : 0.0f;
    for (int64_t j = 0; j < dh; ++j) dst[j] = o[j] * inv;
  }
};

template <class Exp2, class MakeTile>
void run_items(const AttentionParams& p, const uint32_t* vp, float* out, ThreadPool& pool, MakeTile make_tile) {
  run_items_with(p, out, pool, make_tile, Bf16Values<Exp2>{vp, p.head_dim});
}

}  // namespace qvl::bf16_dot_steps

#endif
