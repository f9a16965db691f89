// Jump-forward (forced tokens fed in one piece with the token before them)
// against step-by-step decoding, on the tiny random-weight model: its words
// are random, but a constrained answer is decided by the grammar and the
// logits alone, so the two paths must give the same token ids, text, stream
// deltas, finish reason and logprobs, greedy and seeded, for bf16 (whose
// larger matmuls are not row-exact, like f32's) and q8 weights; and jump-forward
// must have taken fewer model steps for the same tokens, or it did nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>

#include "engine/engine.h"
#include "engine/reasoning.h"
#include "engine_fixtures.h"
#include "thinking_model.h"
#include "tokenizer/tokenizer.h"

namespace qvl {
namespace {

using namespace engine_test;

std::unique_ptr<Engine> make_engine(WeightFormat format, int slots = 1) {
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.weights = format;
  p.threads = 2;
  p.slots = slots;
  p.ctx_size = 2048 * slots;
  return Engine::create(p);
}

// Keys and punctuation in characters the vocabulary has few tokens for, so
// the grammar leaves one continuation at many steps; an enum, an array and a
// nested object so it also leaves choices.
const char* kSchema = R"({
  "type": "object",
  "properties": {
    "ÿþ|¦": {"type": "integer"},
    "§¤": {"enum": ["¢¬", "¥÷"]},
    "items": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2},
    "vendor": {"type": "object", "properties": {"¨ª": {"type": "null"}}, "required": ["¨ª"],
               "additionalProperties": false}
  },
  "required": ["ÿþ|¦", "§¤", "items", "vendor"],
  "additionalProperties": false
})";

Tool tally_tool() {
  return {
      "tally_¦§",
      R"({"type":"function","function":{"name":"tally_¦§","parameters":{"type":"object","properties":{"¤¢":{"type":"integer"}},"required":["¤¢"],"additionalProperties":false}}})",
      R"({"type":"object","properties":{"¤¢":{"type":"integer"}},"required":["¤¢"],"additionalProperties":false})"};
}

GenerateRequest json_request(std::optional<uint64_t> seed, int64_t max_tokens) {
  GenerateRequest r = user_request({}, "Fill in the record.", max_tokens);
  r.ignore_eos = false;
  r.response_format = {ResponseFormat::Type::JsonSchema, kSchema};
  if (seed) {
    r.sampling.temperature = 1.0;
    r.sampling.seed = *seed;
  }
  r.top_logprobs = 3;
  return r;
}

GenerateRequest tool_request(uint64_t seed) {
  GenerateRequest r = user_request({}, "Tally it.", 200);
  r.ignore_eos = false;
  r.sampling.temperature = 0.7;
  r.sampling.seed = seed;
  r.tools = {tally_tool()};
  r.tool_choice = ToolChoice::Required;
  r.top_logprobs = 1;
  return r;
}

// An answer and what its stream delivered.
struct Outcome {
  GenerateResult result;
  std::string streamed;
  std::vector<std::string> deltas;  // piece by piece, as a client receives them
  std::vector<TokenLogprob> streamed_logprobs;
};

Outcome generate(Engine& e, GenerateRequest r, bool jump_forward) {
  r.jump_forward = jump_forward;
  Outcome out;
  GenerateCallbacks cb;
  cb.on_delta = [&](const ChoiceDelta& d) {
    out.streamed += d.text;
    out.deltas.emplace_back(d.text);
    if (d.logprob) out.streamed_logprobs.push_back(*d.logprob);
    return true;
  };
  e.reset();  // from an empty cache both times
  out.result = e.generate(r, cb);
  return out;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void expect_same_logprobs(const std::vector<TokenLogprob>& a, const std::vector<TokenLogprob>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "token " << i);
    EXPECT_EQ(a[i].token, b[i].token);
    EXPECT_TRUE(same_bits(a[i].logprob, b[i].logprob)) << a[i].logprob << " vs " << b[i].logprob;
    ASSERT_EQ(a[i].top.size(), b[i].top.size());
    for (size_t k = 0; k < a[i].top.size(); ++k) {
      EXPECT_EQ(a[i].top[k].first, b[i].top[k].first);
      EXPECT_TRUE(same_bits(a[i].top[k].second, b[i].top[k].second));
    }
  }
}

void expect_same(const Outcome& step, const Outcome& jump) {
  const GenerateResult &a = step.result, &b = jump.result;
  EXPECT_EQ(a.token_ids, b.token_ids);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.finish_reason, b.finish_reason);
  ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size());
  for (size_t i = 0; i < a.tool_calls.size(); ++i) EXPECT_EQ(a.tool_calls[i].arguments, b.tool_calls[i].arguments);
  expect_same_logprobs(a.logprobs, b.logprobs);
  EXPECT_EQ(step.streamed, jump.streamed);
  EXPECT_EQ(step.deltas, jump.deltas);
  expect_same_logprobs(step.streamed_logprobs, jump.streamed_logprobs);
  EXPECT_EQ(a.timings.forced_tokens, b.timings.forced_tokens);
  EXPECT_EQ(a.timings.decode_steps, a.timings.decode_tokens) << "step by step: one token a step";
}

class JumpForward : public ::testing::TestWithParam<WeightFormat> {
 protected:
  Engine& engine() {
    static std::map<WeightFormat, std::unique_ptr<Engine>> engines;
    auto& e = engines[GetParam()];
    if (!e) e = make_engine(GetParam());
    return *e;
  }
};

// Forced tokens were fed in pieces: fewer forwards for as many tokens.
void expect_fewer_steps(const Outcome& step, const Outcome& jump) {
  const Timings &a = step.result.timings, &b = jump.result.timings;
  ASSERT_GT(a.forced_tokens, 0) << "the schema should leave one continuation somewhere: " << step.result.text;
  EXPECT_EQ(a.decode_tokens, b.decode_tokens);
  EXPECT_LT(b.decode_steps, a.decode_steps) << "jump-forward fed no piece";
}

TEST_P(JumpForward, GreedyJsonSchemaEqualsStepByStep) {
  const GenerateRequest r = json_request(std::nullopt, 120);
  const Outcome step = generate(engine(), r, false), jump = generate(engine(), r, true);
  expect_same(step, jump);
  expect_fewer_steps(step, jump);
}

TEST_P(JumpForward, SeededJsonSchemaEqualsStepByStep) {
  int fewer = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const GenerateRequest r = json_request(seed, 120);
    const Outcome step = generate(engine(), r, false), jump = generate(engine(), r, true);
    expect_same(step, jump);
    fewer += jump.result.timings.decode_steps < step.result.timings.decode_steps;
  }
  EXPECT_GE(fewer, 3) << "jump-forward should save steps in most answers";
}

TEST_P(JumpForward, SeededToolCallEqualsStepByStep) {
  int fewer = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    const GenerateRequest r = tool_request(seed);
    const Outcome step = generate(engine(), r, false), jump = generate(engine(), r, true);
    expect_same(step, jump);
    fewer += jump.result.timings.decode_steps < step.result.timings.decode_steps;
  }
  EXPECT_GE(fewer, 2);
}

// An answer cut inside a forced run (max_tokens at every length, or a stop
// string in the forced text) ends where step-by-step ends it, and the cache
// holds what step-by-step fed: the next request reuses the same prefix.
TEST_P(JumpForward, EndsInsideAForcedRunAsStepByStep) {
  const GenerateRequest full = json_request(std::nullopt, 30);
  const Outcome whole = generate(engine(), full, false);
  ASSERT_GE(whole.result.token_ids.size(), 8u);
  for (int64_t n = 1; n <= static_cast<int64_t>(whole.result.token_ids.size()); ++n) {
    SCOPED_TRACE(::testing::Message() << "max_tokens " << n);
    const GenerateRequest r = json_request(std::nullopt, n);
    expect_same(generate(engine(), r, false), generate(engine(), r, true));
  }
  GenerateRequest stopped = full;
  stopped.stop = {"§"};
  const Outcome step = generate(engine(), stopped, false), jump = generate(engine(), stopped, true);
  expect_same(step, jump);
  EXPECT_EQ(step.result.text.find("§"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Formats, JumpForward, ::testing::Values(WeightFormat::BF16, WeightFormat::Q8),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

// A Thinking model (the tiny model with the Thinking chat template) whose
// reasoning budget runs out: "</think>" is forced after the budget's last
// token, and after it the opening the reply's schema forces. With
// jump-forward they go in one piece with that last reasoning token; the
// answer (reasoning and reply, their streamed pieces as the server splits
// them, logprobs) is step-by-step's, and the piece saves steps even where
// "</think>" is the only forced token (no schema).
class ThinkingJumpForward : public JumpForward {
 protected:
  Engine& engine() {
    static std::map<WeightFormat, std::unique_ptr<Engine>> engines;
    auto& e = engines[GetParam()];
    if (!e) {
      EngineParams p;
      p.model_dir = test::make_thinking_model(kFixtures, ::testing::TempDir());
      p.weights = GetParam();
      p.threads = 2;
      p.ctx_size = 2048;
      e = Engine::create(p);
    }
    return *e;
  }
  int32_t think_close() { return engine().tokenizer().token_id("</think>"); }
};

GenerateRequest thinking_request(std::optional<uint64_t> seed, int64_t budget, bool schema, int64_t max_tokens) {
  GenerateRequest r = schema ? json_request(seed, max_tokens) : user_request({}, "Count the cats.", max_tokens);
  r.ignore_eos = false;
  r.reasoning_budget = budget;
  if (seed) {
    r.sampling.temperature = 1.0;
    r.sampling.seed = *seed;
  }
  r.top_logprobs = 2;
  return r;
}

// The streamed pieces split as the chat route splits them: reasoning_content
// and content deltas, in order.
std::vector<std::pair<std::string, std::string>> split_deltas(const std::vector<std::string>& deltas) {
  ReasoningSplitter s;
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& d : deltas) {
    ReasoningSplitter::Pieces p = s.push(d);
    out.emplace_back(std::move(p.reasoning), std::move(p.content));
  }
  ReasoningSplitter::Pieces p = s.finish();
  out.emplace_back(std::move(p.reasoning), std::move(p.content));
  return out;
}

void expect_same_thinking(const Outcome& step, const Outcome& jump) {
  expect_same(step, jump);
  EXPECT_EQ(step.result.reasoning, jump.result.reasoning);
  EXPECT_EQ(step.result.reasoning_tokens, jump.result.reasoning_tokens);
  EXPECT_EQ(split_deltas(step.deltas), split_deltas(jump.deltas));
}

TEST_P(ThinkingJumpForward, ForcedCloseEqualsStepByStepAndSavesSteps) {
  for (bool schema : {false, true}) {
    for (std::optional<uint64_t> seed : {std::optional<uint64_t>(), std::optional<uint64_t>(5)}) {
      for (int64_t budget : {0, 1, 4}) {
        SCOPED_TRACE(::testing::Message() << "schema " << schema << " seed " << seed.value_or(0) << " budget "
                                          << budget);
        const GenerateRequest r = thinking_request(seed, budget, schema, 40);
        const Outcome step = generate(engine(), r, false), jump = generate(engine(), r, true);
        expect_same_thinking(step, jump);
        const GenerateResult& res = jump.result;
        ASSERT_GT(res.token_ids.size(), static_cast<size_t>(budget + 1)) << res.text;
        EXPECT_EQ(res.token_ids[budget], think_close());
        EXPECT_EQ(res.reasoning_tokens, budget);
        EXPECT_EQ(step.result.timings.decode_tokens, res.timings.decode_tokens);
        ASSERT_GE(step.result.timings.forced_tokens, 1) << "the close was not forced";
        // Budget 0: "</think>" is decided from the prompt's logits, a step of
        // its own either way; what a schema forces after it joins it. Without
        // a schema "</think>" is the only forced token: exactly one step saved.
        const int64_t steps = res.timings.decode_steps, steps_alone = step.result.timings.decode_steps;
        if (!schema) EXPECT_EQ(steps, budget > 0 ? steps_alone - 1 : steps_alone);
        else EXPECT_LT(steps, steps_alone);
      }
    }
  }
}

// The budget's last token is the answer's last allowed one, or one before:
// the forced close is cut where step-by-step cuts it.
TEST_P(ThinkingJumpForward, MaxTokensAroundTheForcedCloseAsStepByStep) {
  for (bool schema : {false, true})
    for (int64_t n = 1; n <= 8; ++n) {
      SCOPED_TRACE(::testing::Message() << "schema " << schema << " max_tokens " << n);
      const GenerateRequest r = thinking_request(3, 3, schema, n);
      const Outcome step = generate(engine(), r, false), jump = generate(engine(), r, true);
      expect_same_thinking(step, jump);
      EXPECT_EQ(jump.result.token_ids.size(), static_cast<size_t>(n));
    }
}

INSTANTIATE_TEST_SUITE_P(Formats, ThinkingJumpForward, ::testing::Values(WeightFormat::BF16, WeightFormat::Q8),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

// Several answers decoding together, some with forced pieces: each equals
// its step-by-step self, and the pieces stay within the rows that keep the
// bits (bf16: 8 in all).
TEST(JumpForwardBatched, AnswersDecodedTogetherEqualStepByStep) {
  for (WeightFormat format : {WeightFormat::BF16, WeightFormat::Q8}) {
    SCOPED_TRACE(weight_format_name(format));
    auto e = make_engine(format, 3);
    std::vector<GenerateRequest> reqs = {json_request(std::nullopt, 80), json_request(7, 80), tool_request(3)};
    std::vector<GenerateResult> got[2];
    for (bool jump : {false, true}) {
      for (GenerateRequest& r : reqs) r.jump_forward = jump;
      e->reset();
      const GenerateCallbacks cb;
      std::vector<Engine::RunPtr> runs;
      std::vector<Engine::Run*> live;
      for (size_t i = 0; i < reqs.size(); ++i) {
        runs.push_back(e->begin(reqs[i], cb, static_cast<int>(i)));
        live.push_back(runs.back().get());
      }
      while (!live.empty()) {
        const std::vector<Engine::StepResult> s = e->step(live);
        for (size_t i = s.size(); i-- > 0;) {
          if (s[i].error) std::rethrow_exception(s[i].error);
          if (!s[i].more) live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      for (auto& run : runs) got[jump].push_back(e->end(*run));
    }
    int64_t steps[2] = {0, 0};
    for (size_t i = 0; i < reqs.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "request " << i);
      EXPECT_EQ(got[0][i].token_ids, got[1][i].token_ids);
      EXPECT_EQ(got[0][i].text, got[1][i].text);
      expect_same_logprobs(got[0][i].logprobs, got[1][i].logprobs);
      for (int j : {0, 1}) steps[j] += got[j][i].timings.decode_steps;
    }
    EXPECT_LT(steps[1], steps[0]);
  }
}

}  // namespace
}  // namespace qvl
