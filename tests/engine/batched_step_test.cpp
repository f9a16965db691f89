// Engine::step over several runs at once (batched decode, prefill chunks
// interleaved with the others' decoding), on the fixture model in f32 and
// bf16: every run's greedy tokens equal those it produces alone, whoever it
// shares the steps with, when it joins, and when another run is cancelled.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>

#include "engine/engine.h"
#include "engine_fixtures.h"
#include "image/image.h"
#include "util/error.h"

namespace qvl {
namespace {

using namespace engine_test;

std::vector<GenerateRequest> requests() {
  return {user_request({fixture_image("gradient_320x240.png")}, "What is in this image?", 12),
          user_request({}, "Tell me a story about a lighthouse.", 16),
          user_request({fixture_image("text_400x128.png"), fixture_image("tall_120x600.png")},
                       "Compare the two pictures.", 10),
          user_request({fixture_image("odd_313x97.png")}, "Read it.", 14)};
}

std::unique_ptr<Engine> make_engine(WeightFormat format) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.weights = format;
  p.threads = 2;
  p.ctx_size = 4 * 400;
  p.slots = 4;
  p.batch = 64;
  p.interleave_batch = 16;  // several short chunks while others decode
  return Engine::create(p);
}

// Each request alone through generate(), from an empty cache.
std::vector<std::vector<int32_t>> alone(Engine& e, const std::vector<GenerateRequest>& reqs) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& r : reqs) {
    e.reset();
    out.push_back(e.generate(r).token_ids);
  }
  e.reset();
  return out;
}

// Steps `runs` together until all are done; `before_round(round)` may add runs.
void run_together(Engine& e, std::vector<Engine::Run*>& live, const std::function<void(int)>& before_round = {}) {
  for (int round = 0; !live.empty() || round == 0; ++round) {
    if (before_round) before_round(round);
    if (live.empty()) break;
    const std::vector<Engine::StepResult> s = e.step(live);
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i].error) std::rethrow_exception(s[i].error);
      if (!s[i].more) live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

class BatchedStep : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(BatchedStep, AllStartTogetherAndMatchTheirSoloRuns) {
  auto e = make_engine(GetParam());
  const std::vector<GenerateRequest> reqs = requests();
  const auto want = alone(*e, reqs);
  GenerateCallbacks cb;
  for (size_t count : {2u, 4u}) {
    SCOPED_TRACE(count);
    e->reset();
    std::vector<Engine::RunPtr> runs;
    std::vector<Engine::Run*> live;
    for (size_t i = 0; i < count; ++i) {
      runs.push_back(e->begin(reqs[i], cb, static_cast<int>(i)));
      live.push_back(runs.back().get());
    }
    run_together(*e, live);
    for (size_t i = 0; i < count; ++i) {
      GenerateResult r = e->end(*runs[i]);
      EXPECT_EQ(r.token_ids, want[i]) << "run " << i;
      EXPECT_EQ(r.finish_reason, FinishReason::Length);
      EXPECT_EQ(r.timings.decode_tokens, static_cast<int64_t>(want[i].size()) - 1);
    }
  }
}

TEST_P(BatchedStep, RunJoiningWhileOthersDecode) {
  auto e = make_engine(GetParam());
  const std::vector<GenerateRequest> reqs = requests();
  const auto want = alone(*e, reqs);
  GenerateCallbacks cb;
  std::vector<Engine::RunPtr> runs;
  std::vector<Engine::Run*> live;
  // Runs 0 and 1 start; run 2 (two images, a long prefill in 16-token
  // chunks) joins once they decode, run 3 a few rounds later.
  for (int i = 0; i < 2; ++i) {
    runs.push_back(e->begin(reqs[i], cb, i));
    live.push_back(runs.back().get());
  }
  run_together(*e, live, [&](int round) {
    if (round == 8 || round == 12) {
      const int i = round == 8 ? 2 : 3;
      runs.push_back(e->begin(reqs[i], cb, i));
      live.push_back(runs.back().get());
    }
  });
  ASSERT_EQ(runs.size(), 4u);
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(e->end(*runs[i]).token_ids, want[i]) << "run " << i;
}

TEST_P(BatchedStep, CancellingOneRunLeavesTheOthersUnchanged) {
  auto e = make_engine(GetParam());
  std::vector<GenerateRequest> reqs = requests();
  const auto want = alone(*e, reqs);
  std::atomic<bool> cancel{false};
  reqs[1].cancel = &cancel;
  GenerateCallbacks cb;
  std::vector<Engine::RunPtr> runs;
  std::vector<Engine::Run*> live;
  for (int i = 0; i < 3; ++i) {
    runs.push_back(e->begin(reqs[i], cb, i));
    live.push_back(runs.back().get());
  }
  run_together(*e, live, [&](int round) {
    if (round == 9) cancel = true;
  });
  GenerateResult cancelled = e->end(*runs[1]);
  EXPECT_EQ(cancelled.finish_reason, FinishReason::Cancelled);
  EXPECT_LT(cancelled.token_ids.size(), want[1].size());
  ASSERT_FALSE(cancelled.token_ids.empty());  // it was decoding when cancelled
  EXPECT_TRUE(std::equal(cancelled.token_ids.begin(), cancelled.token_ids.end(), want[1].begin()));
  EXPECT_EQ(e->end(*runs[0]).token_ids, want[0]);
  EXPECT_EQ(e->end(*runs[2]).token_ids, want[2]);
}

INSTANTIATE_TEST_SUITE_P(Formats, BatchedStep, ::testing::Values(WeightFormat::F32, WeightFormat::BF16),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

TEST(BatchedStepErrors, TwoRunsOnOneSlotAreRefused) {
  auto e = make_engine(WeightFormat::BF16);
  const std::vector<GenerateRequest> reqs = requests();
  GenerateCallbacks cb;
  Engine::RunPtr a = e->begin(reqs[1], cb, 0), b = e->begin(reqs[1], cb, 0);
  Engine::Run* both[] = {a.get(), b.get()};
  EXPECT_THROW(e->step(both), Error);
}

}  // namespace
}  // namespace qvl
