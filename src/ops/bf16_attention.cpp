// Many-query attention with vdpbf16ps (bf16_attention.h): FlashAttention's
// online softmax (Dao et al. 2022) over blocks of 32 keys, both products on
// AVX512-BF16:
//
//   per work item (one query head, 16 query rows), per block of 32 keys:
//     S [16][32] = Q·Kᵀ        lanes are keys: one vdpbf16ps does 16 keys x
//                              a pair of head dims, Q's pair broadcast
//     m, l, P = 2^(S - m)      attention_steps::softmax_block, as on AMX
//     O [16][dh] += P·V        lanes are head dims: 16 columns x a pair of
//                              keys, P's pair broadcast
//
// K and V are rounded to bf16 and repacked once per call, per kv head and
// block of 32 keys, so that each product's pairs are whole 32-bit lanes:
//   Kp [kv head][block][dh/2 pairs][32 keys]   the pair (k[j][2c], k[j][2c+1])
//   Vp [kv head][block][16 key pairs][dh]      the pair (v[2t][c], v[2t+1][c])
// A block of one head is 8 KB of K and V for dh 64, read from L2 by every
// query item of the head.
#include "ops/bf16_attention.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "ops/amx_attention.h"
#include "ops/attention_steps.h"
#include "ops/cpu_features.h"
#include "ops/scratch.h"
#include "util/error.h"

namespace qvl::bf16dot {

bool attention_fits(const AttentionParams& p) { return amx::attention_fits(p); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

bool attention_usable() { return cpu_features().avx512 && cpu_features().avx512_bf16; }

namespace {

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

// Kp and Vp of kv head h, block kb (zeros past nkv); see the file comment.
template <class T>
QVL_AVX512_BF16 void pack_block(const T* k, const T* v, const AttentionParams& p, int64_t h, int64_t kb, uint32_t* kp,
                                uint32_t* vp) {
  const int64_t dh = p.head_dim, pairs = dh / 2;
  alignas(64) uint32_t row[128];  // one key's dh/2 pairs (dh <= 256)
  for (int64_t key = 0; key < kStep; ++key) {
    const int64_t j = kb * kStep + key;
    if (j < p.nkv) {
      const T* src = k + j * p.kv_stride + h * dh;
      for (int64_t c = 0; c < dh; c += 16)
        _mm256_store_si256(reinterpret_cast<__m256i*>(row + c / 2), bf16_16(src + c));
    } else {
      std::fill(row, row + pairs, 0u);
    }
    for (int64_t pc = 0; pc < pairs; ++pc) kp[pc * kStep + key] = row[pc];
  }
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

QVL_AVX512_BF16 inline __m512bh as_bh(__m512i x) { return (__m512bh)x; }

// S [R][32] (row stride kStep) = Q·Kᵀ for R query rows: qa is
// pack_queries' [dh/32 steps][16 rows][32] bf16, i.e. row r's pair pc at
// (pc / 16)·256 + r·16 + pc % 16 as uint32; kb one block of Kp.
template <int R>
QVL_AVX512_BF16 void scores(const uint32_t* qa, int64_t r0, int64_t pairs, const uint32_t* kb, float* s) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t pc = 0; pc < pairs; ++pc) {
    const __m512i k0 = _mm512_loadu_si512(kb + pc * kStep), k1 = _mm512_loadu_si512(kb + pc * kStep + 16);
    const uint32_t* qrow = qa + (pc / 16) * kT * 16 + pc % 16;
    for (int r = 0; r < R; ++r) {
      const __m512i qb = _mm512_set1_epi32(static_cast<int>(qrow[(r0 + r) * 16]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], as_bh(qb), as_bh(k0));
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], as_bh(qb), as_bh(k1));
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(s + r * kStep, acc[r][0]);
    _mm512_storeu_ps(s + r * kStep + 16, acc[r][1]);
  }
}

// O [R][dh] columns [c0, c0 + 16·CT) += P·V for one block: pa is
// softmax_block's P [16][32] bf16 (row r's key pair kk at r·16 + kk as
// uint32), vb one block of Vp. The block's sum starts at zero and is then
// added to O, as the AMX kernel adds its C tiles.
template <int R, int CT>
QVL_AVX512_BF16 void values(const uint32_t* pa, int64_t r0, const uint32_t* vb, int64_t dh, int64_t c0, float* o) {
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
// ~8 dependent shuffles and ops a row for _mm512_reduce_*).
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

// One block's online softmax for the 16 rows of an item at once: the numbers
// of attention_steps::softmax_block (the specification), with the rows'
// maxima and sums reduced together (reduce_rows16), the rescale factor
// 2^(m_old - m_new) from the same polynomial as the weights, and P rounded by
// vcvtne2ps2bf16 (to nearest even, denormals to zero, as split_regs does for
// Fast). s [16][32] scores in base 2, row r seeing keys [0, valid[r]); P goes
// to pa [16][16] pairs; o [16][dh] is rescaled, m and l updated. Only the
// order of the sum of a row's weights differs from the specification's, and
// the rescale factor by the polynomial's error (< 6e-9 relative).
QVL_AVX512_BF16 void softmax_rows16(const float* s, const int64_t* valid, float* m, float* l, float* o, int64_t dh,
                                    uint32_t* pa) {
  using attention_steps::exp2_non_positive;
  const __m512 ninf = _mm512_set1_ps(kNegInf);
  __mmask16 m0[kT], m1[kT];
  __m512 part[kT];
  for (int r = 0; r < kT; ++r) {
    const int64_t n = std::clamp<int64_t>(valid[r], 0, kStep);
    m0[r] = static_cast<__mmask16>(n >= 16 ? 0xffff : (1u << n) - 1);
    m1[r] = static_cast<__mmask16>(n <= 16 ? 0 : n >= 32 ? 0xffff : (1u << (n - 16)) - 1);
    part[r] = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, m0[r], s + r * kStep),
                            _mm512_mask_loadu_ps(ninf, m1[r], s + r * kStep + 16));
  }
  const __m512 m_old = _mm512_loadu_ps(m);
  const __m512 m_new = _mm512_max_ps(m_old, reduce_rows16(part, MaxOp()));
  // Rows that have seen no key yet keep m = -inf, l = 0 and weights 0.
  const __mmask16 live = _mm512_cmp_ps_mask(m_new, ninf, _CMP_NEQ_OQ);
  const __m512 corr =
      _mm512_maskz_mov_ps(live, exp2_non_positive(_mm512_sub_ps(m_old, m_new)));  // 0 where m_old is -inf
  alignas(64) float mn[kT], cr[kT];
  _mm512_store_ps(mn, m_new);
  _mm512_store_ps(cr, corr);
  for (int r = 0; r < kT; ++r) {
    __m512 p0 = _mm512_setzero_ps(), p1 = _mm512_setzero_ps();
    if ((live >> r) & 1) {
      const __m512 vm = _mm512_set1_ps(mn[r]);
      p0 = exp2_non_positive(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, m0[r], s + r * kStep), vm));
      p1 = exp2_non_positive(_mm512_sub_ps(_mm512_mask_loadu_ps(ninf, m1[r], s + r * kStep + 16), vm));
      if (cr[r] != 1.0f) {
        const __m512 vc = _mm512_set1_ps(cr[r]);
        for (int64_t c = 0; c < dh; c += 16)
          _mm512_storeu_ps(o + r * dh + c, _mm512_mul_ps(_mm512_loadu_ps(o + r * dh + c), vc));
      }
    }
    _mm512_storeu_si512(pa + r * 16, (__m512i)_mm512_cvtne2ps_pbh(p1, p0));
    part[r] = _mm512_add_ps(p0, p1);
  }
  const __m512 sum = reduce_rows16(part, AddOp());
  _mm512_storeu_ps(l, _mm512_mask_add_ps(_mm512_loadu_ps(l), live, _mm512_mul_ps(_mm512_loadu_ps(l), corr), sum));
  _mm512_storeu_ps(m, _mm512_mask_mov_ps(m_old, live, m_new));
}

template <class T>
void attention_bf16(const float* q, const T* k, const T* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  if (!attention_fits(p))
    fail("attention: the bf16 kernel needs head_dim a multiple of 32 up to 256, not ", p.head_dim);
  if (!attention_usable()) fail("attention: the bf16 kernel needs AVX512-BF16, which this CPU lacks");
  if (p.nq <= 0) return;
  const int64_t dh = p.head_dim, pairs = dh / 2, group = p.q_heads / p.kv_heads;
  const int64_t blocks = (p.nkv + kStep - 1) / kStep, block_u32 = kStep * pairs;  // K and V alike
  thread_local ScratchVector<uint32_t> kp_buf, vp_buf;                            // the caller's, kept across calls
  fit_scratch(kp_buf, static_cast<size_t>(p.kv_heads * blocks * block_u32));
  fit_scratch(vp_buf, static_cast<size_t>(p.kv_heads * blocks * block_u32));
  uint32_t* kp = kp_buf.data();
  uint32_t* vp = vp_buf.data();
  pool.parallel_for(p.kv_heads * blocks, [&](int64_t b0, int64_t b1, int) {
    for (int64_t item = b0; item < b1; ++item)
      pack_block(k, v, p, item / blocks, item % blocks, kp + item * block_u32, vp + item * block_u32);
  });
  const float qscale = p.scale * 1.4426950408889634f;  // log2(e)
  const int64_t qblocks = (p.nq + kT - 1) / kT, items = p.q_heads * qblocks;
  // Items of unequal cost (a causal item's later queries see more keys):
  // claimed one at a time as the threads go.
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    ScratchVector<uint16_t> qa(static_cast<size_t>(dh * kT));
    ScratchVector<uint32_t> pa(static_cast<size_t>(kT * kStep / 2));
    ScratchVector<float> o(static_cast<size_t>(kT * dh)), s(static_cast<size_t>(kT * kStep));
    const uint32_t* qa32 = reinterpret_cast<const uint32_t*>(qa.data());
    const uint32_t* pa32 = pa.data();
    for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const int64_t h = item / qblocks, i0 = item % qblocks * kT, rows = std::min(kT, p.nq - i0), kvh = h / group;
      attention_steps::pack_queries(q + i0 * p.q_stride + h * dh, rows, p.q_stride, dh, qscale, 1, qa.data());
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
        scores<8>(qa32, 0, pairs, kp + block * block_u32, s.data());
        scores<8>(qa32, 8, pairs, kp + block * block_u32, s.data() + 8 * kStep);
        int64_t valid[kT];
        for (int64_t r = 0; r < kT; ++r) valid[r] = end[r] - j0;
        softmax_rows16(s.data(), valid, m, l, o.data(), dh, pa.data());
        const uint32_t* vb = vp + block * block_u32;
        for (int64_t r0 = 0; r0 < kT; r0 += 4) {
          int64_t c0 = 0;
          for (; c0 + 64 <= dh; c0 += 64) values<4, 4>(pa32, r0, vb, dh, c0, o.data());
          if (c0 < dh) values<4, 2>(pa32, r0, vb, dh, c0, o.data());  // dh is a multiple of 32
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        float* dst = out + (i0 + r) * p.out_stride + h * dh;
        const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
        for (int64_t j = 0; j < dh; ++j) dst[j] = o[r * dh + j] * inv;
      }
    }
  });
}

}  // namespace

void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  attention_bf16(q, k, v, out, p, pool);
}
void attention(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
               ThreadPool& pool) {
  attention_bf16(q, k, v, out, p, pool);
}

#else  // not x86-64

bool attention_usable() { return false; }
void attention(const float*, const float*, const float*, float*, const AttentionParams&, ThreadPool&) {
  fail("attention: the bf16 kernel is x86-64 only");
}
void attention(const float*, const uint16_t*, const uint16_t*, float*, const AttentionParams&, ThreadPool&) {
  fail("attention: the bf16 kernel is x86-64 only");
}

#endif

}  // namespace qvl::bf16dot
