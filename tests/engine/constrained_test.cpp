// The engine's constrained decoding, tool calls, logprobs, logit_bias and n
// on the tiny random-weight model: its words are random, so what is asserted
// is what the constraints promise (every finished answer parses and has the
// schema's shape, calls name the right tool), and what sampling promises
// (logprobs consistent with the choice, n choices sharing one prefill).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine_fixtures.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {
namespace {

using namespace engine_test;
using json = nlohmann::json;

Engine& engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineParams p;
    p.model_dir = kFixtures + "/tiny-qwen3vl";
    p.weights = WeightFormat::F32;
    p.threads = 2;
    p.ctx_size = 4096;
    return Engine::create(p);
  }();
  return *e;
}

GenerateRequest sampled(const std::string& text, uint64_t seed, int64_t max_tokens) {
  GenerateRequest r = user_request({}, text, max_tokens);
  r.ignore_eos = false;
  r.sampling.temperature = 1.0;
  r.sampling.seed = seed;
  return r;
}

const char* kInvoiceSchema = R"({
  "type": "object",
  "properties": {
    "invoice_number": {"type": "string"},
    "total": {"type": "number"},
    "paid": {"type": "boolean"},
    "currency": {"enum": ["USD", "EUR"]},
    "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}
  },
  "required": ["invoice_number", "total", "paid", "currency", "items"],
  "additionalProperties": false
})";

Tool weather_tool() {
  return {"get_weather",
          R"({"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city"],"additionalProperties":false}}})",
          R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]}},"required":["city"],"additionalProperties":false})"};
}

Tool sum_tool() {
  return {"sum_prices",
          R"({"type":"function","function":{"name":"sum_prices","parameters":{"type":"object","properties":{"prices":{"type":"array","items":{"type":"number"}}},"required":["prices"]}}})",
          R"({"type":"object","properties":{"prices":{"type":"array","items":{"type":"number"}}},"required":["prices"]})"};
}

// The random model's logits spread widely (std ≈ 50), and inside a JSON
// string almost every token is allowed, so its strings rarely end: a bias
// towards the closing characters makes its answers finish, while the mask
// still decides everything else (keys, values, commas, nesting).
std::vector<std::pair<int32_t, float>> closing_bias() {
  std::vector<std::pair<int32_t, float>> bias;
  for (const char* t : {"\"", "}", "]"}) bias.emplace_back(engine().tokenizer().token_id(t), 150.0f);
  return bias;
}

TEST(Constrained, JsonObjectAnswersParse) {
  int finished = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GenerateRequest r = sampled("Give me JSON.", seed, 400);
    r.response_format.type = ResponseFormat::Type::JsonObject;
    r.logit_bias = closing_bias();
    const GenerateResult res = engine().generate(r);
    if (res.finish_reason != FinishReason::Stop) continue;
    ++finished;
    const json j = json::parse(res.text);  // throws if it does not parse
    EXPECT_TRUE(j.is_object()) << res.text;
  }
  EXPECT_GE(finished, 9) << "most constrained answers should complete within 400 tokens";
}

TEST(Constrained, JsonSchemaAnswersHaveTheSchemasShape) {
  int finished = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    GenerateRequest r = sampled("Extract the invoice.", seed, 400);
    r.response_format = {ResponseFormat::Type::JsonSchema, kInvoiceSchema};
    const GenerateResult res = engine().generate(r);
    if (res.finish_reason != FinishReason::Stop) continue;
    ++finished;
    const json j = json::parse(res.text);
    ASSERT_TRUE(j.is_object()) << res.text;
    EXPECT_EQ(j.size(), 5u) << res.text;
    EXPECT_TRUE(j.at("invoice_number").is_string()) << res.text;
    EXPECT_TRUE(j.at("total").is_number()) << res.text;
    EXPECT_TRUE(j.at("paid").is_boolean()) << res.text;
    EXPECT_TRUE(j.at("currency") == "USD" || j.at("currency") == "EUR") << res.text;
    ASSERT_TRUE(j.at("items").is_array()) << res.text;
    EXPECT_GE(j.at("items").size(), 1u);
    EXPECT_LE(j.at("items").size(), 3u);
    for (const json& it : j.at("items")) EXPECT_TRUE(it.is_number_integer()) << res.text;
  }
  EXPECT_GE(finished, 6);
}

TEST(Constrained, GreedyJsonIsReproducible) {
  GenerateRequest r = user_request({}, "Extract the invoice.", 400);
  r.ignore_eos = false;
  r.response_format = {ResponseFormat::Type::JsonSchema, kInvoiceSchema};
  const GenerateResult a = engine().generate(r), b = engine().generate(r);
  EXPECT_EQ(a.token_ids, b.token_ids);
}

TEST(Constrained, RequiredToolChoiceMakesACall) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GenerateRequest r = sampled("What is the weather in Paris?", seed, 400);
    r.logit_bias = closing_bias();
    r.tools = {weather_tool(), sum_tool()};
    r.tool_choice = ToolChoice::Required;
    const GenerateResult res = engine().generate(r);
    if (res.finish_reason == FinishReason::Length) continue;
    ASSERT_EQ(res.finish_reason, FinishReason::ToolCalls) << res.text;
    ASSERT_GE(res.tool_calls.size(), 1u);
    for (const ToolCall& c : res.tool_calls) {
      EXPECT_EQ(c.id.rfind("call_", 0), 0u) << c.id;
      const json args = json::parse(c.arguments);
      ASSERT_TRUE(args.is_object()) << c.arguments;
      if (c.name == "get_weather") {
        EXPECT_TRUE(args.at("city").is_string()) << c.arguments;
      } else {
        ASSERT_EQ(c.name, "sum_prices");
        EXPECT_TRUE(args.at("prices").is_array()) << c.arguments;
      }
    }
    EXPECT_EQ(res.text, "") << "a required call leaves no room for text";
  }
}

TEST(Constrained, NamedFunctionIsTheOneCalled) {
  GenerateRequest r = sampled("Add these up.", 5, 400);
  r.tools = {weather_tool(), sum_tool()};
  r.tool_choice = ToolChoice::Function;
  r.tool_choice_name = "sum_prices";
  r.parallel_tool_calls = false;
  const GenerateResult res = engine().generate(r);
  if (res.finish_reason == FinishReason::Length) GTEST_SKIP() << "the random model wrote past 400 tokens";
  ASSERT_EQ(res.finish_reason, FinishReason::ToolCalls);
  ASSERT_EQ(res.tool_calls.size(), 1u);
  EXPECT_EQ(res.tool_calls[0].name, "sum_prices");
}

TEST(Constrained, ToolChoiceNoneNeverOpensABlock) {
  const int32_t open = engine().tokenizer().token_id("<tool_call>");
  ASSERT_GE(open, 0);
  GenerateRequest r = user_request({}, "What is the weather?", 30);
  r.tools = {weather_tool()};
  r.tool_choice = ToolChoice::None;
  r.logit_bias = {{open, 50.0f}};  // the model would open one at every step
  const GenerateResult res = engine().generate(r);
  EXPECT_EQ(std::count(res.token_ids.begin(), res.token_ids.end(), open), 0);
  EXPECT_TRUE(res.tool_calls.empty());
}

TEST(Constrained, AutoToolChoiceConstrainsAnOpenedBlock) {
  const int32_t open = engine().tokenizer().token_id("<tool_call>");
  GenerateRequest r = user_request({}, "What is the weather?", 300);
  r.ignore_eos = false;
  r.tools = {weather_tool()};
  r.tool_choice = ToolChoice::Auto;
  r.logit_bias = {{open, 1e4f}};  // opens a block at once: the grammar must take over inside it
  const GenerateResult res = engine().generate(r);
  ASSERT_FALSE(res.token_ids.empty());
  EXPECT_EQ(res.token_ids[0], open);
  ASSERT_GE(res.tool_calls.size(), 1u) << res.text;
  EXPECT_EQ(res.tool_calls[0].name, "get_weather");
  EXPECT_TRUE(json::parse(res.tool_calls[0].arguments).at("city").is_string());
}

TEST(Logprobs, GreedyTokenIsTheMostLikely) {
  GenerateRequest r = user_request({}, "Describe a cat.", 8);
  r.top_logprobs = 5;
  const GenerateResult res = engine().generate(r);
  ASSERT_EQ(res.logprobs.size(), res.token_ids.size());
  for (size_t i = 0; i < res.logprobs.size(); ++i) {
    const TokenLogprob& lp = res.logprobs[i];
    EXPECT_EQ(lp.token, res.token_ids[i]);
    ASSERT_EQ(lp.top.size(), 5u);
    EXPECT_EQ(lp.top[0].first, lp.token);
    EXPECT_FLOAT_EQ(lp.top[0].second, lp.logprob);
    double mass = 0;
    for (size_t k = 0; k < lp.top.size(); ++k) {
      mass += std::exp(lp.top[k].second);
      EXPECT_LE(lp.top[k].second, 0.0f);
      if (k) {
        EXPECT_GE(lp.top[k - 1].second, lp.top[k].second);
      }
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
  }
}

TEST(Logprobs, MaskedAlternativesAreNeverListed) {
  GenerateRequest r = user_request({}, "JSON please.", 6);
  r.response_format.type = ResponseFormat::Type::JsonObject;
  r.top_logprobs = 20;
  const GenerateResult res = engine().generate(r);
  ASSERT_FALSE(res.logprobs.empty());
  // The first token must open the object: every listed alternative starts with '{'.
  for (const auto& [id, lp] : res.logprobs[0].top) {
    const std::string bytes = engine().tokenizer().token_bytes(id);
    ASSERT_FALSE(bytes.empty());
    EXPECT_EQ(bytes[0], '{') << bytes;
  }
}

TEST(LogitBias, MovesTheGreedyChoice) {
  const GenerateRequest plain = user_request({}, "Hello there.", 1);
  const int32_t greedy = engine().generate(plain).token_ids.at(0);
  GenerateRequest banned = plain;
  banned.logit_bias = {{greedy, -100.0f}};
  EXPECT_NE(engine().generate(banned).token_ids.at(0), greedy);
  GenerateRequest forced = plain;
  const int32_t x = engine().tokenizer().token_id("Ġbanana") >= 0 ? engine().tokenizer().token_id("Ġbanana") : 1234;
  forced.logit_bias = {{x, 1e4f}};
  EXPECT_EQ(engine().generate(forced).token_ids.at(0), x);
}

TEST(Choices, NChoicesSharePrefillAndTheFirstEqualsASingleRun) {
  GenerateRequest one = sampled("Tell me a story.", 77, 12);
  one.ignore_eos = true;
  engine().reset();
  const GenerateResult single = engine().generate(one);
  engine().reset();
  GenerateRequest three = one;
  three.n = 3;
  const GenerateResult res = engine().generate(three);
  ASSERT_EQ(res.choices(), 3u);
  EXPECT_EQ(res.token_ids, single.token_ids) << "choice 0 draws with the request's own seed";
  EXPECT_EQ(res.timings.prefill_tokens, single.timings.prefill_tokens) << "the prompt is prefilled once";
  EXPECT_NE(res.choice(1).token_ids, res.choice(0).token_ids);
  EXPECT_NE(res.choice(2).token_ids, res.choice(1).token_ids);
  EXPECT_EQ(res.completion_tokens, 36);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(res.choice(i).token_ids.size(), 12u);
}

TEST(Choices, StreamDeltasCarryTheirChoice) {
  GenerateRequest r = sampled("Count.", 9, 6);
  r.ignore_eos = true;
  r.n = 2;
  r.top_logprobs = 0;
  std::string text[2];
  int logprobs[2] = {0, 0};
  GenerateCallbacks cb;
  cb.on_delta = [&](const ChoiceDelta& d) {
    EXPECT_TRUE(d.choice == 0 || d.choice == 1);
    text[d.choice] += d.text;
    if (d.logprob) ++logprobs[d.choice];
    return true;
  };
  const GenerateResult res = engine().generate(r, cb);
  EXPECT_EQ(text[0], res.choice(0).text);
  EXPECT_EQ(text[1], res.choice(1).text);
  EXPECT_EQ(logprobs[0], 6);
  EXPECT_EQ(logprobs[1], 6);
}

TEST(Validate, NamesTheField) {
  auto field_of = [](const GenerateRequest& r) {
    try {
      engine().validate(r);
    } catch (const FieldError& e) {
      return e.field();
    }
    return std::string("(accepted)");
  };
  GenerateRequest r = user_request({}, "x", 4);
  EXPECT_EQ(field_of(r), "(accepted)");
  GenerateRequest n0 = r;
  n0.n = 0;
  EXPECT_EQ(field_of(n0), "n");
  GenerateRequest bias = r;
  bias.logit_bias = {{999999, 1.0f}};
  EXPECT_EQ(field_of(bias), "logit_bias");
  GenerateRequest pattern = r;
  pattern.response_format = {ResponseFormat::Type::JsonSchema,
                             R"({"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}})"};
  EXPECT_EQ(field_of(pattern), "response_format.json_schema.schema.properties.zip.pattern");
  GenerateRequest named = r;
  named.tools = {weather_tool()};
  named.tool_choice = ToolChoice::Function;
  named.tool_choice_name = "nope";
  EXPECT_EQ(field_of(named), "tool_choice");
  GenerateRequest bad_params = r;
  Tool t = weather_tool();
  t.parameters = R"({"type":"object","properties":{"n":{"type":"integer","multipleOf":3}}})";
  bad_params.tools = {t};
  EXPECT_EQ(field_of(bad_params), "tools[0].function.parameters.properties.n.multipleOf");
}

}  // namespace
}  // namespace qvl
