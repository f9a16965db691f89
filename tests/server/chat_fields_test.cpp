// parse_chat_request on its own, for the fields beyond plain sampling: the
// allow-list (unknown and refused fields are 400s naming them),
// response_format, tools and tool_choice, tool turns of the history,
// logprobs, logit_bias and n. What the engine must compile (schemas) is
// checked in structured_e2e_test.cpp against the real server.
#include <gtest/gtest.h>

#include "server/requests/api_error.h"
#include "server/requests/chat_request.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;

struct Refused {
  int status = 0;  // 0: accepted
  std::string param, code, message;
};

ChatLimits limits() {
  ChatLimits l;
  l.vocab_size = 1000;
  return l;
}

// A body with one user message plus the fields of `extra` (JSON text, so
// key order is the test's).
ojson body(const std::string& extra = "{}") {
  ojson b = ojson::parse(R"({"messages": [{"role": "user", "content": "hi"}]})");
  const ojson fields = ojson::parse(extra);
  for (auto& [k, v] : fields.items()) b[k] = v;
  return b;
}

Refused refused(const ojson& b) {
  try {
    parse_chat_request(b, limits());
  } catch (const ApiError& e) {
    return {e.status(), e.param(), e.code(), e.what()};
  }
  return {};
}

ChatRequest parsed(const ojson& b) { return parse_chat_request(b, limits()); }

const char* kWeatherTool = R"({"type": "function", "function": {"name": "get_weather", "description": "Weather now",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
  "required": ["city"]}}})";

TEST(ChatFields, UnknownFieldsAreRefusedByName) {
  Refused r = refused(body(R"({"temprature": 0.5})"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.param, "temprature");
  EXPECT_EQ(r.code, "unsupported_parameter");
  EXPECT_NE(r.message.find("temprature"), std::string::npos) << r.message;
  r = refused(body(R"({"stream_options": {"include_usage": true, "chunk_size": 3}})"));
  EXPECT_EQ(r.param, "stream_options.chunk_size");
}

TEST(ChatFields, OpenAiFieldsQvlCannotHonourAreRefused) {
  for (const char* f : {R"({"functions": [{"name": "f"}]})", R"({"function_call": "auto"})",
                        R"({"audio": {"voice": "alloy", "format": "wav"}})", R"({"modalities": ["text", "audio"]})",
                        R"({"prediction": {"type": "content", "content": "x"}})", R"({"web_search_options": {}})",
                        R"({"reasoning_effort": "low"})", R"({"verbosity": "low"})"}) {
    const ojson extra = ojson::parse(f);
    const Refused r = refused(body(f));
    EXPECT_EQ(r.status, 400) << f;
    EXPECT_EQ(r.param, extra.begin().key()) << f;
  }
  EXPECT_NE(refused(body(R"({"functions": []})")).message.find("tools"), std::string::npos);
  // A Thinking model does reason: the refusal says what limits it instead
  // (it once said "the model has no reasoning mode", whatever the model).
  const std::string effort = refused(body(R"({"reasoning_effort": "low"})")).message;
  EXPECT_NE(effort.find("reasoning_budget"), std::string::npos) << effort;
  EXPECT_EQ(effort.find("no reasoning mode"), std::string::npos) << effort;
  // Their defaults, and null, change nothing.
  EXPECT_EQ(refused(body(R"({"modalities": ["text"], "verbosity": "medium", "audio": null,
                             "reasoning_effort": null})")).status, 0);
}

TEST(ChatFields, BookkeepingIsAcceptedAndTypeChecked) {
  EXPECT_EQ(refused(body(R"({"user": "u1", "metadata": {"a": "b"}, "store": false, "service_tier": "auto",
                             "safety_identifier": "x", "prompt_cache_key": "k",
                             "stream_options": {"include_usage": true, "include_obfuscation": false}})")).status, 0);
  EXPECT_EQ(refused(body(R"({"user": 5})")).param, "user");
  EXPECT_EQ(refused(body(R"({"metadata": {"a": 1}})")).param, "metadata.a");
  EXPECT_EQ(refused(body(R"({"service_tier": "gold"})")).param, "service_tier");
  EXPECT_EQ(refused(body(R"({"store": "yes"})")).param, "store");
}

TEST(ChatFields, ResponseFormat) {
  EXPECT_EQ(parsed(body(R"({"response_format": {"type": "text"}})")).generate.response_format.type,
            ResponseFormat::Type::Text);
  EXPECT_EQ(parsed(body(R"({"response_format": {"type": "json_object"}})")).generate.response_format.type,
            ResponseFormat::Type::JsonObject);
  const ChatRequest js = parsed(body(R"({"response_format": {"type": "json_schema", "json_schema": {
      "name": "person", "strict": true, "schema": {"type": "object", "properties": {"z": {"type": "string"},
      "a": {"type": "integer"}}, "required": ["z", "a"]}}}})"));
  EXPECT_EQ(js.generate.response_format.type, ResponseFormat::Type::JsonSchema);
  // Compact, keys in the client's order (z before a).
  EXPECT_EQ(js.generate.response_format.schema,
            R"({"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}},"required":["z","a"]})");

  struct Case {
    const char* rf;
    const char* param;
  };
  for (const Case& c : {
           Case{R"({"type": "bogus"})", "response_format.type"},
           Case{R"("json")", "response_format"},
           Case{R"({})", "response_format.type"},
           Case{R"({"type": "json_schema"})", "response_format.json_schema"},
           Case{R"({"type": "json_schema", "json_schema": {"name": "x"}})", "response_format.json_schema.schema"},
           Case{R"({"type": "json_schema", "json_schema": {"name": "x", "schema": true}})",
                "response_format.json_schema.schema"},
           Case{R"({"type": "json_schema", "json_schema": {"schema": {}}})", "response_format.json_schema.name"},
           Case{R"({"type": "json_schema", "json_schema": {"name": "a b", "schema": {}}})",
                "response_format.json_schema.name"},
           Case{R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "strict": "yes"}})",
                "response_format.json_schema.strict"},
           Case{R"({"type": "json_schema", "json_schema": {"name": "x", "schema": {}, "extra": 1}})",
                "response_format.json_schema.extra"},
           Case{R"({"type": "json_object", "schema": {}})", "response_format.schema"},
       }) {
    const Refused r = refused(body(std::string(R"({"response_format": )") + c.rf + "}"));
    EXPECT_EQ(r.status, 400) << c.rf;
    EXPECT_EQ(r.param, c.param) << c.rf;
  }
  const std::string long_name(65, 'a');
  EXPECT_EQ(refused(body(R"({"response_format": {"type": "json_schema", "json_schema": {"name": ")" + long_name +
                         R"(", "schema": {}}}})")).param,
            "response_format.json_schema.name");
}

TEST(ChatFields, ToolsKeepTheirDefinitionAsSent) {
  const ChatRequest r = parsed(body(std::string(R"({"tools": [)") + kWeatherTool + R"(], "parallel_tool_calls": false})"));
  ASSERT_EQ(r.generate.tools.size(), 1u);
  const Tool& t = r.generate.tools[0];
  EXPECT_EQ(t.name, "get_weather");
  EXPECT_EQ(t.definition, ojson::parse(kWeatherTool).dump());
  EXPECT_EQ(t.definition.find(R"({"type":"function","function":{"name":"get_weather","description")"), 0u) << t.definition;
  EXPECT_EQ(t.parameters, ojson::parse(kWeatherTool)["function"]["parameters"].dump());
  EXPECT_EQ(r.generate.tool_choice, ToolChoice::Auto);
  EXPECT_FALSE(r.generate.parallel_tool_calls);
  // No parameters: any object.
  EXPECT_EQ(parsed(body(R"({"tools": [{"type": "function", "function": {"name": "now"}}]})")).generate.tools[0].parameters,
            "");
}

TEST(ChatFields, ToolChoice) {
  const std::string tools = std::string(R"("tools": [)") + kWeatherTool + "]";
  auto with = [&](const std::string& choice) { return body("{" + tools + R"(, "tool_choice": )" + choice + "}"); };
  EXPECT_EQ(parsed(with(R"("none")")).generate.tool_choice, ToolChoice::None);
  EXPECT_EQ(parsed(with(R"("auto")")).generate.tool_choice, ToolChoice::Auto);
  EXPECT_EQ(parsed(with(R"("required")")).generate.tool_choice, ToolChoice::Required);
  const ChatRequest f = parsed(with(R"({"type": "function", "function": {"name": "get_weather"}})"));
  EXPECT_EQ(f.generate.tool_choice, ToolChoice::Function);
  EXPECT_EQ(f.generate.tool_choice_name, "get_weather");

  EXPECT_EQ(refused(with(R"({"type": "function", "function": {"name": "get_time"}})")).param, "tool_choice");
  EXPECT_EQ(refused(with(R"("sometimes")")).param, "tool_choice");
  EXPECT_EQ(refused(with(R"({"type": "allowed_tools", "allowed_tools": {}})")).param, "tool_choice.type");
  EXPECT_EQ(refused(with("3")).param, "tool_choice");
  EXPECT_EQ(refused(body(R"({"tool_choice": "auto"})")).param, "tool_choice");  // no tools
}

TEST(ChatFields, BadToolsAreRefusedByPath) {
  struct Case {
    const char* tools;
    const char* param;
  };
  for (const Case& c : {
           Case{R"("get_weather")", "tools"},
           Case{R"([{"type": "custom", "custom": {"name": "x"}}])", "tools[0].type"},
           Case{R"([{"type": "function"}])", "tools[0].function"},
           Case{R"([{"type": "function", "function": {}}])", "tools[0].function.name"},
           Case{R"([{"type": "function", "function": {"name": "has space"}}])", "tools[0].function.name"},
           Case{R"([{"type": "function", "function": {"name": "f", "parameters": []}}])", "tools[0].function.parameters"},
           Case{R"([{"type": "function", "function": {"name": "f", "strict": 1}}])", "tools[0].function.strict"},
           Case{R"([{"type": "function", "function": {"name": "f", "returns": {}}}])", "tools[0].function.returns"},
           Case{R"([{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}])",
                "tools[1].function.name"},
       }) {
    const Refused r = refused(body(std::string(R"({"tools": )") + c.tools + "}"));
    EXPECT_EQ(r.status, 400) << c.tools;
    EXPECT_EQ(r.param, c.param) << c.tools;
  }
  EXPECT_EQ(refused(body(R"({"tools": [], "parallel_tool_calls": "no"})")).param, "parallel_tool_calls");
}

TEST(ChatFields, ToolTurnsOfTheHistory) {
  const ojson history = ojson::parse(R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
          {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Lyon"}}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "21 C"},
      {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "19 C"}], "name": "get_weather"},
      {"role": "user", "content": "Thanks", "name": "ann"}]})");
  const ChatRequest r = parsed(history);
  ASSERT_EQ(r.generate.messages.size(), 5u);
  const Message& a = r.generate.messages[1];
  EXPECT_EQ(a.role, "assistant");
  EXPECT_TRUE(a.parts.empty());
  ASSERT_EQ(a.tool_calls.size(), 2u);
  EXPECT_EQ(a.tool_calls[0].id, "call_1");
  EXPECT_EQ(a.tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(a.tool_calls[1].arguments, R"({"city":"Lyon"})");  // an object is serialized
  EXPECT_EQ(r.generate.messages[2].role, "tool");
  EXPECT_EQ(r.generate.messages[3].parts[0].text, "19 C");

  auto with = [&](const std::function<void(ojson&)>& edit) {
    ojson b = history;
    edit(b);
    return refused(b);
  };
  EXPECT_EQ(with([](ojson& b) { b["messages"][2].erase("tool_call_id"); }).param, "messages[2].tool_call_id");
  EXPECT_EQ(with([](ojson& b) { b["messages"][2]["tool_call_id"] = "call_9"; }).param, "messages[2].tool_call_id");
  EXPECT_EQ(with([](ojson& b) { b["messages"][1]["content"] = "ok", b["messages"][1].erase("tool_calls"); }).param,
            "messages[2].role");  // a tool result that answers no call
  EXPECT_EQ(with([](ojson& b) { b["messages"][1]["tool_calls"][0]["type"] = "custom"; }).param,
            "messages[1].tool_calls[0].type");
  EXPECT_EQ(with([](ojson& b) { b["messages"][1]["tool_calls"][0]["function"]["arguments"] = 5; }).param,
            "messages[1].tool_calls[0].function.arguments");
  EXPECT_EQ(with([](ojson& b) { b["messages"][1]["refusal"] = "no"; }).param, "messages[1].refusal");
  EXPECT_EQ(with([](ojson& b) { b["messages"][1]["function_call"] = ojson::object(); }).param,
            "messages[1].function_call");
  EXPECT_EQ(with([](ojson& b) {
              b["messages"][2]["content"] = ojson::parse(R"([{"type": "image_url", "image_url": {"url": "x"}}])");
            }).param,
            "messages[2].content[0].type");
  EXPECT_EQ(with([](ojson& b) { b["messages"][4]["name"] = 3; }).param, "messages[4].name");
  EXPECT_EQ(with([](ojson& b) { b["messages"][4]["role"] = "function"; }).param, "messages[4].role");
  // An assistant turn needs content or tool calls; null content is fine with calls.
  EXPECT_EQ(refused(ojson::parse(R"({"messages": [{"role": "assistant", "content": null}]})")).param,
            "messages[0].content");
}

TEST(ChatFields, LogprobsAndLogitBias) {
  EXPECT_EQ(parsed(body()).generate.top_logprobs, -1);
  EXPECT_EQ(parsed(body(R"({"logprobs": true})")).generate.top_logprobs, 0);
  const ChatRequest r = parsed(body(R"({"logprobs": true, "top_logprobs": 5, "logit_bias": {"42": -100, "7": 2.5}})"));
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.generate.top_logprobs, 5);
  EXPECT_EQ(r.generate.logit_bias, (std::vector<std::pair<int32_t, float>>{{42, -100.f}, {7, 2.5f}}));
  EXPECT_EQ(parsed(body(R"({"logprobs": false})")).generate.top_logprobs, -1);

  for (const char* bad : {R"({"top_logprobs": 3})", R"({"logprobs": false, "top_logprobs": 3})"})
    EXPECT_EQ(refused(body(bad)).param, "top_logprobs") << bad;
  EXPECT_EQ(refused(body(R"({"logprobs": true, "top_logprobs": 21})")).param, "top_logprobs");
  EXPECT_EQ(refused(body(R"({"logprobs": "yes"})")).param, "logprobs");
  for (const char* bad : {R"({"logit_bias": {"x": 1}})", R"({"logit_bias": {"-1": 1}})", R"({"logit_bias": {"1000": 1}})",
                          R"({"logit_bias": {"5": 101}})", R"({"logit_bias": {"5": "up"}})", R"({"logit_bias": [1]})"})
    EXPECT_EQ(refused(body(bad)).param, "logit_bias") << bad;
  ojson many = body();
  for (int i = 0; i < 301; ++i) many["logit_bias"][std::to_string(i)] = 1;
  EXPECT_EQ(refused(many).param, "logit_bias");
}

TEST(ChatFields, N) {
  EXPECT_EQ(parsed(body()).generate.n, 1);
  EXPECT_EQ(parsed(body(R"({"n": 8})")).generate.n, 8);
  EXPECT_EQ(refused(body(R"({"n": 9})")).param, "n");
  EXPECT_EQ(refused(body(R"({"n": 0})")).param, "n");
  EXPECT_EQ(refused(body(R"({"n": 1.5})")).param, "n");
}

TEST(ChatFields, JumpForwardExtension) {
  EXPECT_TRUE(parsed(body()).generate.jump_forward);
  EXPECT_FALSE(parsed(body(R"({"jump_forward": false})")).generate.jump_forward);
  EXPECT_TRUE(parsed(body(R"({"jump_forward": true})")).generate.jump_forward);
  EXPECT_EQ(refused(body(R"({"jump_forward": "off"})")).param, "jump_forward");
}

TEST(ChatFields, IgnoreEosExtension) {
  EXPECT_FALSE(parsed(body()).generate.ignore_eos);
  EXPECT_TRUE(parsed(body(R"({"ignore_eos": true})")).generate.ignore_eos);
  EXPECT_FALSE(parsed(body(R"({"ignore_eos": false})")).generate.ignore_eos);
  const Refused r = refused(body(R"({"ignore_eos": 1})"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.param, "ignore_eos");
}

TEST(ChatFields, SupportedParametersListTheAllowList) {
  const auto fields = chat_fields();
  for (const char* f : {"tools", "response_format", "logprobs", "logit_bias", "n", "top_k", "repetition_guard"})
    EXPECT_NE(std::find(fields.begin(), fields.end(), f), fields.end()) << f;
  for (const char* f : {"functions", "audio", "reasoning_effort"})
    EXPECT_EQ(std::find(fields.begin(), fields.end(), f), fields.end()) << f;
}

}  // namespace
}  // namespace qvl
