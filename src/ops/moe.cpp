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

// Expert e's `rows` rows (at most kSmallM) through the GEMM kernels: copied
// into a block of kSmallM + 1 rows (the rest zero), multiplied, and their
// rows copied out to y rows [begin, begin + rows).
static void padded_gemm(const float* x, int64_t rows, int64_t ldx, std::span<const GroupedOutput> outs, int64_t e,
                        int64_t begin, GroupPadding& pad, ThreadPool& pool) {
  constexpr int64_t kRows = simd::kSmallM + 1;
  const int64_t k = outs[0].w[e].cols();
  pad.x.assign(kRows * k, 0.0f);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&pad.x[r * k], x + r * ldx, k * sizeof(float));
  for (const GroupedOutput& o : outs) {
    const int64_t n = o.w[e].rows();
    if (static_cast<int64_t>(pad.y.size()) < kRows * n) pad.y.resize(kRows * n);
    matmul(pad.x.data(), kRows, k, o.w[e], nullptr, pad.y.data(), n, pool);
    for (int64_t r = 0; r < rows; ++r) std::memcpy(o.y + (begin + r) * o.ldy, &pad.y[r * n], n * sizeof(float));
  }
}

void grouped_matmul(const float* x, int64_t ldx, const ExpertGroups& g, std::span<const GroupedOutput> outs,
                    int64_t tokens, GroupPadding& pad, ThreadPool& pool) {
  constexpr size_t kMaxOutputs = 4;
  if (outs.size() > kMaxOutputs) fail("grouped matmul: ", outs.size(), " outputs (at most ", kMaxOutputs, ")");
  for (const GroupedOutput& o : outs)
    if (static_cast<int64_t>(o.w.size()) != g.experts())
      fail("grouped matmul: ", o.w.size(), " weight matrices for ", g.experts(), " experts");
  if (tokens <= simd::kSmallM) {
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
  MatmulOutput mo[kMaxOutputs];
  for (int64_t e = 0; e < g.experts(); ++e) {
    const int64_t begin = g.offsets[e], rows = g.offsets[e + 1] - begin;
    if (rows == 0) continue;
    const WeightFormat f = outs.empty() ? WeightFormat::F32 : outs[0].w[e].format();
    const bool quant = f == WeightFormat::Q8 || f == WeightFormat::Q4;
    if (tokens > simd::kSmallM && rows <= simd::kSmallM && !quant) {
      padded_gemm(x + begin * ldx, rows, ldx, outs, e, begin, pad, pool);
      continue;
    }
    for (size_t i = 0; i < outs.size(); ++i)
      mo[i] = {&outs[i].w[e], nullptr, outs[i].y + begin * outs[i].ldy, outs[i].ldy};
    matmul_each(x + begin * ldx, rows, ldx, {mo, outs.size()}, pool);
  }
}

}  // namespace qvl
