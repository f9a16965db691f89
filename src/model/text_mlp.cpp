#include "model/text_mlp.h"

#include "ops/ops.h"

namespace qvl {

double mlp_flops_per_token(const TextConfig& c, int layer) {
  const double h = c.hidden_size;
  if (!c.sparse_layer(layer)) return 2.0 * 3 * h * c.intermediate_size;
  return 2.0 * (h * c.num_experts + double(c.num_experts_per_tok) * 3 * h * c.moe_intermediate_size);
}

void MoeMlp::ensure_rows(int64_t n) {
  if (n <= rows_) return;
  const int64_t e = config_.num_experts, k = config_.num_experts_per_tok;
  const int64_t h = config_.hidden_size, im = config_.moe_intermediate_size;
  logits_.resize(n * e);
  probs_.resize(n * e);
  ids_.resize(n * k);
  top_w_.resize(n * k);
  groups_.rows.reserve(n * k);
  groups_.weights.reserve(n * k);
  xs_.resize(n * k * h);
  gate_.resize(n * k * im);
  up_.resize(n * k * im);
  ys_.resize(n * k * h);
  rows_ = n;
}

void MoeMlp::release() {
  for (std::vector<float>* v : {&logits_, &probs_, &top_w_, &xs_, &gate_, &up_, &ys_}) std::vector<float>().swap(*v);
  std::vector<int32_t>().swap(ids_);
  groups_ = {};
  rows_ = 0;
}

void MoeMlp::forward(const MoeMlpWeights& w, const float* xn, int64_t n, float* out, ThreadPool& pool,
                     RouterTrace* trace, MatmulRows rows) {
  ensure_rows(n);
  const int64_t experts = config_.num_experts, k = config_.num_experts_per_tok;
  const int64_t h = config_.hidden_size, im = config_.moe_intermediate_size;
  // Route: logits [n, experts] -> the k experts of each row and their weights.
  matmul(xn, n, w.router, nullptr, logits_.data(), pool, rows);
  router_top_k(logits_.data(), n, experts, k, config_.norm_topk_prob, probs_.data(), ids_.data(), top_w_.data());
  if (trace) {
    trace->logits.insert(trace->logits.end(), logits_.begin(), logits_.begin() + n * experts);
    trace->ids.insert(trace->ids.end(), ids_.begin(), ids_.begin() + n * k);
    trace->weights.insert(trace->weights.end(), top_w_.begin(), top_w_.begin() + n * k);
  }
  // Every (row, choice) pair through its expert, the pairs grouped by expert.
  group_by_expert(ids_.data(), top_w_.data(), n, k, experts, groups_);
  const int64_t pairs = groups_.pairs();
  gather_pairs(xn, h, groups_, h, xs_.data(), h);
  const GroupedOutput gate_up[] = {{w.gate, gate_.data(), im}, {w.up, up_.data(), im}};
  grouped_matmul(xs_.data(), h, groups_, gate_up, n, pool, rows);
  // Per pair, so a row meets the same vector/tail split whatever else is batched with it.
  for (int64_t p = 0; p < pairs; ++p) silu_mul(&gate_[p * im], &up_[p * im], &gate_[p * im], im);
  const GroupedOutput down[] = {{w.down, ys_.data(), h}};
  grouped_matmul(gate_.data(), im, groups_, down, n, pool, rows);
  // y = Σ_j w_j · expert output, summed in ascending expert id (as the reference).
  combine_pairs(ys_.data(), h, groups_, n, h, out, h);
}

}  // namespace qvl
