#include "ops/moe.h"

#include <algorithm>
#include <cstring>

#include "ops/ops.h"
#include "ops/router_top_k-inl.h"
#include "ops/simd_matmul.h"
#include "util/error.h"

namespace qvl {

void router_top_k(const float* logits, int64_t m, int64_t experts, int64_t k, bool renormalise, float* probs,
                  int32_t* ids, float* weights) {
  if (k < 1 || k > experts) fail("router top-k: k = ", k, " of ", experts, " experts");
  moe_detail::router_top_k(
      logits, m, experts, k, renormalise, probs, ids, weights, [](float* x, int64_t n) { softmax(x, n); },
      [](const float* x, int64_t n) { return argmax(x, n); });
}

// A counting sort by expert, stable in the row (pairs of one row keep their
// choice order only across experts, which is all a sum in expert order needs).
void group_by_expert(const int32_t* ids, const float* weights, int64_t m, int64_t k, int64_t experts, ExpertGroups& g) {
  g.offsets.assign(experts + 1, 0);
  for (int64_t i = 0; i < m * k; ++i) {
    if (ids[i] < 0 || ids[i] >= experts) fail("routing: expert ", ids[i], " outside [0, ", experts, ")");
    ++g.offsets[ids[i] + 1];
  }
  for (int64_t e = 0; e < experts; ++e) g.offsets[e + 1] += g.offsets[e];
  g.rows.resize(m * k);
  g.weights.resize(m * k);
  // offsets[e] walks through expert e's slots, then is restored.
  for (int64_t i = 0; i < m * k; ++i) {
    const int64_t slot = g.offsets[ids[i]]++;
    g.rows[slot] = static_cast<int32_t>(i / k);
    g.weights[slot] = weights[i];
  }
  for (int64_t e = experts; e > 0; --e) g.offsets[e] = g.offsets[e - 1];
  g.offsets[0] = 0;
}

void gather_pairs(const float* src, int64_t lds, const ExpertGroups& g, int64_t cols, float* dst, int64_t ldd) {
  for (int64_t p = 0; p < g.pairs(); ++p) std::memcpy(dst + p * ldd, src + g.rows[p] * lds, cols * sizeof(float));
}

void combine_pairs(const float* y, int64_t ldy, const ExpertGroups& g, int64_t m, int64_t cols, float* out,
                   int64_t ldo) {
  for (int64_t r = 0; r < m; ++r) std::fill(out + r * ldo, out + r * ldo + cols, 0.0f);
  for (int64_t p = 0; p < g.pairs(); ++p) {
    float* o = out + g.rows[p] * ldo;
    const float* yp = y + p * ldy;
    const float w = g.weights[p];
    for (int64_t c = 0; c < cols; ++c) o[c] += w * yp[c];
  }
}

void grouped_matmul(const float* x, int64_t ldx, const ExpertGroups& g, std::span<const GroupedOutput> outs,
                    int64_t tokens, ThreadPool& pool, MatmulRows rows) {
  constexpr size_t kMaxOutputs = 4;
  if (outs.size() > kMaxOutputs) fail("grouped matmul: ", outs.size(), " outputs (at most ", kMaxOutputs, ")");
  for (const GroupedOutput& o : outs)
    if (static_cast<int64_t>(o.w.size()) != g.experts())
      fail("grouped matmul: ", o.w.size(), " weight matrices for ", g.experts(), " experts");
  if (tokens <= simd::kSmallM && rows == MatmulRows::Decode) {
    // Decode: each chosen expert's few rows are a product of a few hundred
    // KB; one parallel step for all of them (matmul_many), in expert order,
    // so both threads stream weights from the first expert to the last
    // without waiting for each other in between. Each expert's rows are
    // still computed as matmul_each computes them (the same bits).
    std::vector<MatmulTask> tasks;
    tasks.reserve(static_cast<size_t>(g.pairs()) * outs.size());
    for (int64_t e = 0; e < g.experts(); ++e) {
      const int64_t begin = g.offsets[e], rows = g.offsets[e + 1] - begin;
      if (rows == 0) continue;
      for (const GroupedOutput& o : outs)
        tasks.push_back({x + begin * ldx, rows, ldx, {&o.w[e], nullptr, o.y + begin * o.ldy, o.ldy}});
    }
    matmul_many(tasks, pool);
    return;
  }
  // The GEMM's arithmetic for every expert, also one chosen by 8 rows or
  // fewer: MatmulRows::Prompt asks for it at any m.
  MatmulOutput mo[kMaxOutputs];
  for (int64_t e = 0; e < g.experts(); ++e) {
    const int64_t begin = g.offsets[e], pairs = g.offsets[e + 1] - begin;
    if (pairs == 0) continue;
    for (size_t i = 0; i < outs.size(); ++i)
      mo[i] = {&outs[i].w[e], nullptr, outs[i].y + begin * outs[i].ldy, outs[i].ldy};
    matmul_each(x + begin * ldx, pairs, ldx, {mo, outs.size()}, pool, MatmulRows::Prompt);
  }
}

}  // namespace qvl
