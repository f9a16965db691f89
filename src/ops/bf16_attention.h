// Internal: many-query attention (prefill, vision) with AVX512-BF16 dot
// products (vdpbf16ps), reached through attention() for Fast precision where
// the AMX unit does not run.
//
// The same arithmetic as the AMX kernel's Fast precision (amx_attention.h),
// which is its specification (amx::attention_emulated): queries scaled by
// scale·log2 e, then Q, K, the softmax weights P and V rounded to bf16 (to
// nearest even, denormals to zero), every product exact and summed in f32;
// per query row, blocks of 32 keys at fixed positions, each with its online
// softmax step in base 2 (running max m, sum l of the unrounded weights, the
// partial output rescaled by 2^(m_old - m_new)) and its P·V added to the
// output. Only the order of f32 additions within a score and within a
// block's P·V may differ. No score matrix beyond one block of 32 keys.
#pragma once

#include <cstdint>

#include "ops/ops.h"

namespace qvl::bf16dot {

// Whether this CPU runs the kernel: AVX-512 with AVX512-BF16.
bool attention_usable();
// Whether it takes these shapes: head_dim a multiple of 32, at most 256.
bool attention_fits(const AttentionParams& p);

void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p, ThreadPool& pool);
// f16 K/V (the KV cache) are widened exactly before they are rounded.
void attention(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
               ThreadPool& pool);

}  // namespace qvl::bf16dot
