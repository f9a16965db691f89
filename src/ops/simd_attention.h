// Internal: Highway attention kernels, reached through attention() (attention.cpp).
#pragma once

#include <span>

#include "ops/ops.h"

namespace qvl::simd {

// Tiled ("flash") attention: query blocks x key/value blocks with online
// softmax; K is transposed once per call into O(nkv · head_dim) scratch.
void attention_tiled(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                     ThreadPool& pool);
// Few queries (decode): each K/V row is read once per kv head and applied to
// all query heads of its GQA group; vectorised along head_dim.
void attention_rows(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                    ThreadPool& pool);
// The same with f16 K/V (widened exactly on load).
void attention_tiled(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                     ThreadPool& pool);
void attention_rows(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                    ThreadPool& pool);
// attention_rows of every job (each alone's bits), all of them in one
// parallel step (and one for the merges).
void attention_rows_batch(std::span<const AttentionJob> jobs, ThreadPool& pool);

}  // namespace qvl::simd
