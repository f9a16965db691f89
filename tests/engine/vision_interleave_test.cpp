// The Vision stage cut into pieces between other runs' decode steps
// (Engine::step of several runs), on the fixture model: the other stream gets
// a token in every step while an image is encoded, the image's answer is the
// same bits as when it runs alone, a run alone encodes in one step, a run
// cancelled mid-encode leaves the engine healthy, and the runs of one flow
// (a document's pages) are encoded one after another.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "engine/engine.h"
#include "engine_fixtures.h"
#include "image/image.h"

namespace qvl {
namespace {

using namespace engine_test;

std::unique_ptr<Engine> make_engine(WeightFormat format) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.weights = format;
  p.threads = 2;
  p.ctx_size = 2 * 512;
  p.slots = 2;
  p.batch = 64;
  p.interleave_batch = 16;
  return Engine::create(p);
}

// B: text only, long enough to decode through A's whole encode. A: an image.
GenerateRequest text_request() { return user_request({}, "Tell me a long story about a lighthouse.", 120); }
GenerateRequest image_request() {
  return user_request({fixture_image("banker_464x336.png")}, "What is in this image?", 12);
}

std::vector<int32_t> alone(Engine& e, const GenerateRequest& r) {
  e.reset();
  std::vector<int32_t> t = e.generate(r).token_ids;
  e.reset();
  return t;
}

// Steps `run` alone until it is decoding.
void until_decoding(Engine& e, Engine::Run& run) {
  while (e.run_stage(run) != Engine::RunStage::Decode) ASSERT_TRUE(e.step(run));
}

Engine::StepResult step_both(Engine& e, Engine::Run& b, Engine::Run& a) {
  Engine::Run* both[2] = {&b, &a};
  const std::vector<Engine::StepResult> s = e.step(both);
  if (s[0].error) std::rethrow_exception(s[0].error);
  if (s[1].error) std::rethrow_exception(s[1].error);
  EXPECT_TRUE(s[0].more);  // B is far from its end
  return s[1];
}

void finish(Engine& e, Engine::Run& run) {
  while (e.step(run)) {
  }
}

class VisionInterleave : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(VisionInterleave, OtherStreamGetsATokenEveryStepAndTokensAreUnchanged) {
  auto e = make_engine(GetParam());
  const GenerateRequest ra = image_request(), rb = text_request();
  const std::vector<int32_t> want_a = alone(*e, ra), want_b = alone(*e, rb);
  GenerateCallbacks cb;
  Engine::RunPtr b = e->begin(rb, cb, 0);
  until_decoding(*e, *b);
  Engine::RunPtr a = e->begin(ra, cb, 1);
  int vision_steps = 0;
  while (e->run_stage(*a) == Engine::RunStage::Vision) {
    const int64_t before = e->run_tokens(*b);
    ASSERT_TRUE(step_both(*e, *b, *a).more);
    EXPECT_EQ(e->run_tokens(*b), before + 1) << "B got no token in vision step " << vision_steps;
    ++vision_steps;
  }
  // The encode was spread over several steps (one piece each here: the
  // fixture's pieces cost more than a 16-token prefill piece).
  EXPECT_GT(vision_steps, 2);
  while (e->run_stage(*a) != Engine::RunStage::Done) {
    if (!step_both(*e, *b, *a).more) break;
  }
  finish(*e, *b);
  const GenerateResult got_a = e->end(*a), got_b = e->end(*b);
  EXPECT_EQ(got_a.token_ids, want_a);
  EXPECT_EQ(got_b.token_ids, want_b);
  EXPECT_EQ(got_a.timings.image_cache_misses, 1);
  EXPECT_GT(got_a.timings.vision_ms, 0);
}

TEST_P(VisionInterleave, RunAloneEncodesInOneStep) {
  auto e = make_engine(GetParam());
  const GenerateRequest ra = image_request();
  GenerateCallbacks cb;
  Engine::RunPtr a = e->begin(ra, cb, 0);
  ASSERT_EQ(e->run_stage(*a), Engine::RunStage::Vision);
  ASSERT_TRUE(e->step(*a));
  EXPECT_EQ(e->run_stage(*a), Engine::RunStage::Prefill);
}

TEST_P(VisionInterleave, CancelledMidEncodeLeavesTheEngineHealthy) {
  auto e = make_engine(GetParam());
  GenerateRequest ra = image_request();
  const GenerateRequest rb = text_request();
  const std::vector<int32_t> want_a = alone(*e, ra), want_b = alone(*e, rb);
  std::atomic<bool> cancel{false};
  ra.cancel = &cancel;
  GenerateCallbacks cb;
  Engine::RunPtr b = e->begin(rb, cb, 0);
  until_decoding(*e, *b);
  Engine::RunPtr a = e->begin(ra, cb, 1);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(step_both(*e, *b, *a).more);
    ASSERT_EQ(e->run_stage(*a), Engine::RunStage::Vision);  // still encoding
  }
  cancel = true;
  EXPECT_FALSE(step_both(*e, *b, *a).more);
  EXPECT_EQ(e->run_stage(*a), Engine::RunStage::Done);
  const GenerateResult cancelled = e->end(*a);
  a.reset();
  EXPECT_EQ(cancelled.finish_reason, FinishReason::Cancelled);
  EXPECT_TRUE(cancelled.token_ids.empty());
  EXPECT_EQ(e->image_cache_stats().entries, 0u);  // a partial encode is never cached
  finish(*e, *b);
  EXPECT_EQ(e->end(*b).token_ids, want_b);

  // The same image again, on the slot the cancelled run had: encoded afresh.
  const GenerateRequest again = image_request();
  Engine::RunPtr a2 = e->begin(again, cb, 1);
  finish(*e, *a2);
  const GenerateResult r = e->end(*a2);
  EXPECT_EQ(r.token_ids, want_a);
  EXPECT_EQ(r.timings.image_cache_misses, 1);
  EXPECT_EQ(e->image_cache_stats().entries, 1u);
}

// GenerateRequest::flow: two pages of one document (one flow) and a chat
// request started together. The second page is not encoded while the first
// is (it waits in Vision, its slot kept), the chat request is encoded beside
// the first page all along, the second page starts as soon as the first is
// decoding and then encodes in pieces between the first's tokens; every
// answer has the bits it has alone.
TEST_P(VisionInterleave, PagesOfOneFlowAreEncodedOneAfterAnother) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.weights = GetParam();
  p.threads = 2;
  p.ctx_size = 3 * 2048;
  p.slots = 3;
  p.batch = 64;
  p.interleave_batch = 16;
  auto e = Engine::create(p);
  GenerateRequest page1 = image_request(), page2 = image_request();
  // The first page the larger: round-robin would finish the second first.
  page1.messages[0].parts[0].image = fixture_image("large_800x600.png");
  page1.max_tokens = page2.max_tokens = 300;
  page1.flow = page2.flow = "batch-1";
  GenerateRequest chat = user_request({fixture_image("gradient_320x240.png")}, "Describe it.", 300);
  for (GenerateRequest* r : {&page1, &page2, &chat}) r->repetition_guard.window = 0;  // random weights loop
  const std::vector<int32_t> want1 = alone(*e, page1), want2 = alone(*e, page2), want_chat = alone(*e, chat);
  GenerateCallbacks cb;
  Engine::RunPtr a = e->begin(page1, cb, 0), b = e->begin(page2, cb, 1), c = e->begin(chat, cb, 2);
  Engine::Run* all[3] = {a.get(), b.get(), c.get()};
  auto step_all = [&] {
    for (const Engine::StepResult& r : e->step(all))
      if (r.error) std::rethrow_exception(r.error);
  };
  int steps = 0;
  bool chat_moved = false;
  while (e->run_stage(*a) != Engine::RunStage::Decode) {
    ASSERT_EQ(e->run_stage(*b), Engine::RunStage::Vision) << "page 2 encoded beside page 1, step " << steps;
    step_all();
    chat_moved |= e->run_stage(*c) != Engine::RunStage::Vision;
    ASSERT_LT(++steps, 1000);
  }
  EXPECT_TRUE(chat_moved) << "the chat request waited on the document's first page";
  EXPECT_GT(steps, 2);  // the first page was encoded in pieces, with company
  // Page 2 now encodes, page 1 getting a token every step meanwhile.
  int page2_steps = 0;
  while (e->run_stage(*b) == Engine::RunStage::Vision || e->run_stage(*b) == Engine::RunStage::Prefill) {
    const int64_t before = e->run_tokens(*a);
    step_all();
    EXPECT_EQ(e->run_tokens(*a), before + 1) << "page 1 got no token in page 2's encode step " << page2_steps;
    ASSERT_LT(++page2_steps, 1000);
  }
  EXPECT_GT(page2_steps, 0);
  for (Engine::RunPtr* r : {&a, &b, &c}) finish(*e, **r);
  EXPECT_EQ(e->end(*a).token_ids, want1);
  EXPECT_EQ(e->end(*b).token_ids, want2);
  EXPECT_EQ(e->end(*c).token_ids, want_chat);
}

INSTANTIATE_TEST_SUITE_P(Formats, VisionInterleave, ::testing::Values(WeightFormat::F32, WeightFormat::BF16),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

}  // namespace
}  // namespace qvl
