// Attention dispatch: splits (query, head) work across threads.
#include <algorithm>

#include "ops/amx_attention.h"
#include "ops/bf16_attention.h"
#include "ops/int8_attention.h"
#include "ops/ops.h"
#include "ops/scalar.h"
#include "ops/simd_attention.h"
#include "util/error.h"

namespace qvl {
namespace {

void check(const AttentionParams& p) {
  if (p.q_heads <= 0 || p.kv_heads <= 0 || p.head_dim <= 0 || p.q_heads % p.kv_heads != 0)
    fail("attention: q_heads ", p.q_heads, " must be a positive multiple of kv_heads ", p.kv_heads);
  if (p.q_stride < p.q_heads * p.head_dim || p.out_stride < p.q_heads * p.head_dim ||
      p.kv_stride < p.kv_heads * p.head_dim)
    fail("attention: token stride smaller than heads x head_dim");
}

// Fast many-query attention on the AMX unit where it runs. Not Exact: with
// its six products of bf16 parts, the work around the tiles alone (packing
// and the AVX-512 softmax, timed once with the tile products left out, on
// vision's 784 x 784 x 16 heads of 64, Zen 5 VM: 27.5 ms) exceeds the whole
// f32 FMA kernel (16.4 ms); Fast's 11.1 ms leaves room. That timing's
// throwaway program was not kept; `bench/ops_report --only attention` times
// the kernels that ship.
bool amx_runs(const AttentionParams& p) {
  return p.precision == MatmulPrecision::Fast && amx::attention_fits(p) && amx::attention_usable();
}

// Fast many-query attention where AMX does not run. Non-causal calls
// (vision, most of a page's attention) take Q·Kᵀ and P·V in int8 on
// AVX512-VNNI with K and V smoothed (int8_attention.h); causal ones
// (prefill), whose K cannot be smoothed, AVX512-BF16 dot products, the same numbers as the AMX
// kernel's Fast (bf16_attention.h): int8 Q·Kᵀ without smoothing took the
// fixture model's prompt logits from 0.031-0.139 to 0.031-0.158 relative
// rms error (three of five prompts ~0.04 to ~0.10; FastPrecisionGolden).
bool int8_dot_runs(const AttentionParams& p) {
  return p.precision == MatmulPrecision::Fast && !p.causal && !amx_runs(p) && int8dot::attention_fits(p) &&
         int8dot::attention_usable();
}
bool bf16_dot_runs(const AttentionParams& p) {
  return p.precision == MatmulPrecision::Fast && !amx_runs(p) && !int8_dot_runs(p) && bf16dot::attention_fits(p) &&
         bf16dot::attention_usable();
}

// Few queries: stream K/V once per kv head (decode). Many, or a prompt
// piece: tiles.
bool rows_run(const AttentionParams& p) { return p.nq <= kAttentionRowQueries && !p.prompt; }

template <class T>
void dispatch(const float* q, const T* k, const T* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  check(p);
  if (p.nq <= 0) return;
  if (rows_run(p))
    simd::attention_rows(q, k, v, out, p, pool);
  else if (amx_runs(p))
    amx::attention(q, k, v, out, p, pool);
  else if (int8_dot_runs(p))
    int8dot::attention(q, k, v, out, p, pool);
  else if (bf16_dot_runs(p))
    bf16dot::attention(q, k, v, out, p, pool);
  else
    simd::attention_tiled(q, k, v, out, p, pool);
}

}  // namespace

const char* attention_amx_status() { return amx::attention_status(); }

const char* attention_kernel_name(const AttentionParams& p) {
  if (rows_run(p)) return "rows (split-KV), f32 FMA";
  if (amx_runs(p)) return "tiled, AMX tdpbf16ps, bf16 inputs";
  if (int8_dot_runs(p)) return "tiled, AVX512-VNNI vpdpbusd QKᵀ and PV";
  return bf16_dot_runs(p) ? "tiled, AVX512-BF16 vdpbf16ps, bf16 inputs" : "tiled, f32 FMA";
}

void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
               ThreadPool& pool) {
  dispatch(q, k, v, out, p, pool);
}

void attention(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
               ThreadPool& pool) {
  dispatch(q, k, v, out, p, pool);
}

void attention_batch(std::span<const AttentionJob> jobs, ThreadPool& pool) {
  bool all_rows = true;
  for (const AttentionJob& j : jobs) {
    check(j.p);
    if ((j.k16 == nullptr) == (j.k == nullptr)) fail("attention_batch: a job needs f32 or f16 K/V, not both or neither");
    all_rows &= rows_run(j.p) && j.p.nq > 0;
  }
  if (all_rows) return simd::attention_rows_batch(jobs, pool);
  for (const AttentionJob& j : jobs) {
    if (j.k16) dispatch(j.q, j.k16, j.v16, j.out, j.p, pool);
    else dispatch(j.q, j.k, j.v, j.out, j.p, pool);
  }
}

void attention_segments(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                        const int64_t* seg_starts, int64_t num_segments, ThreadPool& pool) {
  check(p);
  for (int64_t s = 0; s < num_segments; ++s) {
    int64_t b = seg_starts[s], e = seg_starts[s + 1];
    if (e < b) fail("attention_segments: segment ", s, " ends (", e, ") before it starts (", b, ")");
    AttentionParams sp = p;
    sp.nq = sp.nkv = e - b;
    sp.q_pos0 = 0;
    attention(q + b * p.q_stride, k + b * p.kv_stride, v + b * p.kv_stride, out + b * p.out_stride, sp, pool);
  }
}

}  // namespace qvl
