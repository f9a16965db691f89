// Many-query attention with vdpbf16ps (bf16_attention.h): FlashAttention's
// online softmax (Dao et al. 2022) over blocks of 32 keys, both products on
// AVX512-BF16, the AMX kernel's numbers (amx_attention.cpp):
//
//   per work item (one query head, 16 query rows), per block of 32 keys:
//     Sᵀ [32][16] = K·Qᵀ      lanes are query rows: one vdpbf16ps does a key
//                              x a pair of head dims for the 16 rows, the
//                              key's pair broadcast
//     m, l, Pᵀ = 2^(Sᵀ - m)    attention_steps::softmax_block_t, as on AMX
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
#include "ops/bf16_dot_steps.h"
#include "ops/cpu_features.h"
#include "ops/scratch.h"
#include "util/error.h"

namespace qvl::bf16dot {

bool attention_fits(const AttentionParams& p) { return amx::attention_fits(p); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

bool attention_usable() { return cpu_features().avx512 && cpu_features().avx512_bf16; }

namespace {

using attention_steps::kStep;
using attention_steps::kT;
using bf16_dot_steps::bf16_16;

// Kp of kv head h, block kb (zeros past nkv); see the file comment.
template <class T>
QVL_AVX512_BF16 void pack_k_block(const T* k, const AttentionParams& p, int64_t h, int64_t kb, uint32_t* kp) {
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
}

// Sᵀ [32][16] of one block (row stride 16): qt is pack_queries_t's Qᵀ,
// [dh/2 pairs][16 rows] uint32; kb one block of Kp.
QVL_AVX512_BF16 void scores_t(const uint32_t* qt, int64_t pairs, const uint32_t* kb, float* st) {
  using bf16_dot_steps::as_bh;
  for (int64_t k0 = 0; k0 < kStep; k0 += 16) {
    __m512 acc[16];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
    for (int64_t pc = 0; pc < pairs; ++pc) {
      const __m512i qv = _mm512_loadu_si512(qt + pc * kT);
      const uint32_t* keys = kb + pc * kStep + k0;
      for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_dpbf16_ps(acc[i], as_bh(qv), as_bh(_mm512_set1_epi32(static_cast<int>(keys[i]))));
    }
    for (int i = 0; i < 16; ++i) _mm512_storeu_ps(st + (k0 + i) * kT, acc[i]);
  }
}

// O [R][dh] rows r0.., columns [c0, c0 + 16·CT) += P·V for one block: pt is
// softmax_block_t's Pᵀ [16 key pairs][16 rows] uint32, vb one block of Vp.
template <int R, int CT>
QVL_AVX512_BF16 void values_t(const uint32_t* pt, int64_t r0, const uint32_t* vb, int64_t dh, int64_t c0, float* o) {
  using bf16_dot_steps::as_bh;
  __m512 acc[R][CT];
  for (int r = 0; r < R; ++r)
    for (int ct = 0; ct < CT; ++ct) acc[r][ct] = _mm512_loadu_ps(o + (r0 + r) * dh + c0 + ct * 16);
  for (int64_t kk = 0; kk < kStep / 2; ++kk) {
    __m512i vv[CT];
    for (int ct = 0; ct < CT; ++ct) vv[ct] = _mm512_loadu_si512(vb + kk * dh + c0 + ct * 16);
    for (int r = 0; r < R; ++r) {
      const __m512i pb = _mm512_set1_epi32(static_cast<int>(pt[kk * kT + r0 + r]));
      for (int ct = 0; ct < CT; ++ct) acc[r][ct] = _mm512_dpbf16_ps(acc[r][ct], as_bh(pb), as_bh(vv[ct]));
    }
  }
  for (int r = 0; r < R; ++r)
    for (int ct = 0; ct < CT; ++ct) _mm512_storeu_ps(o + (r0 + r) * dh + c0 + ct * 16, acc[r][ct]);
}

// O's rows in `rows` scaled by 2^by[r] (exact), as the AMX kernel's Oᵀ lanes.
QVL_AVX512_BF16 void rescale_rows(float* o, int64_t dh, __mmask16 rows, const float* by) {
  for (int r = 0; r < kT; ++r)
    if ((rows >> r) & 1) {
      const __m512 f = _mm512_set1_ps(by[r]);
      for (int64_t c = 0; c < dh; c += 16) _mm512_storeu_ps(o + r * dh + c, _mm512_scalef_ps(_mm512_loadu_ps(o + r * dh + c), f));
    }
}

// One thread's work items, claimed as they go (a causal item's later
// queries see more keys): per item (query head h, rows [i0, i0 + 16)), per
// block up to the last row's causal end, Sᵀ, the softmax step and P·V; then
// each row's output O / l. Each row's arithmetic depends on its own query
// and visible keys alone (blocks past a row's end add exact zeros, a rescale
// of the other rows' O is by 2^0), so a causal prefill in pieces gives the
// bits of one call.
QVL_AVX512_BF16 void run_items(const float* q, const uint32_t* kp, const uint32_t* vp, float* out,
                               const AttentionParams& p, std::atomic<int64_t>& next) {
  const int64_t dh = p.head_dim, pairs = dh / 2, group = p.q_heads / p.kv_heads;
  const int64_t blocks = (p.nkv + kStep - 1) / kStep, block_u32 = kStep * pairs;
  const int64_t qblocks = (p.nq + kT - 1) / kT, items = p.q_heads * qblocks;
  const float qscale = p.scale * 1.4426950408889634f;  // log2(e)
  ScratchVector<uint32_t> qt(static_cast<size_t>(pairs * kT)), pt(static_cast<size_t>(kT * kT));
  ScratchVector<float> o(static_cast<size_t>(kT * dh)), st(static_cast<size_t>(kStep * kT)),
      w(static_cast<size_t>(kStep * kT)), m(kT), l(kT);
  for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
    const int64_t h = item / qblocks, i0 = item % qblocks * kT, rows = std::min(kT, p.nq - i0), kvh = h / group;
    attention_steps::pack_queries_t(q + i0 * p.q_stride + h * dh, rows, p.q_stride, dh, qscale, 1, qt.data());
    alignas(64) int32_t end[kT];
    const auto [item_end, all_see] = attention_steps::item_keys(p.causal, p.q_pos0, p.nkv, i0, rows, end);
    std::fill(m.begin(), m.end(), attention_steps::kNegInf);
    std::fill(l.begin(), l.end(), 0.0f);
    std::fill(o.begin(), o.end(), 0.0f);
    for (int64_t j0 = 0; j0 < item_end; j0 += kStep) {
      const int64_t block = kvh * blocks + j0 / kStep;
      scores_t(qt.data(), pairs, kp + block * block_u32, st.data());
      alignas(64) float by[kT];
      const __mmask16 rescale = attention_steps::softmax_block_t<1>(st.data(), j0, end, j0 + kStep <= all_see, m.data(),
                                                                    l.data(), w.data(), by);
      attention_steps::pack_weights_cvt(w.data(), pt.data());  // as the AMX kernel on a CPU with AVX512-BF16
      if (rescale) rescale_rows(o.data(), dh, rescale, by);
      const uint32_t* vb = vp + block * block_u32;
      for (int64_t r0 = 0; r0 < rows; r0 += 4) {  // rows past nq: no output, no P·V
        int64_t c0 = 0;
        for (; c0 + 64 <= dh; c0 += 64) values_t<4, 4>(pt.data(), r0, vb, dh, c0, o.data());
        if (c0 < dh) values_t<4, 2>(pt.data(), r0, vb, dh, c0, o.data());  // dh is a multiple of 32
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
      float* dst = out + (i0 + r) * p.out_stride + h * dh;
      for (int64_t j = 0; j < dh; ++j) dst[j] = o[r * dh + j] * inv;
    }
  }
}

template <class T>
void attention_bf16(const float* q, const T* k, const T* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  if (!attention_fits(p))
    fail("attention: the bf16 kernel needs head_dim a multiple of 32 up to 256, not ", p.head_dim);
  if (!attention_usable()) fail("attention: the bf16 kernel needs AVX512-BF16, which this CPU lacks");
  if (p.nq <= 0) return;
  const int64_t dh = p.head_dim, pairs = dh / 2;
  const int64_t blocks = (p.nkv + kStep - 1) / kStep, block_u32 = kStep * pairs;  // K and V alike
  thread_local ScratchVector<uint32_t> kp_buf, vp_buf;                            // the caller's, kept across calls
  fit_scratch(kp_buf, static_cast<size_t>(p.kv_heads * blocks * block_u32));
  fit_scratch(vp_buf, static_cast<size_t>(p.kv_heads * blocks * block_u32));
  uint32_t* kp = kp_buf.data();
  uint32_t* vp = vp_buf.data();
  pool.parallel_for(p.kv_heads * blocks, [&](int64_t b0, int64_t b1, int) {
    for (int64_t item = b0; item < b1; ++item) {
      pack_k_block(k, p, item / blocks, item % blocks, kp + item * block_u32);
      bf16_dot_steps::pack_v_block(v, p, item / blocks, item % blocks, vp + item * block_u32);
    }
  });
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) { run_items(q, kp, vp, out, p, next); });
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
