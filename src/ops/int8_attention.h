// Internal: many-query attention (prefill, vision) with Q·Kᵀ in int8 on
// AVX512-VNNI (vpdpbusd) and P·V in bf16 on AVX512-BF16 (vdpbf16ps), reached
// through attention() for Fast precision in calls without a causal mask
// (vision) where the AMX unit does not run (attention.cpp says why not
// causal ones, though the kernel takes them):
// SageAttention's scheme (Zhang et al. 2024, arXiv 2410.02367) with a
// per-row quantization of Q and K.
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
//   softmax      per query row, blocks of 32 keys at fixed positions, each
//                with bf16_dot_steps::softmax_rows16's online step (running
//                max m, sum l of the unrounded weights 2^(S - m), the
//                partial output rescaled by 2^(m_old - m_new)), P rounded to
//                bf16 to nearest even; 2^x = 2^n · poly(f), x = n + f with
//                n = rne(x), poly = 1 + c1·f + ... + c4·f⁴ (kExp2Poly).
//   values       V rounded to bf16 to nearest even; each block's P·V summed
//                in f32 from zero (vdpbf16ps: pairs of keys, the odd one
//                first) and added to the output; out = O · (1 / l).
// Everything up to P is the twin's bits; only the f32 order within a
// block's P·V (the CPU's vdpbf16ps) may differ. No score matrix beyond one
// block of 32 keys.
#pragma once

#include <cstdint>

#include "ops/ops.h"

namespace qvl::int8dot {

// The weights need only bf16's 2^-9, so 2^f on [-1/2, 1/2] is taken to
// degree 4 (AMX's is degree 7): coefficients c1..c4 fitted to the least
// relative error with 2^0 = 1 exact, so a block that changes no maximum
// rescales nothing (Lawson's iteration on 4001 points; max relative error
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
