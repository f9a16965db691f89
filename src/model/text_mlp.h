// The MLP of a text layer, of either kind:
//   dense (Qwen3-VL 2B..32B):   y = down(silu(gate(x̂)) ⊙ up(x̂))
//   sparse (qwen3_vl_moe: 30B-A3B, 235B-A22B), a mixture of such experts:
//     p = softmax(router(x̂)) over all experts, in f32
//     e_1..e_k = the k most probable experts, w_j = p_{e_j} / Σ_j p_{e_j}
//     y = Σ_j w_j · down_{e_j}(silu(gate_{e_j}(x̂)) ⊙ up_{e_j}(x̂))
// x̂ is the post-attention RMSNorm of the residual stream; the caller adds y
// to it. The dense forward lives with the decoder (text_decoder.cpp); the
// sparse one is MoeMlp below.
#pragma once

#include <cstdint>
#include <vector>

#include "io/model_config.h"
#include "model/weights.h"
#include "ops/moe.h"
#include "ops/thread_pool.h"

namespace qvl {

// Multiply-adds ×2 per token of layer `layer`'s MLP: dense, the three
// projections; sparse, the router and k experts' three projections each.
double mlp_flops_per_token(const TextConfig& c, int layer);

// One layer's router choices over a forward, rows appended chunk by chunk
// (for the golden tests).
struct RouterTrace {
  std::vector<float> logits;   // [n, experts]
  std::vector<int32_t> ids;    // [n, k], descending probability
  std::vector<float> weights;  // [n, k]
};

// The sparse MLP's forward and its scratch, grown to the largest chunk seen.
class MoeMlp {
 public:
  explicit MoeMlp(const TextConfig& config) : config_(config) {}
  // out [n, hidden] = the mixture at xn [n, hidden]; out may be xn. Each
  // chosen expert's weights are read once for all rows that chose it
  // (grouped_matmul); experts no row chose are not read. `rows`: Prompt for
  // a prompt piece, whose rows then take a prefill's arithmetic at any n
  // (ops/matmul.h).
  void forward(const MoeMlpWeights& w, const float* xn, int64_t n, float* out, ThreadPool& pool,
               RouterTrace* trace = nullptr, MatmulRows rows = MatmulRows::Decode);
  void release();  // gives the scratch back (after a long prefill)

 private:
  void ensure_rows(int64_t n);
  const TextConfig& config_;
  int64_t rows_ = 0;
  std::vector<float> logits_, probs_;  // [n, experts]
  std::vector<int32_t> ids_;           // [n, k]
  std::vector<float> top_w_;           // [n, k]
  ExpertGroups groups_;                // the n·k pairs by expert
  std::vector<float> xs_;              // [n·k, hidden] each pair's input row
  std::vector<float> gate_, up_;       // [n·k, moe_intermediate]
  std::vector<float> ys_;              // [n·k, hidden] each pair's expert output
};

}  // namespace qvl
