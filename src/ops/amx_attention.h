// Internal: tiled attention on the AMX tile unit (tdpbf16ps), reached
// through attention() for many queries (prefill, vision). A template over
// the tile instructions (amx_tiles.h), run on the unit or emulated.
#pragma once

#include <cstdint>

#include "ops/amx_tiles.h"
#include "ops/ops.h"

namespace qvl::amx {

// Whether attention runs on the unit here: the CPU has AMX-BF16 and AVX-512
// (the softmax between the tile products), Linux grants the tile state, and
// a first exact and fast call on the unit agreed with its emulation within
// what f32 addition orders can make of it (once per process). Where any of
// that fails, the AVX-512 kernels run instead.
bool attention_usable();
const char* attention_status();  // "used", or why not (as amx::bf16_status)
// That check with the unit emulated adding in `unit_order` (as
// amx::bf16_check_excess, for tests).
double attention_check_excess(Bf16Order unit_order);

// Whether the kernel takes these shapes: head_dim a multiple of 32, at most 256.
bool attention_fits(const AttentionParams& p);

// attention() with S = Q·Kᵀ and O = P·V on the unit, P's softmax in AVX-512
// (online, per block of 32 keys, in base 2 as the AVX-512 tiled kernel).
// By p.precision: Fast rounds Q (scaled), K, P and V to bf16, each product
// exact and summed in f32. Exact cuts each of them into three bf16 parts
// (split_bf16) and adds the six products of parts whose ranks sum to at most
// 2: what is dropped (mid·lo, lo·mid, lo·lo) is under 2^-23 of |a|·|b| per
// element product, the size of f32 rounding, so the result agrees with the
// f32 kernels to f32 rounding (at a sixth of the unit's rate). f16 K/V are
// widened exactly first. attention_emulated runs the same kernel with the
// tile instructions in scalar code (needs AVX-512 only).
void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p, ThreadPool& pool);
void attention(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
               ThreadPool& pool);
void attention_emulated(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                        ThreadPool& pool);
void attention_emulated(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                        ThreadPool& pool);

}  // namespace qvl::amx
