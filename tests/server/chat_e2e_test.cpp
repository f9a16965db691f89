// POST /v1/chat/completions against the real server with the tiny fixture
// model: greedy answers equal `qvl run`'s, streamed and not; the response
// shapes; and each kind of bad request gets its status and error object.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

// `qvl run`'s answer for the same prompt and fixture image.
std::string answer_of(const std::string& prompt, const std::string& image, int max_tokens) {
  return run_answer({"--prompt", prompt, "--image", kFixtures + "/golden/images/" + image + ".png"}, max_tokens);
}

class Chat : public SharedServerSuite {};

TEST_F(Chat, NonStreamedAnswerEqualsQvlRun) {
  const std::string expected = answer_of("What is in this image?", "gradient_320x240", 16);
  auto c = server_->client();
  auto r = post_json(c, "/v1/chat/completions",
                     chat_body("What is in this image?", png_data_uri("gradient_320x240"), 16));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "tiny-qwen3vl");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], expected);
  EXPECT_TRUE(j["choices"][0]["finish_reason"] == "length" || j["choices"][0]["finish_reason"] == "stop");
  const json& u = j["usage"];
  EXPECT_GT(u["prompt_tokens"].get<int>(), 80);  // 80 image tokens for 320x240
  EXPECT_EQ(u["prompt_tokens_details"]["image_tokens"], 80);
  EXPECT_EQ(u["total_tokens"].get<int>(), u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
  for (const char* k : {"queue_ms", "image_ms", "vision_ms", "prefill_ms", "prefill_tok_s", "decode_tok_s"})
    EXPECT_TRUE(j["timings"].contains(k)) << k;
  EXPECT_TRUE(r->has_header("X-Request-Id"));
}

TEST_F(Chat, StreamedAnswerEqualsQvlRun) {
  const std::string expected = answer_of("Describe it.", "gradient_320x240", 24);
  auto c = server_->client();
  json body = chat_body("Describe it.", png_data_uri("gradient_320x240"), 24);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto r = post_json(c, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream; charset=utf-8");
  const auto events = sse_events(r->body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(events[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(events[0]["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(streamed_text(events), expected);
  const json& usage_chunk = events[events.size() - 2];
  EXPECT_TRUE(usage_chunk["choices"].empty());
  EXPECT_GT(usage_chunk["usage"]["completion_tokens"].get<int>(), 0);
  EXPECT_TRUE(usage_chunk["timings"].contains("decode_tok_s"));
  const json& last = events[events.size() - 3];
  EXPECT_FALSE(last["choices"][0]["finish_reason"].is_null());
}

TEST_F(Chat, TextOnlyStringContentAndSystemMessage) {
  auto c = server_->client();
  json body = {{"messages", {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hello"}}}},
               {"temperature", 0},
               {"max_completion_tokens", 8},
               {"stop", "\n\n"}};
  auto r = post_json(c, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_LE(json::parse(r->body)["usage"]["completion_tokens"].get<int>(), 8);
}

TEST_F(Chat, ModelsTokenizeDetokenizeAndThePage) {
  auto c = server_->client();
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "tiny-qwen3vl");
  auto t = post_json(c, "/tokenize", {{"content", "Hello world"}});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200);
  const json ids = json::parse(t->body)["tokens"];
  EXPECT_FALSE(ids.empty());
  auto d = post_json(c, "/detokenize", {{"tokens", ids}});
  ASSERT_TRUE(d);
  EXPECT_EQ(json::parse(d->body)["content"], "Hello world");
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_FALSE(page->has_header("Access-Control-Allow-Origin"));  // CORS is off by default
  auto cfg = c.Get("/v1/qvl/config");
  ASSERT_TRUE(cfg);
  const json jc = json::parse(cfg->body);
  EXPECT_EQ(jc["max_pixels"], 1048576);
  EXPECT_EQ(jc["patch_size"], 16);
  EXPECT_EQ(jc["kv_type"], "f32");  // exact with bf16 weights
  auto missing = c.Get("/no/such/file.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["error"]["type"], "not_found_error");
}

// Status, error code and param of one bad request.
struct Refusal {
  int status;
  std::string code, param, message;
};
Refusal refuse(ServerProcess& s, const std::string& raw_body) {
  auto c = s.client();
  auto r = c.Post("/v1/chat/completions", raw_body, "application/json");
  if (!r) return {-1, "", "", ""};
  const json j = json::parse(r->body);
  return {r->status, j["error"]["code"].get<std::string>(),
          j["error"]["param"].is_string() ? j["error"]["param"].get<std::string>() : "",
          j["error"]["message"].get<std::string>()};
}

TEST_F(Chat, BadRequestsGetOpenAiErrors) {
  auto r = refuse(*server_, "{\"messages\": [");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.code, "invalid_json");

  json wrong = chat_body("x");
  wrong["temperature"] = "warm";
  r = refuse(*server_, wrong.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.param, "temperature");
  wrong = chat_body("x");
  wrong["messages"][0]["content"] = 42;
  r = refuse(*server_, wrong.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.param, "messages[0].content");

  std::string deep = "{\"messages\":" + std::string(5000, '[') + std::string(5000, ']') + "}";
  r = refuse(*server_, deep);
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.code, "json_too_deep");

  r = refuse(*server_, chat_body("x", "data:image/png;base64,iVBOR!!!w0KGgo=").dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.code, "invalid_base64");

  const std::string corrupt = "\x89PNG\r\n\x1a\n" + std::string(300, 'z');
  r = refuse(*server_, chat_body("x", "data:image/png;base64," + base64(corrupt)).dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.code, "invalid_image");
  EXPECT_EQ(r.param, "messages[0].content[0].image_url.url");

  json n2 = chat_body("x");
  n2["n"] = 9;  // above the server's 8 choices
  EXPECT_EQ(refuse(*server_, n2.dump()).status, 400);
  json role = chat_body("x");
  role["messages"][0]["role"] = "wizard";
  r = refuse(*server_, role.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.param, "messages[0].role");

  // No internals in messages: no source paths, no exception names.
  for (const std::string& m : {r.message, refuse(*server_, "[1,2").message}) {
    EXPECT_EQ(m.find(".cpp"), std::string::npos) << m;
    EXPECT_EQ(m.find("/work"), std::string::npos) << m;
  }
  EXPECT_EQ(server_->client().Get("/health")->status, 200);
}

// The fixture model's greedy answer to "Describe" repeats one token four
// times early on (tests/cli checks the rule itself); a tight guard stops it
// there, in both response shapes, and bad guard values are refused.
TEST_F(Chat, RepetitionGuardEndsALoopingAnswer) {
  auto c = server_->client();
  json body = chat_body("Describe", "", 60);
  body["temperature"] = 0;
  body["repetition_guard"] = 4;
  body["repetition_guard_repeats"] = 2;
  auto r = post_json(c, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "repetition");
  EXPECT_LT(j["usage"]["completion_tokens"].get<int>(), 60);

  body["stream"] = true;
  r = post_json(c, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const auto events = sse_events(r->body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[events.size() - 2]["choices"][0]["finish_reason"], "repetition");
  EXPECT_EQ(streamed_text(events), j["choices"][0]["message"]["content"].get<std::string>());

  json off = chat_body("Describe", "", 20);
  off["temperature"] = 0;
  off["repetition_guard"] = 0;
  r = post_json(c, "/v1/chat/completions", off);
  ASSERT_TRUE(r);
  EXPECT_NE(json::parse(r->body)["choices"][0]["finish_reason"], "repetition");

  json bad = chat_body("x");
  bad["repetition_guard_repeats"] = 1;
  auto e = refuse(*server_, bad.dump());
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "repetition_guard_repeats");
  bad = chat_body("x");
  bad["repetition_guard"] = "yes";
  e = refuse(*server_, bad.dump());
  EXPECT_EQ(e.status, 400);
  EXPECT_EQ(e.param, "repetition_guard");

  auto cfg = c.Get("/v1/qvl/config");
  ASSERT_TRUE(cfg);
  EXPECT_EQ(json::parse(cfg->body)["repetition_guard"], 400);
}

// vLLM's ignore_eos, on a copy of the fixture model whose end-of-sequence
// token is the first token of its greedy answer (the random model never
// samples its real one): the answer ends at once without it, and runs to
// max_tokens with it.
TEST_F(Chat, IgnoreEosRunsToMaxTokens) {
  namespace fs = std::filesystem;
  auto c = server_->client();
  json body = chat_body("Describe", "", 1);
  body["temperature"] = 0;
  body["repetition_guard"] = 0;
  auto r = post_json(c, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto t = post_json(c, "/tokenize", {{"content", json::parse(r->body)["choices"][0]["message"]["content"]}});
  ASSERT_TRUE(t);
  const json first = json::parse(t->body)["tokens"];
  ASSERT_EQ(first.size(), 1u) << t->body;

  const fs::path dir = fs::path(::testing::TempDir()) / ("qvl_tiny_eos_model_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kFixtures + "/tiny-qwen3vl")) {
    const fs::path dst = dir / e.path().filename();
    fs::remove(dst);
    if (e.path().filename() != "generation_config.json") fs::create_symlink(fs::absolute(e.path()), dst);
  }
  json gen = json::parse(read_file(kFixtures + "/tiny-qwen3vl/generation_config.json"));
  gen["eos_token_id"] = first;
  std::ofstream(dir / "generation_config.json") << gen.dump();
  ServerProcess s({}, {}, dir.string());
  auto e = s.client();
  body["max_tokens"] = 12;
  r = post_json(e, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["usage"]["completion_tokens"], 0);

  body["ignore_eos"] = true;
  r = post_json(e, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = json::parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
  EXPECT_EQ(s.stop(), 0) << s.log();
  fs::remove_all(dir);
}

TEST(ChatLimits, OversizedBodyAndTooLongPrompt) {
  ServerProcess s({"--max-body-bytes", "200000", "--ctx-size", "128"});
  auto c = s.client();
  auto big = c.Post("/v1/chat/completions", chat_body(std::string(300000, 'a')).dump(), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(json::parse(big->body)["error"]["code"], "request_too_large");

  // 80 image tokens plus a long question do not fit in 128.
  std::string words;
  for (int i = 0; i < 100; ++i) words += "word ";
  auto r = post_json(c, "/v1/chat/completions", chat_body(words, png_data_uri()));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "context_length_exceeded");
  EXPECT_NE(e["message"].get<std::string>().find("holds 128 tokens"), std::string::npos) << e;
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace qvl::test

namespace qvl::test {
namespace {

// Per-request max_pixels: fewer image tokens, clamped to the server's cap.
TEST(ChatPixels, PerRequestMaxPixelsIsHonouredAndClamped) {
  ServerProcess s({"--max-image-pixels", "200000"});
  auto c = s.client();
  auto tokens = [&](nlohmann::json extra) {
    nlohmann::json b = chat_body("Hi", png_data_uri("large_800x600"), 1);
    if (extra.is_object()) b.update(extra);
    auto r = post_json(c, "/v1/chat/completions", b);
    EXPECT_EQ(r->status, 200) << r->body;
    return nlohmann::json::parse(r->body)["usage"]["prompt_tokens_details"]["image_tokens"].get<int>();
  };
  const int capped = tokens({});
  EXPECT_LE(capped * 32 * 32, 200000);
  EXPECT_EQ(tokens({{"max_pixels", 1 << 30}}), capped);  // never above the cap
  const int small = tokens({{"max_pixels", 100000}});
  EXPECT_LT(small, capped);
  EXPECT_LE(small * 32 * 32, 100000);
  EXPECT_EQ(nlohmann::json::parse(c.Get("/v1/qvl/config")->body)["max_pixels"], 200000);
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace qvl::test
