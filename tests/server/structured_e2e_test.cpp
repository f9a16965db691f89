// Structured output, tools, logprobs, logit_bias and n against the real
// server with the tiny fixture model. Its weights are random, so what it
// writes is noise, but constrained noise: a json_schema answer must parse and
// match the schema, a required tool call must name a tool with arguments
// that fit its parameters. Every field's shape is OpenAI's, streamed and
// not, and the jobs API returns the same object.
#include <gtest/gtest.h>

#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

class Structured : public SharedServerSuite {
 protected:
  // POST /v1/chat/completions, expecting 200; the parsed body.
  static json complete(const json& body) {
    auto c = server_->client();
    auto r = post_json(c, "/v1/chat/completions", body);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
  // The same streamed: the SSE events.
  static std::vector<json> stream(json body) {
    body["stream"] = true;
    auto c = server_->client();
    auto r = post_json(c, "/v1/chat/completions", body);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return sse_events(r->body);
  }
  // A refused body's error object (status checked to be 400).
  static json refused(const json& body, const std::string& path = "/v1/chat/completions") {
    auto c = server_->client();
    auto r = post_json(c, path, body);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 400) << r->body;
    return json::parse(r->body)["error"];
  }
  // A token's id, through /tokenize of its text (-1 unless it is one token).
  static int token_id(const std::string& text) {
    auto c = server_->client();
    auto r = post_json(c, "/tokenize", {{"content", text}});
    if (!r || r->status != 200) return -1;
    const json t = json::parse(r->body)["tokens"];
    return t.size() == 1 ? t[0].get<int>() : -1;
  }
};

json weather_tool() {
  return json::parse(R"({"type": "function", "function": {"name": "get_weather", "description": "Current weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}, "days": {"type": "integer"}},
    "required": ["city", "days"]}}})");
}
json time_tool() {
  return json::parse(R"({"type": "function", "function": {"name": "get_time",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}},
    "required": ["zone"]}}})");
}

std::string bytes_text(const json& bytes) {
  std::string s;
  for (const json& b : bytes) s += static_cast<char>(b.get<int>());
  return s;
}

bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();  // strict: throws on invalid UTF-8
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

// Each choice's streamed content, tool-call deltas and chunks, by index.
struct StreamedChoice {
  std::string content;
  json calls = json::array();  // [{id, name, arguments}] assembled from the deltas
  std::vector<json> logprobs;  // logprobs.content entries in order
  json finish_reason;
  int role_chunks = 0;
};
std::map<int, StreamedChoice> by_choice(const std::vector<json>& events) {
  std::map<int, StreamedChoice> out;
  for (const json& e : events) {
    if (!e.is_object() || !e.contains("choices")) continue;
    for (const json& ch : e["choices"]) {
      StreamedChoice& s = out[ch["index"].get<int>()];
      const json& d = ch["delta"];
      if (d.contains("role")) ++s.role_chunks;
      if (d.contains("content") && d["content"].is_string()) s.content += d["content"].get<std::string>();
      if (d.contains("tool_calls"))
        for (const json& tc : d["tool_calls"]) {
          const size_t k = tc["index"].get<size_t>();
          if (tc.contains("id")) {
            EXPECT_EQ(k, s.calls.size());  // a new call takes the next index
            EXPECT_EQ(tc["type"], "function");
            s.calls.push_back({{"id", tc["id"]}, {"name", tc["function"]["name"]}, {"arguments", ""}});
          }
          EXPECT_LT(k, s.calls.size()) << tc;
          if (k >= s.calls.size()) continue;
          if (tc["function"].contains("arguments"))
            s.calls[k]["arguments"] = s.calls[k]["arguments"].get<std::string>() + tc["function"]["arguments"].get<std::string>();
        }
      if (ch["logprobs"].is_object())
        for (const json& lp : ch["logprobs"]["content"]) s.logprobs.push_back(lp);
      if (!ch["finish_reason"].is_null()) s.finish_reason = ch["finish_reason"];
    }
  }
  return out;
}

TEST_F(Structured, EveryNewFieldIsCheckedOrRefusedByName) {
  struct Case {
    const char* field;
    json value;
    std::string param;
  };
  const std::vector<Case> cases = {
      {"whatever", 1, "whatever"},
      {"response_format", {{"type", "bogus"}}, "response_format.type"},
      {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}, "response_format.json_schema.schema"},
      {"tools", json::array({{{"type", "file_search"}}}), "tools[0].type"},
      {"tool_choice", "required", "tool_choice"},  // without tools
      {"logprobs", "yes", "logprobs"},
      {"top_logprobs", 2, "top_logprobs"},  // without logprobs
      {"logit_bias", {{"999999999", 1}}, "logit_bias"},
      {"logit_bias", {{"5", 200}}, "logit_bias"},
      {"n", 9, "n"},
      {"functions", json::array({{{"name", "f"}}}), "functions"},
      {"reasoning_effort", "high", "reasoning_effort"},
      {"audio", {{"voice", "alloy"}}, "audio"},
      {"prediction", {{"type", "content"}, {"content", "x"}}, "prediction"},
      {"web_search_options", json::object(), "web_search_options"},
      {"modalities", {"text", "audio"}, "modalities"},
  };
  for (const Case& c : cases) {
    json body = chat_body("x");
    body[c.field] = c.value;
    const json e = refused(body);
    EXPECT_EQ(e["param"], c.param) << c.field << " " << e;
    EXPECT_EQ(e["type"], "invalid_request_error");
  }
  // The named tool must exist; two tools may not share a name.
  json body = chat_body("x");
  body["tools"] = json::array({weather_tool()});
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  EXPECT_EQ(refused(body)["param"], "tool_choice");
  body["tools"] = {weather_tool(), weather_tool()};
  body.erase("tool_choice");
  EXPECT_EQ(refused(body)["param"], "tools[1].function.name");
  // An unknown field names itself in the message and code.
  body = chat_body("x");
  body["temprature"] = 0;
  const json e = refused(body);
  EXPECT_EQ(e["code"], "unsupported_parameter");
  EXPECT_NE(e["message"].get<std::string>().find("temprature"), std::string::npos) << e;
  // The jobs API reads the same body.
  EXPECT_EQ(refused(body, "/v1/jobs")["param"], "temprature");
}

TEST_F(Structured, SchemasTheEngineCannotEnforceAreRefusedWithTheirPath) {
  json body = chat_body("x");
  body["response_format"] = {{"type", "json_schema"},
                             {"json_schema",
                              {{"name", "x"},
                               {"schema", {{"type", "object"}, {"properties", {{"a", {{"$ref", "http://example.com/s"}}}}}}}}}};
  json e = refused(body);
  EXPECT_EQ(e["param"].get<std::string>().rfind("response_format.json_schema.schema", 0), 0u) << e;
  body = chat_body("x");
  json tool = weather_tool();
  tool["function"]["parameters"]["properties"]["city"] = {{"$ref", "http://example.com/s"}};
  body["tools"] = json::array({tool});
  e = refused(body);
  EXPECT_EQ(e["param"].get<std::string>().rfind("tools[0].function.parameters", 0), 0u) << e;
}

// Greedy, the fixture model opens an object and closes it at once for these
// prompts (for others it writes one endless random key: json_object does not
// bound string lengths, a schema's maxLength does, see below).
TEST_F(Structured, JsonObjectAnswersParse) {
  for (const char* prompt : {"hi", "Hello"}) {
    json body = chat_body(prompt, "", 400);
    body["response_format"] = {{"type", "json_object"}};
    const json j = complete(body);
    const json& choice = j["choices"][0];
    ASSERT_EQ(choice["finish_reason"], "stop") << j;
    const std::string text = choice["message"]["content"];
    json parsed;
    ASSERT_NO_THROW(parsed = json::parse(text)) << text;
    EXPECT_TRUE(parsed.is_object()) << text;
  }
}

TEST_F(Structured, JsonSchemaAnswersMatchTheSchema) {
  const json schema = json::parse(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer"}, "ok": {"type": "boolean"},
      "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 3}},
      "required": ["name", "age", "ok", "tags"], "additionalProperties": false})");
  for (int seed : {3, 4}) {
    json body = chat_body("Describe a person.", "", 400);
    body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}};
    body["temperature"] = 1;
    body["seed"] = seed;
    const json j = complete(body);
    ASSERT_EQ(j["choices"][0]["finish_reason"], "stop") << j;
    const std::string text = j["choices"][0]["message"]["content"];
    json v;
    ASSERT_NO_THROW(v = json::parse(text)) << text;
    ASSERT_TRUE(v.is_object()) << text;
    EXPECT_TRUE(v["name"].is_string()) << text;
    EXPECT_LE(v["name"].get<std::string>().size(), 20u * 4) << text;
    EXPECT_TRUE(v["age"].is_number_integer()) << text;
    EXPECT_TRUE(v["ok"].is_boolean()) << text;
    ASSERT_TRUE(v["tags"].is_array()) << text;
    EXPECT_LE(v["tags"].size(), 3u);
    for (const json& t : v["tags"]) EXPECT_TRUE(t == "a" || t == "b") << text;
    EXPECT_EQ(v.size(), 4u) << text;
  }
}

// qvl's jump_forward extension changes how many steps an answer takes, never
// the answer: off and on (the default) give the same content and logprobs.
TEST_F(Structured, JumpForwardOffGivesTheSameAnswer) {
  const json schema = json::parse(R"({"type": "object", "properties": {"ok": {"type": "boolean"},
      "n": {"type": "integer"}}, "required": ["ok", "n"], "additionalProperties": false})");
  json body = chat_body("Fill it in.", "", 60);
  body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "r"}, {"schema", schema}}}};
  body["temperature"] = 1;
  body["seed"] = 11;
  body["logprobs"] = true;
  // The server reuses a cached prompt prefix, whose last token is then
  // computed alone rather than in the prompt's prefill (the same answer,
  // not the same last bits): a first request puts both compared ones on
  // the same footing.
  complete(body);
  const json on = complete(body);
  body["jump_forward"] = false;
  const json off = complete(body);
  EXPECT_EQ(on["choices"][0]["message"]["content"], off["choices"][0]["message"]["content"]);
  EXPECT_EQ(on["choices"][0]["logprobs"], off["choices"][0]["logprobs"]);
  EXPECT_EQ(on["usage"]["completion_tokens"], off["usage"]["completion_tokens"]);
}

TEST_F(Structured, RequiredToolChoiceCallsATool) {
  json body = chat_body("What is the weather in Paris?", "", 400);
  body["tools"] = {weather_tool(), time_tool()};
  body["tool_choice"] = "required";
  const json j = complete(body);
  const json& choice = j["choices"][0];
  ASSERT_EQ(choice["finish_reason"], "tool_calls") << j;
  const json& calls = choice["message"]["tool_calls"];
  ASSERT_GE(calls.size(), 1u) << j;
  for (const json& call : calls) {
    EXPECT_EQ(call["type"], "function");
    EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u) << call;
    const std::string name = call["function"]["name"];
    json args;
    ASSERT_NO_THROW(args = json::parse(call["function"]["arguments"].get<std::string>())) << call;
    ASSERT_TRUE(args.is_object()) << call;
    if (name == "get_weather") {
      EXPECT_TRUE(args["city"].is_string()) << call;
      EXPECT_TRUE(args["days"].is_number_integer()) << call;
    } else {
      ASSERT_EQ(name, "get_time");
      EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET") << call;
    }
  }
  // Only calls: no content beside them.
  EXPECT_TRUE(choice["message"]["content"].is_null()) << j;
}

TEST_F(Structured, NamedToolChoiceCallsThatFunction) {
  json body = chat_body("What time is it?", "", 400);
  body["tools"] = {weather_tool(), time_tool()};
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  body["parallel_tool_calls"] = false;
  const json j = complete(body);
  ASSERT_EQ(j["choices"][0]["finish_reason"], "tool_calls") << j;
  const json& calls = j["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << j;  // parallel_tool_calls false: one call
  EXPECT_EQ(calls[0]["function"]["name"], "get_time");
  const json args = json::parse(calls[0]["function"]["arguments"].get<std::string>());
  EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET") << args;
}

TEST_F(Structured, StreamedToolCallDeltasAddUpToTheCalls) {
  json body = chat_body("Weather in Rome for three days?", "", 400);
  body["tools"] = {weather_tool(), time_tool()};
  body["tool_choice"] = "required";
  const json whole = complete(body);  // greedy: the stream decides the same tokens
  const json& calls = whole["choices"][0]["message"]["tool_calls"];
  ASSERT_GE(calls.size(), 1u) << whole;

  const auto events = stream(body);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  const auto choices = by_choice(events);
  ASSERT_EQ(choices.size(), 1u);
  const StreamedChoice& s = choices.at(0);
  EXPECT_EQ(s.role_chunks, 1);
  EXPECT_EQ(s.finish_reason, "tool_calls");
  ASSERT_EQ(s.calls.size(), calls.size()) << s.calls;
  for (size_t k = 0; k < calls.size(); ++k) {
    EXPECT_EQ(s.calls[k]["name"], calls[k]["function"]["name"]);
    EXPECT_EQ(s.calls[k]["arguments"], calls[k]["function"]["arguments"]);
    EXPECT_EQ(s.calls[k]["id"].get<std::string>().rfind("call_", 0), 0u);
  }
  EXPECT_EQ(s.content, "");  // no call markup leaks into content
}

TEST_F(Structured, LogprobsHaveOpenAisShape) {
  json body = chat_body("Tell me a story.", "", 12);
  body["logprobs"] = true;
  body["top_logprobs"] = 5;
  const json j = complete(body);
  const json& choice = j["choices"][0];
  ASSERT_TRUE(choice["logprobs"].is_object()) << j;
  EXPECT_TRUE(choice["logprobs"]["refusal"].is_null());
  const json& content = choice["logprobs"]["content"];
  ASSERT_EQ(content.size(), j["usage"]["completion_tokens"].get<size_t>()) << j;
  std::string all_bytes;
  for (const json& e : content) {
    ASSERT_TRUE(e["token"].is_string() && e["logprob"].is_number() && e["bytes"].is_array()) << e;
    EXPECT_LE(e["logprob"].get<double>(), 0.0);
    const std::string raw = bytes_text(e["bytes"]);
    all_bytes += raw;
    // The text is the bytes, when they are whole UTF-8 on their own.
    if (valid_utf8(raw)) {
      EXPECT_EQ(e["token"], raw);
    }
    const json& top = e["top_logprobs"];
    ASSERT_EQ(top.size(), 5u) << e;
    for (size_t k = 0; k < top.size(); ++k) {
      ASSERT_TRUE(top[k]["token"].is_string() && top[k]["bytes"].is_array()) << top[k];
      if (k > 0) {
        EXPECT_GE(top[k - 1]["logprob"].get<double>(), top[k]["logprob"].get<double>()) << e;
      }
      // Greedy: the chosen token is the most likely one.
      EXPECT_GE(e["logprob"].get<double>() + 1e-6, top[k]["logprob"].get<double>()) << e;
    }
    EXPECT_EQ(top[0]["token"], e["token"]) << e;
    EXPECT_NEAR(top[0]["logprob"].get<double>(), e["logprob"].get<double>(), 1e-6);
  }
  if (choice["finish_reason"] == "length") {
    EXPECT_EQ(all_bytes, choice["message"]["content"].get<std::string>());
  }

  // Not asked: null. logprobs without top_logprobs: no alternatives.
  body.erase("top_logprobs");
  body["logprobs"] = false;
  EXPECT_TRUE(complete(body)["choices"][0]["logprobs"].is_null());
  body["logprobs"] = true;
  const json zero = complete(body);
  for (const json& e : zero["choices"][0]["logprobs"]["content"]) EXPECT_TRUE(e["top_logprobs"].empty()) << e;

  // Streamed: the same entries, spread over the chunks.
  body["top_logprobs"] = 5;
  const auto events = stream(body);
  const auto s = by_choice(events);
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s.at(0).logprobs.size(), content.size());
  for (size_t i = 0; i < content.size(); ++i) {
    EXPECT_EQ(s.at(0).logprobs[i]["token"], content[i]["token"]);
    // (the stream's prompt came from the prefix cache: the same logits up to rounding)
    EXPECT_NEAR(s.at(0).logprobs[i]["logprob"].get<double>(), content[i]["logprob"].get<double>(), 1e-3);
  }
}

// The fixture model's logits are far apart (gaps above 100 are common), so
// a bias of ±100 moves the first token only where the gap says it must.
TEST_F(Structured, LogitBiasMovesTheGreedyToken) {
  json body = chat_body("Hello there", "", 4);
  body["logprobs"] = true;
  body["top_logprobs"] = 3;
  const json base = complete(body);
  const json& first = base["choices"][0]["logprobs"]["content"][0];
  const int greedy = token_id(first["token"]);
  const json& runner_up = first["top_logprobs"][1];
  const int second = token_id(runner_up["token"]);
  ASSERT_GE(greedy, 0) << first;
  ASSERT_GE(second, 0) << first;
  ASSERT_LT(first["logprob"].get<double>() - runner_up["logprob"].get<double>(), 100) << first;

  body["logit_bias"] = {{std::to_string(greedy), -100}};
  const json down = complete(body);
  EXPECT_NE(down["choices"][0]["logprobs"]["content"][0]["token"], first["token"]) << down;

  body["logit_bias"] = {{std::to_string(second), 100}};
  const json up = complete(body);
  const json& forced = up["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(forced["token"], runner_up["token"]) << up;
  // The logprob is of the biased distribution: the forced token is now near certain.
  EXPECT_GT(forced["logprob"].get<double>(), -1e-3) << forced;
}

// Choice i samples with seed + i: a seeded n = 2 answer has two different
// choices (for some seed: the fixture model is so sure of most tokens that
// two draws often agree), and n = 1 with the same seed is choice 0 again.
TEST_F(Structured, NChoicesAreSeparateAnswers) {
  json body = chat_body("Write something.", "", 16);
  body["temperature"] = 2;
  body["n"] = 2;
  body["logprobs"] = true;
  json j;
  size_t tokens = 0;
  bool differed = false;
  for (int seed = 11; seed < 19 && !differed; ++seed) {
    body["seed"] = seed;
    body["n"] = 2;
    j = complete(body);
    ASSERT_EQ(j["choices"].size(), 2u) << j;
    tokens = 0;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(j["choices"][i]["index"], i);
      EXPECT_FALSE(j["choices"][i]["finish_reason"].is_null());
      tokens += j["choices"][i]["logprobs"]["content"].size();
    }
    EXPECT_EQ(j["usage"]["completion_tokens"].get<size_t>(), tokens);  // over both choices
    differed = j["choices"][0]["message"]["content"] != j["choices"][1]["message"]["content"];
    body["n"] = 1;
    const json one = complete(body);
    ASSERT_EQ(one["choices"].size(), 1u);
    EXPECT_EQ(one["choices"][0]["message"]["content"], j["choices"][0]["message"]["content"]) << seed;
  }
  EXPECT_TRUE(differed) << "every seed gave two equal choices: " << j;

  // Streamed: each choice's chunks carry its index, role first, finish last.
  body["n"] = 2;
  body["stream_options"] = {{"include_usage", true}};
  const auto events = stream(body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  const json& usage = events[events.size() - 2];
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"].get<size_t>(), tokens);
  const auto s = by_choice(events);
  ASSERT_EQ(s.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(s.at(i).role_chunks, 1);
    EXPECT_EQ(s.at(i).content, j["choices"][i]["message"]["content"].get<std::string>()) << i;
    EXPECT_EQ(s.at(i).finish_reason, j["choices"][i]["finish_reason"]) << i;
  }
  // Each choice's last chunk is its finish; the finishes come after every content chunk.
  size_t last_content = 0, first_finish = events.size();
  for (size_t k = 0; k < events.size(); ++k) {
    if (!events[k].is_object() || events[k]["choices"].empty()) continue;
    const json& ch = events[k]["choices"][0];
    if (!ch["finish_reason"].is_null()) first_finish = std::min(first_finish, k);
    else if (ch["delta"].contains("content") && !ch["delta"]["content"].get<std::string>().empty()) last_content = k;
  }
  EXPECT_LT(last_content, first_finish);
}

TEST_F(Structured, JobsReturnTheSameObject) {
  json body = chat_body("hi", "", 200);
  body["response_format"] = {{"type", "json_object"}};
  body["n"] = 2;
  body["logprobs"] = true;
  auto c = server_->client();
  auto r = post_json(c, "/v1/jobs", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = json::parse(r->body)["id"];
  json status;
  ASSERT_TRUE(eventually([&] {
    auto g = c.Get(("/v1/jobs/" + id).c_str());
    status = json::parse(g->body);
    return status["status"] == "succeeded";
  }, 30000)) << status;
  const json& result = status["result"];
  EXPECT_EQ(result["object"], "chat.completion");
  ASSERT_EQ(result["choices"].size(), 2u);
  for (const json& ch : result["choices"]) {
    EXPECT_TRUE(json::parse(ch["message"]["content"].get<std::string>()).is_object()) << ch;
    EXPECT_TRUE(ch["logprobs"]["content"].is_array());
  }
  // The whole answer to the same body is the same (greedy).
  const json whole = complete(body);
  ASSERT_EQ(whole["choices"].size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    EXPECT_EQ(whole["choices"][i]["message"], result["choices"][i]["message"]);
  body["stream"] = true;
  EXPECT_EQ(refused(body, "/v1/jobs")["param"], "stream");
}

TEST_F(Structured, ToolResultsInTheHistoryAreAccepted) {
  json body = json::parse(R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"days\":1}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "21 C"}],
    "temperature": 0, "max_tokens": 8})");
  body["tools"] = json::array({weather_tool()});
  const json j = complete(body);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 0);
  body["messages"][2]["tool_call_id"] = "call_2";
  EXPECT_EQ(refused(body)["param"], "messages[2].tool_call_id");
}

TEST_F(Structured, ModelsAndUnknownRoutes) {
  auto c = server_->client();
  auto list = c.Get("/v1/models");
  ASSERT_TRUE(list);
  const json entry = json::parse(list->body)["data"][0];
  EXPECT_EQ(entry["id"], "tiny-qwen3vl");
  EXPECT_EQ(entry["object"], "model");
  EXPECT_EQ(entry["owned_by"], "qvl");
  EXPECT_TRUE(entry["created"].is_number_integer());
  EXPECT_EQ(entry["architecture"]["input_modalities"], json({"text", "image", "video"}));
  EXPECT_EQ(entry["architecture"]["modality"], "text+image+video->text");
  EXPECT_EQ(entry["architecture"]["output_modalities"], json({"text"}));
  auto one = c.Get("/v1/models/tiny-qwen3vl");
  ASSERT_TRUE(one);
  ASSERT_EQ(one->status, 200);
  EXPECT_EQ(json::parse(one->body), entry);
  auto none = c.Get("/v1/models/gpt-4o");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  const json e = json::parse(none->body)["error"];
  EXPECT_EQ(e["code"], "model_not_found");
  EXPECT_NE(e["message"].get<std::string>().find("gpt-4o"), std::string::npos) << e;

  auto post = c.Post("/v1/foo", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 404);
  EXPECT_NE(json::parse(post->body)["error"]["message"].get<std::string>().find("POST /v1/foo"), std::string::npos)
      << post->body;
  auto del = c.Delete("/v1/models/tiny-qwen3vl");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 404);
  EXPECT_NE(json::parse(del->body)["error"]["message"].get<std::string>().find("DELETE /v1/models/tiny-qwen3vl"),
            std::string::npos)
      << del->body;
}

}  // namespace
}  // namespace qvl::test
