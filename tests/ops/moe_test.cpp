// The mixture-of-experts kernels (ops/moe.h) against their scalar twins:
// router top-k over expert counts and k, grouping of rows by expert, and the
// grouped product over shapes, formats, expert loads (empty experts, one
// expert taking every row) and misaligned x; an expert no row chose is never
// read.
#include "ops/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <utility>

#include "ops/scalar.h"
#include "test_util.h"
#include "util/error.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_bf16;
using testing::random_floats;

// Logits whose values are distinct by at least 0.01, so the SIMD and scalar
// softmax (which round differently) rank them alike.
std::vector<float> distinct_logits(int64_t m, int64_t experts, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> out(m * experts);
  std::vector<int> perm(experts);
  for (int64_t r = 0; r < m; ++r) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const float scale = 0.01f + 0.2f * float(r % 5);  // sharp and flat rows
    for (int64_t e = 0; e < experts; ++e) out[r * experts + e] = float(perm[e]) * scale - 3.0f;
  }
  return out;
}

TEST(RouterTopK, MatchesTwinAcrossExpertsAndK) {
  for (int64_t experts : {1, 2, 3, 7, 8, 15, 16, 17, 60, 64, 128, 130}) {
    for (int64_t k : {1, 2, 4, 8}) {
      if (k > experts) continue;
      for (bool renorm : {true, false}) {
        const int64_t m = 11;
        auto logits = distinct_logits(m, experts, uint32_t(experts * 31 + k));
        std::vector<float> probs(m * experts), twin_probs(m * experts), w(m * k), tw(m * k);
        std::vector<int32_t> ids(m * k), tids(m * k);
        router_top_k(logits.data(), m, experts, k, renorm, probs.data(), ids.data(), w.data());
        scalar::router_top_k(logits.data(), m, experts, k, renorm, twin_probs.data(), tids.data(), tw.data());
        SCOPED_TRACE(::testing::Message() << "experts " << experts << " k " << k << " renorm " << renorm);
        EXPECT_EQ(ids, tids);
        for (int64_t i = 0; i < m * k; ++i) EXPECT_NEAR(w[i], tw[i], 1e-6) << i;
        // The chosen are the k largest logits, in descending order.
        for (int64_t r = 0; r < m; ++r) {
          std::vector<int32_t> order(experts);
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(),
                           [&](int a, int b) { return logits[r * experts + a] > logits[r * experts + b]; });
          for (int64_t j = 0; j < k; ++j) EXPECT_EQ(ids[r * k + j], order[j]) << "row " << r;
          if (renorm) {
            float sum = 0;
            for (int64_t j = 0; j < k; ++j) sum += w[r * k + j];
            EXPECT_NEAR(sum, 1.0f, 1e-6);
          }
        }
      }
    }
  }
}

// The probabilities against a double-precision softmax, and ties to the lower id.
TEST(RouterTopK, WeightsAreSoftmaxProbabilitiesAndTiesGoLow) {
  const float logits[] = {1.0f, 3.0f, 3.0f, -2.0f, 0.5f};
  float probs[5], w[3];
  int32_t ids[3];
  router_top_k(logits, 1, 5, 3, false, probs, ids, w);
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);
  EXPECT_EQ(ids[2], 0);
  EXPECT_NEAR(w[0], std::exp(3.0) / z, 1e-7);
  EXPECT_NEAR(w[2], std::exp(1.0) / z, 1e-7);
  router_top_k(logits, 1, 5, 3, true, probs, ids, w);
  const double s = 2 * std::exp(3.0) + std::exp(1.0);
  EXPECT_NEAR(w[0], std::exp(3.0) / s, 1e-7);
  EXPECT_NEAR(w[2], std::exp(1.0) / s, 1e-7);
}

TEST(GroupByExpert, PairsOrderedByExpertThenRow) {
  // 4 rows, k = 2, 5 experts; expert 3 unused.
  const int32_t ids[] = {2, 0, 0, 4, 2, 1, 4, 0};
  const float weights[] = {0.6f, 0.4f, 0.7f, 0.3f, 0.5f, 0.5f, 0.9f, 0.1f};
  ExpertGroups g;
  group_by_expert(ids, weights, 4, 2, 5, g);
  EXPECT_EQ(g.offsets, (std::vector<int64_t>{0, 3, 4, 6, 6, 8}));
  EXPECT_EQ(g.rows, (std::vector<int32_t>{0, 1, 3, 2, 0, 2, 1, 3}));
  EXPECT_EQ(g.weights, (std::vector<float>{0.4f, 0.7f, 0.1f, 0.5f, 0.6f, 0.5f, 0.3f, 0.9f}));
  // Reuse with fewer rows shrinks it.
  group_by_expert(ids, weights, 1, 2, 5, g);
  EXPECT_EQ(g.pairs(), 2);
  EXPECT_EQ(g.offsets, (std::vector<int64_t>{0, 1, 1, 2, 2, 2}));
  const int32_t bad[] = {5};
  EXPECT_THROW(group_by_expert(bad, weights, 1, 1, 5, g), Error);
}

TEST(CombinePairs, WeightedSumPerRowInExpertOrder) {
  const int32_t ids[] = {1, 0, 1, 2};  // 2 rows, k = 2; row 2 has none
  const float weights[] = {0.25f, 0.75f, 0.5f, 0.5f};
  ExpertGroups g;
  group_by_expert(ids, weights, 2, 2, 3, g);
  // Pairs: (e0, row0), (e1, row0), (e1, row1), (e2, row1); y row p = p + 1.
  std::vector<float> y = {1, 1, 2, 2, 3, 3, 4, 4};
  std::vector<float> out(3 * 2, 9.0f);
  combine_pairs(y.data(), 2, g, 3, 2, out.data(), 2);
  EXPECT_EQ(out, (std::vector<float>{0.75f + 0.5f, 0.75f + 0.5f, 1.5f + 2.0f, 1.5f + 2.0f, 0, 0}));
}

// A routing of m rows to k of `experts`, with the given load shape.
enum class Load { Random, OneExpertTakesAll, SomeEmpty };

void route(int64_t m, int64_t k, int64_t experts, Load load, uint32_t seed, std::vector<int32_t>& ids,
           std::vector<float>& w) {
  std::mt19937 rng(seed);
  ids.resize(m * k);
  w.assign(m * k, 1.0f / float(k));
  std::vector<int32_t> perm(experts);
  for (int64_t r = 0; r < m; ++r) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    if (load == Load::OneExpertTakesAll)  // the last expert is every row's first choice
      std::iter_swap(perm.begin(), std::find(perm.begin(), perm.end(), static_cast<int32_t>(experts - 1)));
    if (load == Load::SomeEmpty)  // only the upper half of the experts, so the lower ones have no rows
      std::stable_partition(perm.begin(), perm.end(), [&](int32_t e) { return e >= experts / 2; });
    for (int64_t j = 0; j < k; ++j) ids[r * k + j] = perm[j];
  }
}

TEST(GroupedMatmul, MatchesTwinAcrossShapesFormatsAndLoads) {
  ThreadPool pool(2);
  struct Shape {
    int64_t m, k_top, experts, n, k;
  };
  const std::vector<Shape> shapes = {{1, 1, 1, 5, 3},   {1, 2, 8, 32, 40},   {3, 2, 4, 17, 31},   {8, 4, 16, 64, 100},
                                     {9, 2, 8, 33, 64}, {17, 8, 64, 24, 40}, {40, 2, 8, 96, 130}, {64, 4, 6, 70, 96}};
  uint32_t seed = 7;
  for (const Shape& s : shapes) {
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
      for (Load load : {Load::Random, Load::OneExpertTakesAll, Load::SomeEmpty}) {
        for (int offset : {0, 1, 3}) {
          if (s.k_top > s.experts) continue;
          SCOPED_TRACE(::testing::Message()
                       << weight_format_name(f) << " m " << s.m << " top " << s.k_top << " of " << s.experts << " n "
                       << s.n << " k " << s.k << " load " << int(load) << " offset " << offset);
          std::vector<int32_t> ids;
          std::vector<float> rw;
          route(s.m, s.k_top, s.experts, load, ++seed, ids, rw);
          ExpertGroups g;
          group_by_expert(ids.data(), rw.data(), s.m, s.k_top, s.experts, g);
          // Two products of the same x (as gate and up are).
          std::vector<std::vector<uint16_t>> src;
          std::vector<WeightMatrix> wa, wb;
          for (int64_t e = 0; e < s.experts; ++e) {
            src.push_back(random_bf16(s.n * s.k, ++seed));
            src.push_back(random_bf16(s.n * s.k, ++seed));
          }
          for (int64_t e = 0; e < s.experts; ++e) {
            auto make = [&](const std::vector<uint16_t>& b) {
              return f == WeightFormat::BF16 ? WeightMatrix::view_bf16(b.data(), s.n, s.k)
                                             : WeightMatrix::from_bf16(b.data(), s.n, s.k, f, &pool);
            };
            wa.push_back(make(src[2 * e]));
            wb.push_back(make(src[2 * e + 1]));
          }
          const int64_t ldx = s.k + offset, ldy = s.n + offset;
          const int64_t pairs = g.pairs();
          auto xtok = random_floats(s.m * ldx, ++seed);
          std::vector<float> xs(pairs * ldx);
          gather_pairs(xtok.data(), ldx, g, s.k, xs.data(), ldx);
          Misaligned<float> x(xs, offset);
          std::vector<float> ya(pairs * ldy, -5.0f), yb(pairs * ldy, -5.0f), ta(pairs * ldy, -5.0f),
              tb(pairs * ldy, -5.0f);
          const GroupedOutput outs[] = {{wa, ya.data(), ldy}, {wb, yb.data(), ldy}};
          const GroupedOutput twins[] = {{wa, ta.data(), ldy}, {wb, tb.data(), ldy}};
          grouped_matmul(x.data(), ldx, g, outs, s.m, pool);
          scalar::grouped_matmul(x.data(), ldx, g, twins);
          const double tol = 1e-5 * std::sqrt(double(s.k)) + 1e-6;
          for (int64_t p = 0; p < pairs; ++p)
            for (int64_t c = 0; c < ldy; ++c) {
              if (c >= s.n) {
                ASSERT_EQ(ya[p * ldy + c], -5.0f) << "wrote past n";
                continue;
              }
              ASSERT_NEAR(ya[p * ldy + c], ta[p * ldy + c], tol) << "pair " << p << " col " << c;
              ASSERT_NEAR(yb[p * ldy + c], tb[p * ldy + c], tol) << "pair " << p << " col " << c;
            }
          // Each pair's row is its token's x times its expert's weights.
          for (int64_t e = 0; e < s.experts; ++e)
            for (int64_t p = g.offsets[e]; p < g.offsets[e + 1]; ++p) {
              std::vector<float> alone(s.n);
              scalar::matmul(&xtok[g.rows[p] * ldx], 1, ldx, wa[e], nullptr, alone.data(), s.n);
              for (int64_t c = 0; c < s.n; ++c) ASSERT_NEAR(ta[p * ldy + c], alone[c], tol);
            }
        }
      }
    }
  }
}

// Decode reads only the chosen experts: the others' weights are NaN here, and
// no NaN reaches the outputs.
TEST(GroupedMatmul, ExpertsNotChosenAreNotRead) {
  ThreadPool pool(2);
  const int64_t experts = 8, n = 48, k = 64;
  const uint16_t nan_bf16 = 0x7FC0;
  std::vector<std::vector<uint16_t>> src;
  std::vector<WeightMatrix> w;
  const int32_t ids[] = {5, 2};
  const float rw[] = {0.5f, 0.5f};
  for (int64_t e = 0; e < experts; ++e) {
    const bool chosen = e == 5 || e == 2;
    src.push_back(chosen ? random_bf16(n * k, uint32_t(e)) : std::vector<uint16_t>(n * k, nan_bf16));
  }
  for (int64_t e = 0; e < experts; ++e) w.push_back(WeightMatrix::view_bf16(src[e].data(), n, k));
  ExpertGroups g;
  group_by_expert(ids, rw, 1, 2, experts, g);
  auto x = random_floats(2 * k, 3);
  std::vector<float> y(2 * n);
  const GroupedOutput outs[] = {{w, y.data(), n}};
  grouped_matmul(x.data(), k, g, outs, 1, pool);
  for (float v : y) ASSERT_FALSE(std::isnan(v));
}

// Decode (at most 8 tokens) puts every chosen expert's products in one
// parallel step (matmul_many); the bits are those of the step per expert it
// replaced (matmul_each on each expert's rows in turn), for every format and
// thread count, with 128 experts, top 8, as the 30B-A3B routes (narrower).
TEST(GroupedMatmul, DecodeSharingExpertsGivesTheBitsOfOneStepPerExpert) {
  const int64_t experts = 128, top = 8, n = 48, k = 64;
  uint32_t seed = 300;
  std::vector<std::vector<uint16_t>> src;
  for (int64_t e = 0; e < 2 * experts; ++e) src.push_back(random_bf16(n * k, ++seed));
  for (int threads : {1, 2, 3})
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
      ThreadPool pool(threads);
      std::vector<WeightMatrix> wa, wb;
      for (int64_t e = 0; e < experts; ++e)
        for (auto [w, i] : {std::pair{&wa, 2 * e}, std::pair{&wb, 2 * e + 1}})
          w->push_back(f == WeightFormat::BF16 ? WeightMatrix::view_bf16(src[i].data(), n, k)
                                               : WeightMatrix::from_bf16(src[i].data(), n, k, f, &pool));
      for (int64_t tokens : {1, 3, 8}) {
        SCOPED_TRACE(::testing::Message() << weight_format_name(f) << " threads " << threads << " tokens " << tokens);
        std::vector<int32_t> ids;
        std::vector<float> rw;
        route(tokens, top, experts, Load::Random, ++seed, ids, rw);
        ExpertGroups g;
        group_by_expert(ids.data(), rw.data(), tokens, top, experts, g);
        const int64_t ldx = k + 1, ldy = n + 2, pairs = g.pairs();
        const auto xs = random_floats(pairs * ldx, ++seed);
        std::vector<float> ya(pairs * ldy, -5.0f), yb(pairs * ldy, -5.0f), ea(pairs * ldy, -5.0f),
            eb(pairs * ldy, -5.0f);
        const GroupedOutput outs[] = {{wa, ya.data(), ldy}, {wb, yb.data(), ldy}};
        grouped_matmul(xs.data(), ldx, g, outs, tokens, pool);
        for (int64_t e = 0; e < experts; ++e) {
          const int64_t begin = g.offsets[e], rows = g.offsets[e + 1] - begin;
          if (rows == 0) continue;
          const MatmulOutput each[] = {{&wa[e], nullptr, &ea[begin * ldy], ldy}, {&wb[e], nullptr, &eb[begin * ldy], ldy}};
          matmul_each(&xs[begin * ldx], rows, ldx, each, pool);
        }
        for (size_t i = 0; i < ya.size(); ++i) {
          ASSERT_EQ(ya[i], ea[i]) << "gate-like output at " << i;
          ASSERT_EQ(yb[i], eb[i]) << "up-like output at " << i;
        }
      }
    }
}

// A prefill's row must not depend on the chunk it came in: rows routed in a
// call of 40 tokens and again in calls of 12 and 28 (so the experts' groups
// differ in size, some under 9 rows), or in prompt pieces of 1 and 5 tokens
// (MatmulRows::Prompt), give the same bits; and a decode call (at most 8
// tokens) gives each row as its own call of one.
TEST(GroupedMatmul, RowsDoNotDependOnTheChunk) {
  ThreadPool pool(2);
  const int64_t experts = 6, top = 2, n = 40, k = 72, m = 40;
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8}) {
    SCOPED_TRACE(weight_format_name(f));
    std::vector<std::vector<uint16_t>> src;
    std::vector<WeightMatrix> w;
    for (int64_t e = 0; e < experts; ++e) src.push_back(random_bf16(n * k, uint32_t(100 + e)));
    for (int64_t e = 0; e < experts; ++e)
      w.push_back(f == WeightFormat::BF16 ? WeightMatrix::view_bf16(src[e].data(), n, k)
                                          : WeightMatrix::from_bf16(src[e].data(), n, k, f, &pool));
    std::vector<int32_t> ids;
    std::vector<float> rw;
    route(m, top, experts, Load::Random, 5, ids, rw);
    const auto x = random_floats(m * k, 6);
    // y [m, top, n]: each token's choices' outputs, in choice order.
    auto run = [&](int64_t r0, int64_t rows, MatmulRows kind = MatmulRows::Decode) {
      ExpertGroups g;
      group_by_expert(&ids[r0 * top], &rw[r0 * top], rows, top, experts, g);
      std::vector<float> xs(g.pairs() * k), ys(g.pairs() * n), out(rows * top * n);
      gather_pairs(&x[r0 * k], k, g, k, xs.data(), k);
      const GroupedOutput outs[] = {{w, ys.data(), n}};
      grouped_matmul(xs.data(), k, g, outs, rows, pool, kind);
      std::vector<int> seen(rows, 0);
      for (int64_t e = 0; e < experts; ++e)
        for (int64_t p = g.offsets[e]; p < g.offsets[e + 1]; ++p) {
          const int64_t r = g.rows[p];
          int64_t j = 0;
          while (ids[(r0 + r) * top + j] != e) ++j;
          std::copy(&ys[p * n], &ys[(p + 1) * n], &out[(r * top + j) * n]);
        }
      return out;
    };
    const std::vector<float> whole = run(0, m);
    const std::vector<float> a = run(0, 12), b = run(12, 28);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), whole.begin()));
    EXPECT_TRUE(std::equal(b.begin(), b.end(), whole.begin() + 12 * top * n));
    for (auto [r0, rows] : {std::pair<int64_t, int64_t>{0, 1}, {7, 1}, {20, 5}}) {
      const std::vector<float> piece = run(r0, rows, MatmulRows::Prompt);
      EXPECT_TRUE(std::equal(piece.begin(), piece.end(), whole.begin() + r0 * top * n))
          << "prompt piece of " << rows << " at " << r0;
    }
    const std::vector<float> decode = run(3, 5);
    for (int64_t r = 0; r < 5; ++r) {
      const std::vector<float> alone = run(3 + r, 1);
      EXPECT_TRUE(std::equal(alone.begin(), alone.end(), decode.begin() + r * top * n)) << "row " << r;
    }
  }
}

}  // namespace
}  // namespace qvl
