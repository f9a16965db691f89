// Batching changes speed, never answers (issue 46): ten requests of
// different lengths, with images and without, stepped together the way the
// scheduler runs them (Engine::step of several runs) — some start together,
// the others join while those decode, so image encodes and prefill pieces
// are interleaved with the decoding — each give exactly the tokens they give
// alone, and each token's logprob to the bit, greedy and with seeded
// sampling, for bf16, q8 and q4 weights. Ten
// streams are more rows than a bf16 matmul keeps exact in one pass
// (matmul_row_exact_rows: 8), so that path is held to it too.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>

#include "engine/engine.h"
#include "engine_fixtures.h"
#include "image/image.h"
#include "util/formats.h"

namespace qvl {
namespace {

using namespace engine_test;

constexpr int kRequests = 10;

std::unique_ptr<Engine> make_engine(WeightFormat format) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.weights = format;
  p.threads = 2;
  p.ctx_size = kRequests * 400;
  p.slots = kRequests;
  p.batch = 64;
  p.interleave_batch = 16;  // prompts in short pieces while others decode
  return Engine::create(p);
}

// Request i: an image or none, a prompt and an answer length of its own;
// seeded: sampled (temperature, top-p, top-k) with a seed of its own.
GenerateRequest request(int i, bool seeded) {
  const char* images[] = {"gradient_320x240.png", "", "text_400x128.png", "", "odd_313x97.png",
                          "",                     "tall_120x600.png", "", "banker_464x336.png", ""};
  std::vector<std::shared_ptr<const Image>> with;
  if (*images[i]) with.push_back(fixture_image(images[i]));
  std::string text = "Question " + std::to_string(i) + ":";
  for (int w = 0; w < 3 * i; ++w) text += " and then";
  GenerateRequest r = user_request(with, text + " what comes next?", 30 + 2 * i);
  r.top_logprobs = 0;  // each token's logprob: the logits' last bits, which a token may not show
  if (seeded) {
    r.sampling.temperature = 0.9;
    r.sampling.top_p = 0.95;
    r.sampling.top_k = 50;
    r.sampling.seed = 1000 + i;
  }
  return r;
}

using Case = std::tuple<WeightFormat, bool>;  // weights, seeded

class BatchedExactness : public ::testing::TestWithParam<Case> {};

TEST_P(BatchedExactness, EveryStreamEqualsItsRunAlone) {
  const auto [format, seeded] = GetParam();
  auto e = make_engine(format);
  std::vector<GenerateRequest> reqs;
  for (int i = 0; i < kRequests; ++i) reqs.push_back(request(i, seeded));
  std::vector<GenerateResult> alone;
  for (const GenerateRequest& r : reqs) {
    e->reset();
    alone.push_back(e->generate(r));
    ASSERT_EQ(alone.back().token_ids.size(), static_cast<size_t>(r.max_tokens));
  }
  e->reset();

  // Three start together; one more joins every other round, so each joins
  // while the others decode (its image encoded and its prompt prefilled in
  // pieces between their steps), until all ten are in.
  GenerateCallbacks cb;
  std::vector<Engine::RunPtr> runs;
  std::vector<Engine::Run*> live;
  auto start = [&](int i) {
    runs.push_back(e->begin(reqs[i], cb, i));
    live.push_back(runs.back().get());
  };
  for (int i = 0; i < 3; ++i) start(i);
  int most_decoding = 0;
  for (int round = 1; !live.empty(); ++round) {
    if (round % 2 == 0 && static_cast<int>(runs.size()) < kRequests) start(static_cast<int>(runs.size()));
    const std::vector<Engine::StepResult> s = e->step(live);
    int decoding = 0;
    for (Engine::Run* r : live) decoding += e->run_stage(*r) == Engine::RunStage::Decode;
    most_decoding = std::max(most_decoding, decoding);
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i].error) std::rethrow_exception(s[i].error);
      if (!s[i].more) live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  ASSERT_EQ(runs.size(), static_cast<size_t>(kRequests));
  EXPECT_GT(most_decoding, 8);  // past a bf16 matmul's exact rows in one step
  for (int i = 0; i < kRequests; ++i) {
    const GenerateResult together = e->end(*runs[i]);
    EXPECT_EQ(together.token_ids, alone[i].token_ids) << "request " << i;
    ASSERT_EQ(together.logprobs.size(), alone[i].logprobs.size()) << "request " << i;
    for (size_t t = 0; t < together.logprobs.size(); ++t)
      ASSERT_EQ(together.logprobs[t].logprob, alone[i].logprobs[t].logprob) << "request " << i << " token " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, BatchedExactness,
    ::testing::Combine(::testing::Values(WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4), ::testing::Bool()),
    [](const auto& info) {
      return std::string(weight_format_name(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "_seeded" : "_greedy");
    });

}  // namespace
}  // namespace qvl
