// Exact vector search's one kernel: the inner product of a query with every
// stored row (unit vectors, so it is their cosine similarity). Memory-bound:
// 10k pages of 2048 floats are 80 MB read once per query.
#pragma once

#include <cstdint>

namespace qvl {

// out[r] = Σ_i rows[r * dim + i] · q[i] for r in [0, n_rows); rows [n_rows, dim]
// contiguous, q [dim], out [n_rows]. Highway, dispatched to the CPU's best target.
void dot_rows(const float* rows, int64_t n_rows, int64_t dim, const float* q, float* out);

namespace scalar {
// The twin: f32 accumulation in index order.
void dot_rows(const float* rows, int64_t n_rows, int64_t dim, const float* q, float* out);
}  // namespace scalar

}  // namespace qvl
