#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "util/error.h"

namespace qvl {
namespace {

std::vector<float> logits_of(std::initializer_list<float> v) { return std::vector<float>(v); }

TEST(Sampler, GreedyTakesTheLargest) {
  SamplerConfig c;
  c.temperature = 0;
  Sampler s(c, 4);
  auto l = logits_of({1, 3, 2, -1});
  EXPECT_EQ(s.sample(l.data(), {}, {}), 1);
}

TEST(Sampler, TopKOneIsGreedy) {
  SamplerConfig c;
  c.top_k = 1;
  c.seed = 7;
  Sampler s(c, 4);
  for (int i = 0; i < 20; ++i) {
    auto l = logits_of({1, 3, 2.9f, -1});
    EXPECT_EQ(s.sample(l.data(), {}, {}), 1);
  }
}

TEST(Sampler, SameSeedSameTokens) {
  SamplerConfig c;
  c.temperature = 1.5;
  c.seed = 1234;
  Sampler a(c, 5), b(c, 5);
  std::vector<int32_t> ta, tb;
  for (int i = 0; i < 50; ++i) {
    auto la = logits_of({0, 0.5f, 1, 0.2f, 0.1f}), lb = la;
    ta.push_back(a.sample(la.data(), {}, {}));
    tb.push_back(b.sample(lb.data(), {}, {}));
  }
  EXPECT_EQ(ta, tb);
  std::map<int32_t, int> seen;
  for (int32_t t : ta) ++seen[t];
  EXPECT_GT(seen.size(), 2u);  // it does sample
}

TEST(Sampler, TopPKeepsTheSmallestSufficientSet) {
  SamplerConfig c;
  c.top_p = 0.5;  // token 0 alone has probability > 0.5
  c.seed = 3;
  Sampler s(c, 3);
  for (int i = 0; i < 30; ++i) {
    auto l = logits_of({3, 1, 1});
    EXPECT_EQ(s.sample(l.data(), {}, {}), 0);
  }
}

TEST(Sampler, MinPDropsUnlikelyTokens) {
  SamplerConfig c;
  c.min_p = 0.5;  // exp(-1) ≈ 0.37 < 0.5 of the top
  c.seed = 5;
  Sampler s(c, 3);
  for (int i = 0; i < 30; ++i) {
    auto l = logits_of({2, 1, 2});
    const int32_t t = s.sample(l.data(), {}, {});
    EXPECT_NE(t, 1);
  }
}

TEST(Sampler, RepetitionPenaltyFollowsTransformers) {
  SamplerConfig c;
  c.temperature = 0;
  c.repetition_penalty = 2.0;
  Sampler s(c, 3);
  auto l = logits_of({4, 3, -1});
  std::vector<int32_t> ctx = {0, 0, 2};
  EXPECT_EQ(s.sample(l.data(), ctx, {}), 1);  // 4/2 = 2 < 3
  EXPECT_FLOAT_EQ(l[0], 2.0f);                // applied once despite two occurrences
  EXPECT_FLOAT_EQ(l[2], -2.0f);               // negative logits multiplied
}

TEST(Sampler, PresenceAndFrequencyPenalties) {
  SamplerConfig c;
  c.temperature = 0;
  c.presence_penalty = 0.5;
  c.frequency_penalty = 0.25;
  Sampler s(c, 3);
  auto l = logits_of({5, 4.5f, 0});
  std::vector<int32_t> gen = {0, 0};
  EXPECT_EQ(s.sample(l.data(), {}, gen), 1);
  EXPECT_FLOAT_EQ(l[0], 5 - 0.5f - 0.5f);
}

// The sampler as first written (temperature, a full sort, top-k, top-p,
// min-p, a draw over the survivors in order), the definition the fast path
// (a heap for top-k, sorting only as far as looked at) must agree with.
int32_t reference_draw(const SamplerConfig& c, std::vector<float> logits, std::mt19937_64& rng) {
  const float inv_t = static_cast<float>(1.0 / c.temperature);
  std::vector<std::pair<float, int32_t>> cand;
  for (size_t i = 0; i < logits.size(); ++i) cand.emplace_back(logits[i] * inv_t, static_cast<int32_t>(i));
  std::sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  if (c.top_k > 0 && static_cast<size_t>(c.top_k) < cand.size()) cand.resize(static_cast<size_t>(c.top_k));
  const float top = cand[0].first;
  double sum = 0;
  for (auto& x : cand) sum += x.first = std::exp(x.first - top);
  size_t keep = cand.size();
  if (c.top_p < 1.0) {
    double cum = 0;
    size_t n = 0;
    while (n < keep && !(cum >= c.top_p)) cum += cand[n++].first / sum;
    keep = n;
  }
  if (c.min_p > 0.0) {
    size_t n = 1;
    while (n < keep && cand[n].first >= c.min_p * cand[0].first) ++n;
    keep = n;
  }
  double total = 0;
  for (size_t n = 0; n < keep; ++n) total += cand[n].first;
  const double r = std::uniform_real_distribution<double>(0.0, total)(rng);
  double acc = 0;
  for (size_t n = 0; n < keep; ++n)
    if (r < (acc += cand[n].first)) return cand[n].second;
  return cand[keep - 1].second;
}

TEST(Sampler, AgreesWithTheFullSortDefinition) {
  std::mt19937 gen(11);
  int cases = 0;
  for (int64_t vocab : {1, 2, 7, 300, 5000}) {
    for (int top_k : {0, 1, 3, 20, 299, 300, 301}) {
      for (double top_p : {1.0, 0.9, 0.3}) {
        for (double min_p : {0.0, 0.05}) {
          for (double t : {0.7, 1.0, 1.6}) {
            SamplerConfig c;
            c.temperature = t;
            c.top_k = top_k;
            c.top_p = top_p;
            c.min_p = min_p;
            c.seed = gen();
            Sampler s(c, vocab);
            std::mt19937_64 ref_rng(c.seed);
            for (int step = 0; step < 3; ++step) {
              // Coarse values, so that ties (broken by id) are common; a few
              // masked (-inf) and a few far ahead, as a model's are.
              std::vector<float> logits(static_cast<size_t>(vocab));
              for (float& x : logits) x = static_cast<float>(static_cast<int>(gen() % 41) - 20) * 0.25f;
              for (int j = 0; j < 3; ++j) logits[gen() % vocab] = -std::numeric_limits<float>::infinity();
              logits[gen() % vocab] = 9;
              logits[0] = std::max(logits[0], 0.0f);  // at least one finite logit
              std::vector<float> mine = logits;
              ASSERT_EQ(s.sample(mine.data(), {}, {}), reference_draw(c, logits, ref_rng))
                  << "vocab " << vocab << " top_k " << top_k << " top_p " << top_p << " min_p " << min_p << " T " << t
                  << " step " << step;
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 5 * 7 * 3 * 2 * 3 * 3);
}

TEST(Sampler, RejectsBadParameters) {
  SamplerConfig c;
  c.top_p = 0;
  EXPECT_THROW(Sampler(c, 3), Error);
  c = {};
  c.temperature = -1;
  EXPECT_THROW(Sampler(c, 3), Error);
}

}  // namespace
}  // namespace qvl

namespace qvl {
namespace {

// A 130-token vocabulary (three mask words, the last partial) where only
// tokens 5, 64 and 129 are allowed, and token 7 besides (also_allowed).
TEST(SamplerMask, OnlyAllowedTokensAreDrawnAndReported) {
  const int64_t vocab = 130;
  std::vector<uint64_t> words(3, 0);
  for (int id : {5, 64, 129}) words[id / 64] |= uint64_t{1} << (id % 64);
  const int32_t also[] = {7};
  SamplerConfig c;
  c.temperature = 1.0;
  c.seed = 11;
  Sampler s(c, vocab);
  std::map<int32_t, int> seen;
  for (int i = 0; i < 400; ++i) {
    std::vector<float> l(vocab, 0.0f);
    l[0] = 50;  // the unconstrained favourite, masked out
    TokenLogprob lp;
    SampleStep step;
    step.allowed = words.data();
    step.also_allowed = also;
    step.top_logprobs = 10;
    step.logprob = &lp;
    const int32_t t = s.sample(l.data(), {}, {}, step);
    ++seen[t];
    ASSERT_EQ(lp.token, t);
    ASSERT_EQ(lp.top.size(), 4u) << "only the 4 allowed tokens have a probability";
    double mass = 0;
    for (const auto& [id, p] : lp.top) mass += std::exp(p);
    EXPECT_NEAR(mass, 1.0, 1e-5);
    EXPECT_NEAR(lp.logprob, std::log(0.25), 1e-5);  // equal logits among the allowed
  }
  EXPECT_EQ(seen.size(), 4u);
  for (const auto& [id, n] : seen) EXPECT_TRUE(id == 5 || id == 7 || id == 64 || id == 129) << id;
}

TEST(SamplerMask, LogitBiasAndTemperatureShapeTheReportedDistribution) {
  SamplerConfig c;
  c.temperature = 0;  // greedy: logprobs at temperature 1
  c.logit_bias = {{2, 3.0f}};
  Sampler s(c, 4);
  std::vector<float> l = {1, 2, 1, 0};
  TokenLogprob lp;
  SampleStep step;
  step.top_logprobs = 2;
  step.logprob = &lp;
  EXPECT_EQ(s.sample(l.data(), {}, {}, step), 2);  // 1 + 3 beats 2
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(4.0) + std::exp(0.0));
  EXPECT_NEAR(lp.logprob, 4.0 - lse, 1e-5);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].first, 2);
  EXPECT_EQ(lp.top[1].first, 1);
  EXPECT_NEAR(lp.top[1].second, 2.0 - lse, 1e-5);
}

// A forced token's entry (Sampler::score) is what sample() reports for it
// under the same one-token mask, and takes no draw: the draws after it are
// those of a sampler that never saw it (jump-forward relies on both).
TEST(SamplerMask, ScoreReportsAsSampleAndTakesNoDraw) {
  const int64_t vocab = 70;
  std::vector<uint64_t> one(2, 0);
  one[1] = uint64_t{1} << 3;  // token 67 alone
  SamplerConfig c;
  c.temperature = 0.8;
  c.seed = 5;
  c.repetition_penalty = 1.3;
  Sampler scored(c, vocab), sampled(c, vocab), plain(c, vocab);
  auto logits = [&] {
    std::vector<float> l(vocab);
    for (int64_t i = 0; i < vocab; ++i) l[i] = static_cast<float>((i * 37) % 11) - 5.0f;
    return l;
  };
  const std::vector<int32_t> context = {67, 3};
  TokenLogprob by_score, by_sample;
  SampleStep step;
  step.allowed = one.data();
  step.top_logprobs = 3;
  step.logprob = &by_score;
  std::vector<float> l = logits();
  scored.score(l.data(), context, {}, step, 67);
  step.logprob = &by_sample;
  l = logits();
  EXPECT_EQ(sampled.sample(l.data(), context, {}, step), 67);
  EXPECT_EQ(by_score.token, 67);
  EXPECT_EQ(by_score.logprob, by_sample.logprob);
  EXPECT_EQ(by_score.top, by_sample.top);
  for (int i = 0; i < 20; ++i) {
    std::vector<float> a = logits(), b = logits();
    ASSERT_EQ(scored.sample(a.data(), {}, {}), plain.sample(b.data(), {}, {})) << "draw " << i;
  }
}

TEST(SamplerMask, NothingAllowedIsAnError) {
  SamplerConfig c;
  c.temperature = 0;
  Sampler s(c, 70);
  std::vector<uint64_t> words(2, 0);
  std::vector<float> l(70, 0.0f);
  SampleStep step;
  step.allowed = words.data();
  EXPECT_THROW(s.sample(l.data(), {}, {}, step), Error);
}

}  // namespace
}  // namespace qvl
