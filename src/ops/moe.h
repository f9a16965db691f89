// Mixture-of-experts kernels: a router's top-k choice per row, and products
// whose rows are grouped by the expert they go to, so that each chosen
// expert's weights are read once per call for all its rows and an expert no
// row chose is not read at all. Experts are numbered weight matrices here;
// what they compute is the model's business.
//
// Scalar twins: scalar::router_top_k and scalar::grouped_matmul (scalar.h);
// tests/ops/moe_test.cpp sweeps both pairs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ops/matmul.h"
#include "ops/thread_pool.h"

namespace qvl {

// Per row of logits [m, experts]: p = softmax(row) in f32 over all experts;
// ids [m, k] = the k most probable experts in descending probability (the
// lower id first among equal ones), weights [m, k] = their p, divided by
// their sum (taken in that order) when `renormalise`. probs [m, experts] is
// scratch (left holding p with the chosen entries overwritten).
void router_top_k(const float* logits, int64_t m, int64_t experts, int64_t k, bool renormalise, float* probs,
                  int32_t* ids, float* weights);

// The m·k (row, choice) pairs of a routing, ordered by expert and, within an
// expert, by row: the layout of a grouped product's rows. Sized by
// group_by_expert; reusing one keeps its capacity (no allocation per step
// once it has seen the largest m).
struct ExpertGroups {
  std::vector<int64_t> offsets;  // [experts + 1]: expert e's pairs are [offsets[e], offsets[e + 1])
  std::vector<int32_t> rows;     // [m·k] the row of x each pair comes from
  std::vector<float> weights;    // [m·k] its router weight
  int64_t experts() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t pairs() const { return static_cast<int64_t>(rows.size()); }
};

// ids and weights [m, k] (router_top_k) -> g. Every id must be in [0, experts).
void group_by_expert(const int32_t* ids, const float* weights, int64_t m, int64_t k, int64_t experts, ExpertGroups& g);

// dst [pairs, cols] (row stride ldd) = the rows of src [m, cols] (row stride
// lds) in pair order.
void gather_pairs(const float* src, int64_t lds, const ExpertGroups& g, int64_t cols, float* dst, int64_t ldd);

// out [m, cols] (row stride ldo) = Σ over each row's pairs p, in pair order
// (ascending expert), of weights[p] · y[p]; y [pairs, cols] (row stride ldy).
// Rows with no pair become 0. Plain loops: the work is m·k·cols
// multiply-adds, small beside the products.
void combine_pairs(const float* y, int64_t ldy, const ExpertGroups& g, int64_t m, int64_t cols, float* out,
                   int64_t ldo);

// One product of a grouped matmul: expert e's rows of y = its rows of x · w[e]ᵀ.
struct GroupedOutput {
  std::span<const WeightMatrix> w;  // [experts], one shape [n, k] for all
  float* y;                         // [pairs, ldy]
  int64_t ldy;
};

// For every expert e with pairs, y rows [offsets[e], offsets[e + 1]) of each
// output = the same rows of x [pairs, k] (row stride ldx, pair order, e.g.
// from gather_pairs) · w[e]ᵀ. Experts without pairs are never read.
// Which arithmetic computes a row follows the call's `tokens` (the rows the
// pairs came from) and `rows`, as matmul() follows its m and rows, so that a
// row's bits depend on those alone, as a dense product's do (matmul.h): at
// most 8 tokens of decode, each expert's rows as matmul_each gives them
// (bit-identical to each row alone), all the chosen experts' products in one
// parallel step (matmul_many); more tokens, or a prompt piece of any length
// (MatmulRows::Prompt), every expert's rows in the GEMM's arithmetic,
// however few the expert's rows (matmul_each with MatmulRows::Prompt). A
// prompt cut into pieces of other sizes then gives the same bits.
void grouped_matmul(const float* x, int64_t ldx, const ExpertGroups& g, std::span<const GroupedOutput> outs,
                    int64_t tokens, ThreadPool& pool, MatmulRows rows = MatmulRows::Decode);

}  // namespace qvl
