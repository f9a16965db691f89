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

// S [R][32] (row stride kStep) = Q·Kᵀ for R query rows: qa is
// pack_queries' [dh/32 steps][16 rows][32] bf16, i.e. row r's pair pc at
// (pc / 16)·256 + r·16 + pc % 16 as uint32; kb one block of Kp.
template <int R>
QVL_AVX512_BF16 void scores(const uint32_t* qa, int64_t r0, int64_t pairs, const uint32_t* kb, float* s) {
  using bf16_dot_steps::as_bh;
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

// One thread's query rows of an item, bf16 (bf16_dot_steps::run_items' Tile).
struct QueryTile {
  const uint32_t* kp;  // Kp, all kv heads and blocks
  int64_t pairs;
  ScratchVector<uint16_t> qa;
  void load(const AttentionParams& p, int64_t h, int64_t i0, int64_t rows) {
    const float qscale = p.scale * 1.4426950408889634f;  // log2(e)
    attention_steps::pack_queries(q + i0 * p.q_stride + h * p.head_dim, rows, p.q_stride, p.head_dim, qscale, 1,
                                  qa.data());
  }
  void scores(int64_t block, int64_t rows, float* s) const {
    const uint32_t* qa32 = reinterpret_cast<const uint32_t*>(qa.data());
    const uint32_t* kb = kp + block * kStep * pairs;
    bf16dot::scores<8>(qa32, 0, pairs, kb, s);
    if (rows > 8) bf16dot::scores<8>(qa32, 8, pairs, kb, s + 8 * kStep);
  }
  const float* q;
};

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
  bf16_dot_steps::run_items<bf16_dot_steps::Exp2Degree7>(p, vp, out, pool, [&] {
    return QueryTile{kp, pairs, ScratchVector<uint16_t>(static_cast<size_t>(dh * kT)), q};
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
