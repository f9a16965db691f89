// Hundreds of answers of the tiny random-weight model under the grammar
// test's schemas (tests/grammar/schemas.h), sampled at temperature 1 with
// distinct seeds: every answer that ends is valid JSON, in qvl's layout, and
// valid against its schema by an independent validator (schema_validator.h).
// The model's own words are random; the constraint is all that makes them
// structured, so this holds the whole path (tokenizer bytes, masks, EOS,
// the sampler) to the promise, not only the grammar layer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../grammar/schema_validator.h"
#include "../grammar/schemas.h"
#include "engine/engine.h"
#include "engine_fixtures.h"
#include "tokenizer/tokenizer.h"

namespace qvl {
namespace {

using namespace engine_test;

TEST(ConstrainedGenerations, EveryFinishedAnswerValidates) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.weights = WeightFormat::BF16;
  p.threads = 2;
  p.ctx_size = 2048;
  std::unique_ptr<Engine> engine = Engine::create(p);
  // Inside a string almost every token is allowed and this model's logits
  // spread widely (std ≈ 50): a bias towards the closing characters makes
  // most answers end within the budget; the mask still decides the rest.
  std::vector<std::pair<int32_t, float>> bias;
  for (const char* t : {"\"", "}", "]", ","}) bias.emplace_back(engine->tokenizer().token_id(t), 120.0f);

  const auto schemas = test::generation_schemas();
  constexpr int kPerSchema = 30;  // 360 answers (the grammar layer's own test samples 2,400 more)
  int total = 0, finished = 0;
  for (const auto& [name, schema] : schemas) {
    const test::SchemaValidator validator(nlohmann::ordered_json::parse(schema));
    for (int i = 0; i < kPerSchema; ++i) {
      GenerateRequest r = user_request({}, "Answer in JSON.", 160);
      r.ignore_eos = false;
      r.sampling.temperature = 1.0;
      r.sampling.seed = 1000 * total + 17;
      r.logit_bias = bias;
      r.response_format = {ResponseFormat::Type::JsonSchema, schema};
      const GenerateResult res = engine->generate(r);
      ++total;
      ASSERT_TRUE(res.finish_reason == FinishReason::Stop || res.finish_reason == FinishReason::Length)
          << name << ": " << finish_reason_name(res.finish_reason);
      if (res.finish_reason != FinishReason::Stop) continue;
      ++finished;
      nlohmann::ordered_json v;
      try {
        v = nlohmann::ordered_json::parse(res.text);
      } catch (const std::exception& e) {
        FAIL() << name << " seed " << *r.sampling.seed << ": not JSON (" << e.what() << "): " << res.text;
      }
      EXPECT_EQ(validator.check(v), "") << name << ": " << res.text;
      EXPECT_TRUE(test::compact_layout(res.text)) << name << ": " << res.text;
    }
  }
  EXPECT_EQ(total, static_cast<int>(schemas.size()) * kPerSchema);
  EXPECT_GE(finished, total * 8 / 10) << "most answers should end within 160 tokens";
  std::printf("%d of %d answers ended within the budget; all of them validated\n", finished, total);
}

}  // namespace
}  // namespace qvl
