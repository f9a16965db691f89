// Internal: many-query attention (prefill, vision) with Q·Kᵀ in int8 on
// AVX512-VNNI (vpdpbusd), reached through attention() for Fast precision in
// calls without a causal mask (vision) where the AMX unit does not run
// (attention.cpp says why not causal ones, though the kernel takes them).
// Non-causal calls take P·V in integers on vpdpbusd too, causal ones in bf16
// on AVX512-BF16 (vdpbf16ps):
// SageAttention's scheme (Zhang et al. 2024, arXiv 2410.02367) with a
// per-row quantization of Q and K, and for P·V SageAttention2's (Zhang et
// al. 2024, arXiv 2411.10958: P in 8 bits, V with one scale a channel), with
// u8 for P where its GPUs take FP8, and P's scale per block of keys.
//
// The numbers, which scalar::attention_int8_fast computes in plain C++:
//   K smoothing  non-causal calls only: each kv head's K less its mean over
//                the call's keys (mean_c = (Σ_j k[j][c], in key order) / nkv
//                in f32), which moves every score of a query row by the same
//                amount and so leaves the softmax unchanged (SageAttention
//                §3.2). Causal calls keep K as it is, so that a prefill in
//                pieces (whose keys grow from call to call) gives the bits of
//                one call.
//   rounding     a row x (a query head scaled by scale·log2 e; a key head,
//                smoothed) becomes x_c ≈ s·n_c with a = max_c |x_c|,
//                n_c = clamp(rne(x_c · (127 / a)), ±127), s = a / 127 (all
//                zero where a is 0), all in f32.
//   scores       S_ij = f32(Σ_c n_c(q_i)·n_c(k_j)) · (s(q_i) · s(k_j)), base 2:
//                the integer sum is exact (vpdpbusd on q + 128 as u8, less
//                128·Σ_c n_c(k_j) per key), and so is its conversion
//                (|Σ| <= 256·127² < 2^24).
//   softmax      per query row, blocks of 32 keys at fixed positions, with a
//                running max m and sum l (FlashAttention's online softmax);
//                2^x = 2^n · poly(f), x = n + f with n = rne(x), poly = 1 +
//                c1·f + ... + c4·f⁴ (kExp2Poly), 2^-inf = 0.
//   values, non-causal (vision; a call without keys outputs zeros, as a
//                causal one)
//                V less its channel means over the call's keys (mean as K's),
//                in int8 with one scale a (kv head, channel): a_c = max_j
//                |v[j][c] - mean_c|, n = clamp(rne((v - mean_c) · (127 /
//                a_c)), ±127), sv_c = a_c / (127·255) (P's 255 folded in; 0
//                where a_c is 0). The scale cannot vary along the keys within
//                a block's integer sums; one for the call keeps the output's
//                last step one multiply-add. Per block, with mb its maximum
//                score and m_new = max(m, mb): P' = 2^(S - mb) (the block's
//                maximum exactly 1), the u8 codes u = rne(255 · P'), bs =
//                2^(mb - m_new); O and l are rescaled by corr = 2^(m -
//                m_new), then O_c += bs · f32(Σ_j u_j · n_jc) (one fused
//                multiply-add; |Σ| <= 32·255·127 < 2^24, exact) and l = l ·
//                corr + bs · ΣP' (fused, the product first; ΣP' of the
//                unrounded weights in softmax_rows16's order). out_c = (O_c
//                · (1 / l)) · sv_c + mean_c (fused).
//                Why so, measured on P·V alone (exact f32 scores, random
//                rows of 64 dims, relative L2 against exact attention; bf16
//                P and V give 0.0015-0.002): codes against the running max
//                lose every weight under 1/510 of it, so a diffuse row of
//                4096 keys under one key 2^10 above them went to 0.068 (3.1
//                with l from the rounded codes), plain random rows of 4096
//                keys to 0.027; against each block's max, 0.0069 and
//                0.0060-0.0065. Taking the means out of V: rows over V with
//                per-channel offsets 1.2e-4 against 2.7-2.9e-4 without (bf16:
//                2.0e-4). l from the unrounded weights against l from the
//                codes (which would make the output a weighted mean of
//                weights summing to 1): the same within 2 % on random,
//                peaked and flat rows, but 0.0069 against 0.0092 on the
//                diffuse row under one key (where many codes round to 0,
//                which then pulls the output toward the mean instead of
//                spreading their weight over the other keys);
//                in the kernel tests 0.0081 against 0.0083 there, the others
//                within 0.0005 either way, and the q8 fixture model's vision
//                output 0.02161 against 0.02151 (noise: 0.02156 with bf16
//                P·V, 0.02058 with f32 attention).
//                Together with int8 Q·Kᵀ, the ops tests' non-causal rows went
//                from 0.0044-0.0073 to 0.0070-0.0096 relative L2.
//   values, causal
//                P = 2^(S - m_new) with l the sum of these unrounded weights
//                (bf16_dot_steps::softmax_rows16), rounded to bf16 to
//                nearest even; V rounded to bf16 to nearest even; each
//                block's P·V summed in f32 from zero (vdpbf16ps: pairs of
//                keys, the odd one first) and added to the output; out = O ·
//                (1 / l).
// Non-causal calls give the twin's bits; in causal ones everything up to P
// is the twin's bits, and only the f32 order within a block's P·V (the
// CPU's vdpbf16ps) may differ. No score matrix beyond one block of 32 keys.
#pragma once

#include <cstdint>

#include "ops/ops.h"

namespace qvl::int8dot {

// The weights need only bf16's 2^-9, so 2^f on [-1/2, 1/2] is taken to
// degree 4 (AMX's is degree 7): coefficients c1..c4 fitted to the least
// relative error with 2^0 = 1 exact, so a block that changes no maximum
// rescales nothing and a block's maximum weight has the u8 code 255 (Lawson's iteration on 4001 points; max relative error
// 2.9e-6).
constexpr float kExp2Poly[4] = {0.6931242527726512f, 0.24024099037478872f, 0.05590593393017421f,
                                0.009582644624635542f};

// Whether this CPU runs the kernel: AVX-512 with VNNI and BF16.
bool attention_usable();
// Whether it takes these shapes: head_dim a multiple of 32, at most 256.
bool attention_fits(const AttentionParams& p);

void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p, ThreadPool& pool);
// f16 K/V (the KV cache) are widened exactly first: the bits of attention()
// on the widened values.
void attention(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
               ThreadPool& pool);

}  // namespace qvl::int8dot
