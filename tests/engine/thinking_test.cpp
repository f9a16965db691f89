// A Thinking model (the tiny fixture model with the Thinking chat template):
// the answer splits at "</think>" into reasoning and reply, the reasoning
// budget forces "</think>", and response_format constrains only the reply.
// The weights are random, so what is asserted is what the engine promises,
// not what the model says.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/reasoning.h"
#include "engine_fixtures.h"
#include "thinking_model.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {
namespace {

using namespace engine_test;
using json = nlohmann::json;

Engine& thinking_engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineParams p;
    p.model_dir = test::make_thinking_model(kFixtures, ::testing::TempDir());
    p.weights = WeightFormat::F32;
    p.threads = 2;
    p.ctx_size = 2048;
    return Engine::create(p);
  }();
  return *e;
}

int32_t think_close() { return thinking_engine().tokenizer().token_id("</think>"); }

TEST(ReasoningSplitter, SplitsAtTheCloseTagAndTrimsNewlines) {
  auto split = [](std::string_view s) {
    ReasoningSplitter::Pieces p = split_reasoning(s);
    return std::make_pair(p.reasoning, p.content);
  };
  EXPECT_EQ(split("\nLook.\n\nCount.\n</think>\n\n{\"n\": 3}\n"),
            std::make_pair(std::string("Look.\n\nCount."), std::string("{\"n\": 3}\n")));
  EXPECT_EQ(split("no close tag\n\n"), std::make_pair(std::string("no close tag"), std::string()));
  EXPECT_EQ(split("</think>"), std::make_pair(std::string(), std::string()));
  EXPECT_EQ(split("a</thin"), std::make_pair(std::string("a</thin"), std::string()));
  EXPECT_EQ(split("a</think>b</think>c"), std::make_pair(std::string("a"), std::string("b</think>c")));
}

TEST(ReasoningSplitter, StreamedPiecesAddUpToTheWholeSplit) {
  const std::string answer = "\n\nStep 1.\n\nStep 2 </thinking? no.\n</think>\n\nReply\n\nend";
  const ReasoningSplitter::Pieces whole = split_reasoning(answer);
  // Every cut into two and into single bytes.
  for (size_t cut = 0; cut <= answer.size(); ++cut) {
    ReasoningSplitter s;
    ReasoningSplitter::Pieces a = s.push(std::string_view(answer).substr(0, cut));
    ReasoningSplitter::Pieces b = s.push(std::string_view(answer).substr(cut));
    ReasoningSplitter::Pieces c = s.finish();
    EXPECT_EQ(a.reasoning + b.reasoning + c.reasoning, whole.reasoning) << cut;
    EXPECT_EQ(a.content + b.content + c.content, whole.content) << cut;
  }
  ReasoningSplitter s;
  std::string reasoning, content;
  for (char ch : answer) {
    ReasoningSplitter::Pieces p = s.push(std::string_view(&ch, 1));
    reasoning += p.reasoning, content += p.content;
  }
  EXPECT_EQ(reasoning, whole.reasoning);
  EXPECT_EQ(content, whole.content);
  EXPECT_EQ(whole.reasoning, "Step 1.\n\nStep 2 </thinking? no.");
  EXPECT_EQ(whole.content, "Reply\n\nend");
}

TEST(Thinking, EngineSaysSoAndThePromptOpensTheThinkBlock) {
  EXPECT_TRUE(thinking_engine().info().thinking);
  const Tokenizer& tok = thinking_engine().tokenizer();
  const std::vector<int32_t> ids = thinking_engine().prompt_tokens(user_request({}, "hi", 8));
  const std::vector<int32_t> tail = tok.encode("<|im_start|>assistant\n<think>\n");
  ASSERT_GE(ids.size(), tail.size());
  EXPECT_EQ(std::vector<int32_t>(ids.end() - tail.size(), ids.end()), tail);
}

TEST(Thinking, BudgetForcesTheCloseTagAfterThatManyTokens) {
  for (int64_t budget : {0, 1, 5}) {
    GenerateRequest r = user_request({}, "Count the cats.", 12);
    r.reasoning_budget = budget;
    const GenerateResult res = thinking_engine().generate(r);
    ASSERT_GT(res.token_ids.size(), static_cast<size_t>(budget)) << budget;
    for (int64_t i = 0; i < budget; ++i) EXPECT_NE(res.token_ids[i], think_close()) << budget;
    EXPECT_EQ(res.token_ids[budget], think_close()) << budget;
    // The split is the tokens' text at the tag.
    const std::string text = thinking_engine().tokenizer().decode(res.token_ids, true);
    const ReasoningSplitter::Pieces p = split_reasoning(text);
    EXPECT_EQ(res.reasoning, p.reasoning) << budget;
    EXPECT_EQ(res.text, p.content) << budget;
    if (budget == 0) {
      EXPECT_EQ(res.reasoning, "");
    }
  }
}

TEST(Thinking, WithoutTheCloseTagEverythingIsReasoning) {
  GenerateRequest r = user_request({}, "Count the cats.", 6);
  r.logit_bias = {{think_close(), -1e4f}};
  const GenerateResult res = thinking_engine().generate(r);
  ASSERT_EQ(res.token_ids.size(), 6u);
  EXPECT_EQ(res.text, "");
  EXPECT_EQ(res.reasoning, split_reasoning(thinking_engine().tokenizer().decode(res.token_ids, true)).reasoning);
  EXPECT_FALSE(res.reasoning->empty());
}

// The schema constrains the reply only: the reasoning is free text (the
// budget's tokens), then "</think>", then a value that parses.
TEST(Thinking, JsonSchemaConstrainsOnlyTheReply) {
  const char* schema = R"({"type":"object","properties":{"answer":{"enum":["yes","no"]},"cats":{"type":"boolean"}},)"
                       R"("required":["answer","cats"],"additionalProperties":false})";
  int finished = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    GenerateRequest r = user_request({}, "Are there cats? Answer in JSON.", 200);
    r.ignore_eos = false;
    r.sampling.temperature = 1.0;
    r.sampling.seed = seed;
    r.reasoning_budget = 4;
    r.response_format = {ResponseFormat::Type::JsonSchema, schema};
    const GenerateResult res = thinking_engine().generate(r);
    ASSERT_GE(res.token_ids.size(), 5u);
    EXPECT_EQ(res.token_ids[4], think_close()) << seed;
    if (res.finish_reason != FinishReason::Stop) continue;
    ++finished;
    const json j = json::parse(res.text);  // throws unless the reply is the value
    EXPECT_TRUE(j.at("answer") == "yes" || j.at("answer") == "no") << res.text;
    EXPECT_TRUE(j.at("cats").is_boolean()) << res.text;
    EXPECT_EQ(res.reasoning->find("</think>"), std::string::npos);
  }
  EXPECT_GE(finished, 3);
}

// tool_choice required: after the reasoning, the reply is tool-call blocks,
// parsed into calls; the reasoning stays free text.
TEST(Thinking, RequiredToolCallFollowsTheReasoning) {
  const Tool unit{"set_unit", R"({"type":"function","function":{"name":"set_unit","parameters":{"type":"object",)"
                              R"("properties":{"unit":{"enum":["celsius","fahrenheit"]}},"required":["unit"],)"
                              R"("additionalProperties":false}}})",
                  R"({"type":"object","properties":{"unit":{"enum":["celsius","fahrenheit"]}},"required":["unit"],)"
                  R"("additionalProperties":false})"};
  GenerateRequest r = user_request({}, "Use celsius.", 200);
  r.ignore_eos = false;
  r.tools = {unit};
  r.tool_choice = ToolChoice::Required;
  r.parallel_tool_calls = false;
  r.reasoning_budget = 2;
  const GenerateResult res = thinking_engine().generate(r);
  ASSERT_GE(res.token_ids.size(), 3u);
  EXPECT_EQ(res.token_ids[2], think_close());
  ASSERT_EQ(res.finish_reason, FinishReason::ToolCalls) << res.text;
  ASSERT_EQ(res.tool_calls.size(), 1u);
  EXPECT_EQ(res.tool_calls[0].name, "set_unit");
  const json args = json::parse(res.tool_calls[0].arguments);
  EXPECT_TRUE(args.at("unit") == "celsius" || args.at("unit") == "fahrenheit") << res.tool_calls[0].arguments;
  EXPECT_EQ(res.text, "");
  EXPECT_EQ(res.reasoning_tokens, 2);
}

TEST(Thinking, ReasoningBudgetIsCheckedAndNeedsAThinkingModel) {
  GenerateRequest r = user_request({}, "x", 4);
  r.reasoning_budget = -1;
  try {
    thinking_engine().validate(r);
    FAIL() << "a negative budget was accepted";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "reasoning_budget");
  }
  EngineParams p;
  p.model_dir = kFixtures + "/tiny-qwen3vl";
  p.threads = 1;
  p.ctx_size = 256;
  auto instruct = Engine::create(p);
  EXPECT_FALSE(instruct->info().thinking);
  EXPECT_FALSE(instruct->generate(user_request({}, "x", 2)).reasoning.has_value());
  r.reasoning_budget = 3;
  try {
    instruct->validate(r);
    FAIL() << "reasoning_budget was accepted by an Instruct model";
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), "reasoning_budget");
  }
}

}  // namespace
}  // namespace qvl
