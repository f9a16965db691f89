// Scalar twins of the mixture-of-experts kernels (see scalar.h, moe.h).
#include "ops/moe.h"
#include "ops/router_top_k-inl.h"
#include "ops/scalar.h"

namespace qvl::scalar {

void router_top_k(const float* logits, int64_t m, int64_t experts, int64_t k, bool renormalise, float* probs,
                  int32_t* ids, float* weights) {
  moe_detail::router_top_k(
      logits, m, experts, k, renormalise, probs, ids, weights, [](float* x, int64_t n) { scalar::softmax(x, n); },
      [](const float* x, int64_t n) { return scalar::argmax(x, n); });
}

void grouped_matmul(const float* x, int64_t ldx, const ExpertGroups& g, std::span<const GroupedOutput> outs) {
  for (int64_t e = 0; e < g.experts(); ++e) {
    const int64_t begin = g.offsets[e], rows = g.offsets[e + 1] - begin;
    if (rows == 0) continue;
    for (const GroupedOutput& o : outs)
      scalar::matmul(x + begin * ldx, rows, ldx, o.w[e], nullptr, o.y + begin * o.ldy, o.ldy);
  }
}

}  // namespace qvl::scalar
