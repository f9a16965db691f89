// POST /v1/embeddings and POST /v1/rerank against the real server with the
// tiny model served as Qwen3-VL-Embedding (--task embed) and as
// Qwen3-VL-Reranker (--task rerank): the OpenAI / Jina / Cohere shapes, the
// golden vectors and scores (tests/fixtures/golden-embed), and every refusal
// of item 5 of issue 47: dimensions out of range, the wrong task both ways,
// empty input, too many documents.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "server/media/base64.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

const json& golden() {
  static const json m = json::parse(read_file(kFixtures + "/golden-embed/manifest.json"));
  return m;
}

const json& golden_case(const char* list, const std::string& name) {
  for (const json& c : golden()[list])
    if (c["name"] == name) return c;
  throw std::runtime_error(name);
}

double max_abs_diff(const json& a, const json& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i].get<double>() - b[i].get<double>()));
  return m;
}

void expect_error(const httplib::Result& r, int status, const std::string& param, const std::string& words) {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  const json e = json::parse(r->body)["error"];
  if (param.empty()) EXPECT_TRUE(e["param"].is_null()) << r->body;
  else EXPECT_EQ(e["param"], param) << r->body;
  EXPECT_NE(e["message"].get<std::string>().find(words), std::string::npos) << r->body;
}

class Embeddings : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--task", "embed", "--weights", "f32", "--max-embedding-inputs", "4"});
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    delete server_;
  }
  static inline ServerProcess* server_ = nullptr;
};

TEST_F(Embeddings, OpenAIShapeWithTheGoldenVectors) {
  const json& q = golden_case("embeddings", "query_default");
  const json& doc = golden_case("embeddings", "doc_short");
  auto c = server_->client();
  auto r = post_json(c, "/v1/embeddings", {{"model", "tiny-qwen3vl"}, {"input", {q["input"]["text"], doc["input"]["text"]}}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "tiny-qwen3vl");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["object"], "embedding");
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_LE(max_abs_diff(j["data"][0]["embedding"], q["embedding"]), 1e-3);
  EXPECT_LE(max_abs_diff(j["data"][1]["embedding"], doc["embedding"]), 1e-3);
  EXPECT_EQ(j["usage"]["prompt_tokens"], q["num_tokens"].get<int>() + doc["num_tokens"].get<int>());
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"]);
}

TEST_F(Embeddings, DimensionsBase64InstructionAndTokenArrays) {
  const json& q = golden_case("embeddings", "query_instruction");
  auto c = server_->client();
  auto r = post_json(c, "/v1/embeddings",
                     {{"input", q["input"]["text"]}, {"instruction", q["input"]["instruction"]}, {"dimensions", 32},
                      {"encoding_format", "base64"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const std::optional<std::vector<uint8_t>> bytes = base64_decode(json::parse(r->body)["data"][0]["embedding"].get<std::string>());
  ASSERT_TRUE(bytes);
  ASSERT_EQ(bytes->size(), 32 * sizeof(float));
  std::vector<float> v(32);
  std::memcpy(v.data(), bytes->data(), bytes->size());
  EXPECT_LE(max_abs_diff(json(v), q["mrl"]["32"]), 1e-3);
  // A token array is the text its ids spell: the same vector as the string.
  const json& d = golden_case("embeddings", "query_default");
  const std::vector<int> ids = d["input_ids"];
  // The user turn's text sits between "<|im_start|>user\n" (3 ids after the system turn's 11) and "<|im_end|>\n<|im_start|>assistant\n".
  const std::vector<int> text_ids(ids.begin() + 14, ids.end() - 5);
  auto t = post_json(c, "/v1/embeddings", {{"input", json::array({text_ids})}});
  ASSERT_TRUE(t);
  ASSERT_EQ(t->status, 200) << t->body;
  EXPECT_LE(max_abs_diff(json::parse(t->body)["data"][0]["embedding"], d["embedding"]), 1e-3);
}

TEST_F(Embeddings, MultimodalObjectsAndMessages) {
  const json& mixed = golden_case("embeddings", "image_text");
  auto c = server_->client();
  auto r = post_json(c, "/v1/embeddings",
                     {{"input", json::array({{{"text", mixed["input"]["text"]}, {"image", png_data_uri("text_400x128")}}})}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_LE(max_abs_diff(json::parse(r->body)["data"][0]["embedding"], mixed["embedding"]), 1e-3);
  // vLLM's chat-style form, rendered as given: the same conversation.
  json messages = json::array(
      {{{"role", "system"}, {"content", "Represent the user's input."}},
       {{"role", "user"},
        {"content", json::array({{{"type", "image_url"}, {"image_url", {{"url", png_data_uri("text_400x128")}}}},
                                 {{"type", "text"}, {"text", mixed["input"]["text"]}}})}}});
  auto m = post_json(c, "/v1/embeddings", {{"messages", messages}});
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200) << m->body;
  EXPECT_LE(max_abs_diff(json::parse(m->body)["data"][0]["embedding"], mixed["embedding"]), 1e-3);
  EXPECT_EQ(json::parse(m->body)["usage"]["prompt_tokens"], mixed["num_tokens"]);
}

TEST_F(Embeddings, BadInputGetsTheRightStatus) {
  auto c = server_->client();
  expect_error(post_json(c, "/v1/embeddings", {{"input", "a"}, {"dimensions", 0}}), 400, "dimensions", "[1, 64]");
  expect_error(post_json(c, "/v1/embeddings", {{"input", "a"}, {"dimensions", 65}}), 400, "dimensions", "[1, 64]");
  expect_error(post_json(c, "/v1/embeddings", {{"input", json::array()}}), 400, "input", "empty");
  expect_error(post_json(c, "/v1/embeddings", {{"input", ""}}), 400, "input", "empty");
  expect_error(post_json(c, "/v1/embeddings", {{"input", "a"}, {"encoding_format", "int8"}}), 400, "encoding_format",
               "\"float\" or \"base64\"");
  expect_error(post_json(c, "/v1/embeddings", {{"input", "a"}, {"truncate_prompt_tokens", 8}}), 400,
               "truncate_prompt_tokens", "unknown field");
  expect_error(post_json(c, "/v1/embeddings", {{"input", json::array({{{"text", "a"}, {"image", "data:image/png;base64,AAAA"}}})}}),
               400, "input[0].image", "image");
  expect_error(post_json(c, "/v1/embeddings", {{"input", json::array({{{"text", "a"}, {"audio", "x"}}})}}), 400,
               "input[0].audio", "unknown field");
  expect_error(post_json(c, "/v1/embeddings", {{"input", {"a", "b", "c", "d", "e"}}}), 413, "input",
               "--max-embedding-inputs");
  // The wrong task: a chat request to an embedding deployment says what is served.
  expect_error(post_json(c, "/v1/chat/completions", chat_body("hi")), 400, "", "serves embeddings (POST /v1/embeddings)");
  expect_error(post_json(c, "/v1/rerank", {{"query", "q"}, {"documents", {"d"}}}), 400, "", "--task embed");
  // The server is still healthy and answering.
  auto ok = post_json(c, "/v1/embeddings", {{"input", "still here"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

class Rerank : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--task", "rerank", "--weights", "f32", "--max-rerank-documents", "3"});
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    delete server_;
  }
  static inline ServerProcess* server_ = nullptr;
};

TEST_F(Rerank, JinaCohereShapeSortedByTheGoldenScores) {
  const json& cal = golden_case("rerank", "calibrated_text");
  const json& pos = golden_case("rerank", "text_text");
  const json& img = golden_case("rerank", "calibrated_image_text");
  auto c = server_->client();
  json docs = json::array({cal["input"]["document"]["text"], pos["input"]["document"]["text"],
                           {{"text", img["input"]["document"]["text"]}, {"image", png_data_uri("alpha_96x64")}}});
  auto r = post_json(c, "/v1/rerank",
                     {{"model", "tiny-qwen3vl"}, {"query", cal["input"]["query"]["text"]}, {"documents", docs},
                      {"return_documents", true}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  ASSERT_EQ(j["results"].size(), 3u);
  // text_text ≈ 1, calibrated_text 0.36, calibrated_image_text 0.03: in that order.
  EXPECT_EQ(j["results"][0]["index"], 1);
  EXPECT_EQ(j["results"][1]["index"], 0);
  EXPECT_EQ(j["results"][2]["index"], 2);
  EXPECT_NEAR(j["results"][1]["relevance_score"].get<double>(), cal["score"].get<double>(), 0.025);
  EXPECT_NEAR(j["results"][2]["relevance_score"].get<double>(), img["score"].get<double>(), 0.025);
  EXPECT_EQ(j["results"][1]["document"]["text"], cal["input"]["document"]["text"]);
  EXPECT_GT(j["usage"]["total_tokens"].get<int>(), 0);
  // top_n, and the /v2/rerank path Cohere's v2 client posts to.
  auto top = post_json(c, "/v2/rerank", {{"query", cal["input"]["query"]["text"]}, {"documents", docs}, {"top_n", 1}});
  ASSERT_TRUE(top);
  ASSERT_EQ(top->status, 200) << top->body;
  const json t = json::parse(top->body);
  ASSERT_EQ(t["results"].size(), 1u);
  EXPECT_EQ(t["results"][0]["index"], 1);
  EXPECT_FALSE(t["results"][0].contains("document"));
}

TEST_F(Rerank, BadInputGetsTheRightStatus) {
  auto c = server_->client();
  expect_error(post_json(c, "/v1/rerank", {{"query", "q"}, {"documents", {"a", "b", "c", "d"}}}), 413, "documents",
               "--max-rerank-documents");
  expect_error(post_json(c, "/v1/rerank", {{"query", "q"}, {"documents", json::array()}}), 400, "documents", "empty");
  expect_error(post_json(c, "/v1/rerank", {{"documents", {"a"}}}), 400, "query", "required");
  expect_error(post_json(c, "/v1/rerank", {{"query", "q"}, {"documents", {"a"}}, {"top_n", 0}}), 400, "top_n",
               "at least 1");
  expect_error(post_json(c, "/v1/embeddings", {{"input", "a"}}), 400, "", "serves reranking (POST /v1/rerank)");
  expect_error(post_json(c, "/v1/chat/completions", chat_body("hi")), 400, "", "--task rerank");
}

}  // namespace
}  // namespace qvl::test
