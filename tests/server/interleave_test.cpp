// Engine::begin/step/end on several slots, interleaved step by step the way
// the scheduler drives them: each sequence produces exactly the tokens it
// produces alone through generate().
#include <gtest/gtest.h>

#include <memory>

#include "engine/engine.h"
#include "image/image.h"
#include "util/error.h"

namespace qvl {
namespace {

GenerateRequest request(const std::string& text, const std::string& image) {
  GenerateRequest r;
  Message m{"user", {}};
  if (!image.empty())
    m.parts.push_back({"", std::make_shared<Image>(load_image(std::string(QVL_FIXTURES_DIR) + "/golden/images/" + image))});
  m.parts.push_back({text, nullptr});
  r.messages.push_back(std::move(m));
  r.sampling.temperature = 0;
  r.max_tokens = 12;
  return r;
}

TEST(Interleave, SlotsStepInTurnGiveTheAnswersOfGenerateAlone) {
  EngineParams p;
  p.model_dir = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";
  p.threads = 1;
  p.ctx_size = 1024;
  p.slots = 3;
  p.batch = 16;  // several prefill chunks per prompt, interleaved with the others' decoding
  auto engine = Engine::create(p);
  ASSERT_EQ(engine->slots(), 3);
  ASSERT_EQ(engine->slot_ctx(), 341);
  std::vector<GenerateRequest> reqs = {request("What is in this image?", "gradient_320x240.png"),
                                       request("Read the text.", "text_400x128.png"), request("Hello there", "")};
  std::vector<std::vector<int32_t>> alone;
  for (const auto& r : reqs) {
    alone.push_back(engine->generate(r).token_ids);
    engine->reset();
  }
  GenerateCallbacks cb;
  std::vector<Engine::RunPtr> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(engine->begin(reqs[i], cb, i));
  for (bool more = true; more;) {
    more = false;
    for (auto& r : runs) more = engine->step(*r) || more;
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(engine->end(*runs[i]).token_ids, alone[i]) << "sequence " << i;
  EXPECT_THROW(engine->begin(reqs[0], cb, 3), Error);
}

}  // namespace
}  // namespace qvl
