// The router's top-k selection, written once for the kernel (ops/moe.cpp,
// SIMD softmax and argmax) and its scalar twin (ops/scalar_moe.cpp, the
// scalar ones): they differ only in those two functions.
#pragma once

#include <cstdint>

namespace qvl::moe_detail {

template <typename Softmax, typename Argmax>
void router_top_k(const float* logits, int64_t m, int64_t experts, int64_t k, bool renormalise, float* probs,
                  int32_t* ids, float* weights, Softmax softmax, Argmax argmax) {
  for (int64_t r = 0; r < m; ++r) {
    float* p = probs + r * experts;
    for (int64_t e = 0; e < experts; ++e) p[e] = logits[r * experts + e];
    softmax(p, experts);
    int32_t* id = ids + r * k;
    float* w = weights + r * k;
    float sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      // argmax takes the first of equal maxima; a chosen probability is
      // replaced by -1, below every probability.
      const int64_t best = argmax(p, experts);
      id[j] = static_cast<int32_t>(best);
      w[j] = p[best];
      sum += p[best];
      p[best] = -1.0f;
    }
    if (renormalise)
      for (int64_t j = 0; j < k; ++j) w[j] /= sum;
  }
}

}  // namespace qvl::moe_detail
