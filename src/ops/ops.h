// Element-wise and row-wise kernels. Shapes are given beside each function;
// rows are contiguous unless a stride is passed. In-place (out == x) is allowed
// wherever noted.
#pragma once

#include <cstdint>
#include <span>

#include "ops/thread_pool.h"
#include "util/formats.h"

namespace qvl {

float bf16_to_f32(uint16_t v);
uint16_t f32_to_bf16(float v);  // round to nearest even, as torch does
void bf16_to_f32(const uint16_t* src, float* dst, int64_t n);

// IEEE half precision (the f16 KV cache). f32_to_f16 rounds to nearest even
// and saturates at ±65504 (a finite value never becomes inf); NaN stays NaN.
// f16_to_f32 is exact. The bulk forms give the same bits as the scalar ones.
uint16_t f32_to_f16(float v);
float f16_to_f32(uint16_t v);
void f32_to_f16(const float* src, uint16_t* dst, int64_t n);
void f16_to_f32(const uint16_t* src, float* dst, int64_t n);

// OCP FP8 E4M3 ("e4m3fn", the FP8 of fine-grained FP8 checkpoints): sign,
// 4 exponent bits of bias 7, 3 mantissa bits; exponent 0 is subnormal
// (m · 2^-9); no infinities; 0x7F and 0xFF are NaN; largest finite ±448.
// Exact (every E4M3 value is an f32). Spec: OCP 8-bit Floating Point
// Specification (OFP8) rev 1.0, table 1.
float e4m3_to_f32(uint8_t v);
inline bool e4m3_is_nan(uint8_t v) { return (v & 0x7f) == 0x7f; }
// dst[i] = e4m3_to_f32(src[i]) · scale for n codes (one FP8 block's row);
// returns the index of the first NaN code, or -1.
int64_t e4m3_to_f32_scaled(const uint8_t* src, int64_t n, float scale, float* dst);

// out[i, :] = table[ids[i], :] for a bf16 table [vocab, dim].
void embed_bf16(const uint16_t* table, int64_t dim, const int32_t* ids, int64_t n, float* out);

// RMSNorm per row: x [rows, dim] -> out = x / sqrt(mean(x²) + eps) * weight. out may alias x.
void rms_norm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps);
// LayerNorm per row with affine gamma/beta [dim]. out may alias x.
void layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
                float eps);

void gelu_tanh(float* x, int64_t n);  // in place, the tanh approximation
void gelu_erf(float* x, int64_t n);   // in place, exact
// out[i] = silu(gate[i]) * up[i]; out may alias gate or up.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
void add(const float* a, const float* b, float* out, int64_t n);  // out may alias a or b
void softmax(float* x, int64_t n);                                 // in place, max-subtracted
// log Σ exp(scale · x[i]) (scale > 0), max-subtracted; -inf entries add
// nothing, and all of them give -inf. Within ~1e-6 of the double-precision
// value for a 152k vocabulary (a token's log-probability).
double log_sum_exp(const float* x, int64_t n, float scale);
// Index of the first largest of x[0..n), n >= 1, as std::max_element gives
// it for numbers (greedy decoding over a vocabulary); NaN entries are never
// chosen unless all are NaN (then 0).
int64_t argmax(const float* x, int64_t n);

// Rotary embedding, rotate-half convention (pairs i and i + d/2 of each head):
// x [tokens, heads, head_dim] with token stride `stride` floats; cos/sin
// [tokens, head_dim/2] hold each token's angles (1-D, 2-D and M-RoPE differ only
// in how the model fills them).
void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
          const float* sin);

// Scaled dot-product attention, tiled so memory is O(positions · head_dim).
// q [nq, q_heads, d] (token stride q_stride), k/v [nkv, kv_heads, d] (token
// stride kv_stride), out [nq, q_heads, d] (token stride out_stride).
// GQA: q head h reads kv head h / (q_heads / kv_heads).
// causal: query i sits at kv position q_pos0 + i and sees kv positions <= that.
// out may be q itself (same stride): each query head is read in full before
// its output is written.
struct AttentionParams {
  int64_t nq = 0, nkv = 0;
  int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, kv_stride = 0, out_stride = 0;
  float scale = 0;  // usually 1/sqrt(head_dim)
  bool causal = false;
  int64_t q_pos0 = 0;
  // Exact: f32 arithmetic, as everywhere. Fast lets many queries (prefill,
  // vision) run with q, k, softmax weights and v rounded to bf16, on the AMX
  // unit (amx_attention.h) or with AVX512-BF16 (bf16_attention.h); where AMX
  // does not run, calls without a causal mask (vision) take Q·Kᵀ and P·V in
  // int8 on AVX512-VNNI instead (int8_attention.h). Elsewhere it changes
  // nothing.
  MatmulPrecision precision = MatmulPrecision::Exact;
  // A piece of a prompt (prefill), not decode: it takes the many-query kernel
  // at every nq, whose rows do not depend on the piece, so a prompt gets the
  // same bits however it was cut. A repeated request recomputes its last
  // prompt token alone; on the rows kernel that token's logits differed from
  // the uncached run's (bf16 Fast attention flipped a greedy token).
  bool prompt = false;
};
// Up to this many queries attention() takes the rows kernel, where each
// query's arithmetic depends on its own visible positions alone: a query
// among a short causal piece gets the bits it gets alone (nq = 1, nkv its
// causal end), as decode computes it. More queries, and prompt pieces of
// any length, take the tiled kernel.
constexpr int64_t kAttentionRowQueries = 15;
void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p, ThreadPool& pool);
// The same with K/V stored in f16 (ops above): each element is widened
// exactly before any arithmetic, so the result equals attention() on the
// widened K/V, bit for bit.
void attention(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
               ThreadPool& pool);

// One sequence's attention in a batched decode step: its queries, output and
// own K/V, f32 (k, v) or f16 (k16, v16; the other pair null).
struct AttentionJob {
  const float* q = nullptr;
  float* out = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const uint16_t* k16 = nullptr;
  const uint16_t* v16 = nullptr;
  AttentionParams p;
};
// Every job as attention() computes it alone, bit for bit. The jobs that take
// the rows kernel (decode) share one parallel step over the threads, so the
// streams of a batched decode cost one dispatch per layer, not one each.
void attention_batch(std::span<const AttentionJob> jobs, ThreadPool& pool);

// Whether many-query attention (prefill, vision) runs on the AMX tile unit
// here for Fast precision (amx_attention.h): "used", or why not ("no
// AMX-BF16 on this CPU", ...); and the kernel attention() runs for p, e.g.
// "tiled, AMX tdpbf16ps, bf16 inputs" or "tiled, f32 FMA".
const char* attention_amx_status();
const char* attention_kernel_name(const AttentionParams& p);

// Bidirectional attention within segments (several images in one call):
// tokens [seg_starts[s], seg_starts[s+1]) attend only to each other.
// q, k, v, out as above with nq == nkv == seg_starts[num_segments].
void attention_segments(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                        const int64_t* seg_starts, int64_t num_segments, ThreadPool& pool);

}  // namespace qvl
