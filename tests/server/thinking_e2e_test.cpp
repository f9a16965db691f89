// A Thinking model behind the real server (the tiny fixture model with the
// Qwen3-VL-Thinking chat template): answers split into reasoning_content and
// content, streamed as delta.reasoning_content then delta.content;
// reasoning_budget forces "</think>"; json_schema constrains the reply only;
// history reasoning renders as the template says. The weights are random, so
// what is asserted is what qvl promises, not what the model says.
#include <gtest/gtest.h>

#include "../engine/thinking_model.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

const char* kSchema = R"({"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "cats": {"type": "boolean"}},
  "required": ["answer", "cats"], "additionalProperties": false})";

class Thinking : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({}, {}, make_thinking_model(kFixtures, ::testing::TempDir()));
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    delete server_;
    server_ = nullptr;
  }
  static httplib::Result post(const std::string& path, const json& body) {
    auto c = server_->client();
    return post_json(c, path, body);
  }
  static json complete(const json& body) {
    auto r = post("/v1/chat/completions", body);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
  static std::vector<json> stream(json body) {
    body["stream"] = true;
    auto r = post("/v1/chat/completions", body);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << r->body;
    return sse_events(r->body);
  }
  static inline ServerProcess* server_ = nullptr;
};

json schema_request(int budget) {
  return {{"messages", json::array({user_message("Are there cats? Answer in JSON.")})},
          {"temperature", 0},
          {"max_tokens", 200},
          {"reasoning_budget", budget},
          {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "cats"}, {"schema", json::parse(kSchema)}}}}}};
}

void expect_schema_reply(const std::string& content) {
  const json j = json::parse(content);  // throws unless the reply is the value
  EXPECT_TRUE(j.at("answer") == "yes" || j.at("answer") == "no") << content;
  EXPECT_TRUE(j.at("cats").is_boolean()) << content;
}

TEST_F(Thinking, ConfigSaysSo) {
  auto r = server_->client().Get("/v1/qvl/config");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["thinking"], true);
}

TEST_F(Thinking, BudgetZeroClosesTheThinkBlockAndTheSchemaHoldsAfterIt) {
  const json res = complete(schema_request(0));
  const json& msg = res["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "");
  EXPECT_EQ(res["choices"][0]["finish_reason"], "stop") << res.dump();
  expect_schema_reply(msg["content"].get<std::string>());
}

TEST_F(Thinking, StreamCarriesReasoningThenContentAsTheWholeAnswerDoes) {
  const json body = schema_request(6);
  const json whole = complete(body)["choices"][0];
  ASSERT_EQ(whole["finish_reason"], "stop") << whole.dump();
  EXPECT_NE(whole["message"]["reasoning_content"], "");
  expect_schema_reply(whole["message"]["content"].get<std::string>());

  std::string reasoning, content;
  bool content_started = false;
  for (const json& e : stream(body)) {
    if (!e.contains("choices") || e["choices"].empty()) continue;
    const json& d = e["choices"][0]["delta"];
    if (d.contains("reasoning_content")) {
      EXPECT_FALSE(content_started) << "reasoning after the reply began: " << e.dump();
      reasoning += d["reasoning_content"].get<std::string>();
    }
    if (d.contains("content") && d["content"].is_string()) {
      content += d["content"].get<std::string>();
      content_started = content_started || !content.empty();
    }
  }
  EXPECT_EQ(reasoning, whole["message"]["reasoning_content"].get<std::string>());
  EXPECT_EQ(content, whole["message"]["content"].get<std::string>());
  EXPECT_EQ(reasoning.find("</think>"), std::string::npos);
}

// qvl's jump_forward: the "</think>" a spent budget forces, and the schema's
// opening after it, go in one piece with the reasoning's last token; what is
// streamed (reasoning_content, content, every token's logprobs, the finish
// reason, the usage) is the same with it off. How tokens are grouped into
// events depends on timing either way, so the stream is compared joined.
TEST_F(Thinking, JumpForwardOffStreamsTheSameAnswer) {
  json body = schema_request(3);
  body["temperature"] = 1;
  body["seed"] = 5;
  body["logprobs"] = true;
  body["top_logprobs"] = 2;
  body["stream_options"] = {{"include_usage", true}};
  // As in structured_e2e_test: a first request puts the prompt in the cache,
  // so both compared ones reuse it alike.
  complete(body);
  struct Streamed {
    std::string reasoning, content, finish;
    json logprobs = json::array(), usage;
  };
  auto run = [&](bool jump) {
    body["jump_forward"] = jump;
    Streamed out;
    for (const json& e : stream(body)) {
      if (e.contains("usage") && e["usage"].is_object()) out.usage = e["usage"];
      if (!e.contains("choices") || e["choices"].empty()) continue;
      const json& c = e["choices"][0];
      if (c["delta"].contains("reasoning_content")) out.reasoning += c["delta"]["reasoning_content"].get<std::string>();
      if (c["delta"].contains("content") && c["delta"]["content"].is_string())
        out.content += c["delta"]["content"].get<std::string>();
      if (c["logprobs"].is_object())
        for (const json& t : c["logprobs"]["content"]) out.logprobs.push_back(t);
      if (c["finish_reason"].is_string()) out.finish = c["finish_reason"];
    }
    return out;
  };
  const Streamed on = run(true), off = run(false);
  EXPECT_EQ(on.reasoning, off.reasoning);
  EXPECT_EQ(on.content, off.content);
  EXPECT_EQ(on.logprobs, off.logprobs);
  EXPECT_EQ(on.finish, off.finish);
  ASSERT_TRUE(on.usage.is_object());
  EXPECT_EQ(on.usage["completion_tokens"], off.usage["completion_tokens"]);
  EXPECT_FALSE(on.reasoning.empty());
  expect_schema_reply(on.content);
  // The forced "</think>" is among the tokens, after the budget's three.
  ASSERT_GT(on.logprobs.size(), 3u);
  EXPECT_EQ(on.logprobs[3]["token"], "</think>");
}

TEST_F(Thinking, ReasoningBudgetMustBeANonNegativeInteger) {
  for (const json& bad : {json(-1), json("12"), json(2.5)}) {
    json body = schema_request(0);
    body["reasoning_budget"] = bad;
    auto r = post("/v1/chat/completions", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["param"], "reasoning_budget") << r->body;
  }
}

// The prompt the server builds from a history with reasoning has as many
// tokens as the jinja2 rendering of the same conversation.
TEST_F(Thinking, HistoryReasoningRendersAsTheTemplateSays) {
  const json cases = json::parse(read_file(kFixtures + "/templates/thinking_cases.json"))["cases"];
  for (const char* name : {"tool_response_user_and_late_system", "history_reasoning_dropped"}) {
    json c;
    for (const json& k : cases)
      if (k["name"] == name) c = k;
    ASSERT_TRUE(c.is_object()) << name;
    json messages = c["messages"];
    int images = 0;
    for (json& m : messages)
      if (m["content"].is_array())
        for (json& p : m["content"])
          if (p["type"] == "image") {
            p = {{"type", "image_url"}, {"image_url", {{"url", png_data_uri("tiny_40x36")}}}};
            ++images;
          }
    const json res = complete({{"messages", messages}, {"max_tokens", 1}, {"temperature", 0}});
    auto t = post("/tokenize", {{"content", c["prompt"]}});
    ASSERT_TRUE(t);
    const int64_t text_tokens = json::parse(t->body)["tokens"].size();
    // Each image's one <|image_pad|> expands to its tokens in the server's prompt.
    const int64_t image_tokens = res["usage"]["prompt_tokens_details"]["image_tokens"];
    EXPECT_EQ(res["usage"]["prompt_tokens"].get<int64_t>(), text_tokens - images + image_tokens) << name;
  }
}

// A job's result is the chat completion object: reasoning_content included.
TEST_F(Thinking, JobsCarryTheReasoningToo) {
  const json body = schema_request(2);
  const json sync = complete(body)["choices"][0]["message"];
  auto r = post("/v1/jobs", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = json::parse(r->body)["id"];
  json last;
  eventually([&] {
    auto g = server_->client().Get(("/v1/jobs/" + id).c_str());
    if (!g || g->status != 200) return false;
    last = json::parse(g->body);
    return last["status"] == "succeeded";
  }, 20000);
  ASSERT_EQ(last["status"], "succeeded") << last;
  EXPECT_EQ(last["result"]["choices"][0]["message"]["reasoning_content"], sync["reasoning_content"]);
  EXPECT_EQ(last["result"]["choices"][0]["message"]["content"], sync["content"]);
}

TEST_F(Thinking, ResponsesApiHasAReasoningItemBeforeTheMessage) {
  auto r = post("/v1/responses", {{"input", "Are there cats?"}, {"max_output_tokens", 8}, {"temperature", 0},
                                  {"reasoning_budget", 3}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json res = json::parse(r->body);
  const json& out = res["output"];
  ASSERT_GE(out.size(), 2u) << res.dump();
  EXPECT_EQ(out[0]["type"], "reasoning");
  EXPECT_TRUE(out[0]["id"].get<std::string>().starts_with("rs_"));
  EXPECT_EQ(out[0]["summary"], json::array());
  ASSERT_EQ(out[0]["content"].size(), 1u);
  EXPECT_EQ(out[0]["content"][0]["type"], "reasoning_text");
  EXPECT_FALSE(out[0]["content"][0]["text"].get<std::string>().empty());
  EXPECT_EQ(out[1]["type"], "message");
  EXPECT_EQ(res["output_text"], out[1]["content"][0]["text"]);
  EXPECT_GE(res["usage"]["output_tokens_details"]["reasoning_tokens"].get<int64_t>(), 3);
}

// Streamed: reasoning_text deltas, then output_text deltas; the final
// Response holds the same items as the unstreamed one. A stored response
// (its reasoning item included) continues with previous_response_id.
TEST_F(Thinking, ResponsesStreamAndContinuation) {
  const json body = {{"input", "Are there cats?"}, {"max_output_tokens", 8}, {"temperature", 0}, {"reasoning_budget", 3}};
  auto whole = post("/v1/responses", body);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json w = json::parse(whole->body);
  json streamed = body;
  streamed["stream"] = true;
  auto r = post("/v1/responses", streamed);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  std::string reasoning, text;
  json final_response;
  for (const json& e : sse_events(r->body)) {
    if (e["type"] == "response.reasoning_text.delta") {
      EXPECT_TRUE(text.empty()) << "reasoning after the reply began";
      reasoning += e["delta"].get<std::string>();
    }
    if (e["type"] == "response.output_text.delta") text += e["delta"].get<std::string>();
    if (e["type"] == "response.completed" || e["type"] == "response.incomplete") final_response = e["response"];
  }
  ASSERT_TRUE(final_response.is_object());
  EXPECT_EQ(reasoning, w["output"][0]["content"][0]["text"].get<std::string>());
  EXPECT_EQ(text, w["output_text"].get<std::string>());
  ASSERT_EQ(final_response["output"].size(), w["output"].size());
  for (size_t i = 0; i < w["output"].size(); ++i) {
    EXPECT_EQ(final_response["output"][i]["type"], w["output"][i]["type"]);
    EXPECT_EQ(final_response["output"][i]["status"], w["output"][i]["status"]);
  }
  auto next = post("/v1/responses", {{"input", "And dogs?"}, {"previous_response_id", w["id"]}, {"max_output_tokens", 2}});
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200) << next->body;
  // A reasoning item whose parts are not reasoning_text is named.
  auto bad = post("/v1/responses", {{"input", json::array({{{"type", "reasoning"}, {"summary", json::array()},
                                                             {"content", json::array({{{"type", "text"}, {"text", "x"}}})}},
                                                            {{"role", "user"}, {"content", "hi"}}})},
                                    {"max_output_tokens", 2}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "input[0].content[0].type") << bad->body;
}

}  // namespace
}  // namespace qvl::test
