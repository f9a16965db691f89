// Scalar reference twins of every kernel: plain loops, f32 accumulation in
// index order. They are the specification the SIMD kernels are tested against,
// and the fallback for shapes the fast paths do not cover.
#pragma once

#include <cstdint>

#include <span>

#include "ops/matmul.h"
#include "ops/moe.h"
#include "ops/ops.h"

namespace qvl::scalar {

void bf16_to_f32(const uint16_t* src, float* dst, int64_t n);
void rms_norm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps);
void layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
                float eps);
void gelu_tanh(float* x, int64_t n);
void gelu_erf(float* x, int64_t n);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
void add(const float* a, const float* b, float* out, int64_t n);
void softmax(float* x, int64_t n);
double log_sum_exp(const float* x, int64_t n, float scale);
int64_t argmax(const float* x, int64_t n);
void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
          const float* sin);

// Rows [row_begin, row_end) of y = x · Wᵀ (+ bias); W in any format.
void matmul_rows(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
                 int64_t ldy, int64_t row_begin, int64_t row_end);
void matmul(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
            int64_t ldy);

// x rounded to bf16 as AVX-512 BF16's vcvtne2ps2bf16 does (Intel SDM,
// convert_fp32_to_bfloat16): NaN quieted, zero and denormals to a signed
// zero, otherwise round to nearest even.
uint16_t round_bf16(float v);
// The specification of MatmulPrecision::Fast (simd_gemm_bf16.cpp):
// y = round_bf16(x) · Wᵀ (+ bias) for BF16 W. Per output, k is taken in
// pairs (an odd k padded with a zero) summed in f32 in order, each pair as
// vdpbf16ps does (Intel SDM): acc += x[2p+1]·w[2p+1], then acc += x[2p]·w[2p]
// (a product of two bf16 is exact in f32), denormal weights read as zero.
// Unlike vdpbf16ps, a denormal sum is not flushed to zero (|difference| <= 2^-126).
void matmul_bf16_fast(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
                      int64_t ldy);

// One query against kv positions [kv_begin, kv_end) for one head, online softmax.
void attention_row(const float* q, const float* k, const float* v, float* out, int64_t kv_begin, int64_t kv_end,
                   int64_t head_dim, int64_t kv_stride, float scale);
void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p);
// The int8 attention kernel's arithmetic (int8_attention.h), f32 K/V: the
// same bits without a causal mask (P·V in integers), and up to the f32 order
// of each block's bf16 P·V sum (vdpbf16ps's own) with one.
void attention_int8_fast(const float* q, const float* k, const float* v, float* out, const AttentionParams& p);

// The mixture-of-experts kernels (moe.h): the top-k over scalar softmax and
// argmax, and each expert's rows through the scalar matmul (whatever the
// call's token count: the kernels' choice of path changes only rounding).
void router_top_k(const float* logits, int64_t m, int64_t experts, int64_t k, bool renormalise, float* probs,
                  int32_t* ids, float* weights);
void grouped_matmul(const float* x, int64_t ldx, const ExpertGroups& g, std::span<const GroupedOutput> outs);

// Weight of row r, column c of a quantized/any matrix, dequantized to f32.
float weight_at(const WeightMatrix& w, int64_t r, int64_t c);

}  // namespace qvl::scalar
