// PDF input against the real server: a file part's pages enter the prompt
// exactly as the same images sent as PNGs would (same prompt tokens), pages
// and dpi choose what is rendered, a PDF data: URL works in image_url, in
// the Responses API's input_file and in a job; every bad PDF or field is a
// 4xx naming the field and the server answers normally afterwards.
#include "../pdf/pdf_writer.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

// 320 x 240 pt pages rendered at 72 dpi are 320 x 240 px: the size of the
// gradient_320x240 PNG fixture, so each page costs that image's tokens.
std::string two_page_pdf() { return pdf_of_pages({box_page(320, 240), box_page(320, 240, "20 20 100 50")}); }

std::string pdf_uri(const std::string& pdf) { return "data:application/pdf;base64," + base64(pdf); }

json file_part(const std::string& pdf, json extra = json::object()) {
  json file = {{"file_data", pdf_uri(pdf)}, {"filename", "doc.pdf"}, {"dpi", 72}};
  for (auto it = extra.begin(); it != extra.end(); ++it) file[it.key()] = *it;
  return {{"type", "file"}, {"file", file}};
}

json body_with(const json& parts) {
  json content = parts;
  content.push_back({{"type", "text"}, {"text", "What does the document say?"}});
  return {{"messages", json::array({{{"role", "user"}, {"content", content}}})}, {"max_tokens", 1}, {"temperature", 0}};
}

class PdfInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--max-pdf-pages", "3"}); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    delete server_;
    server_ = nullptr;
  }

  // prompt_tokens of a chat request that must succeed.
  static int64_t prompt_tokens(const json& body) {
    auto c = server_->client();
    auto r = post_json(c, "/v1/chat/completions", body);
    if (!r) return -1;
    EXPECT_EQ(r->status, 200) << r->body;
    if (r->status != 200) return -1;
    return json::parse(r->body)["usage"]["prompt_tokens"].get<int64_t>();
  }

  // The error of a request that must be refused with a 4xx.
  static json refusal(const json& body, const std::string& path = "/v1/chat/completions") {
    auto c = server_->client();
    auto r = post_json(c, path, body);
    if (!r) return json();
    EXPECT_GE(r->status, 400) << r->body;
    EXPECT_LT(r->status, 500) << r->body;
    json e = json::parse(r->body)["error"];
    e["status"] = r->status;
    return e;
  }

  static void expect_healthy() {
    const json png = {{"type", "image_url"}, {"image_url", {{"url", png_data_uri()}}}};
    EXPECT_GT(prompt_tokens(body_with(json::array({png}))), 0);
  }

  static inline ServerProcess* server_ = nullptr;
};

TEST_F(PdfInput, PagesCostExactlyWhatTheSameImagesCost) {
  const json kPng = {{"type", "image_url"}, {"image_url", {{"url", png_data_uri()}}}};
  const int64_t one_png = prompt_tokens(body_with(json::array({kPng})));
  const int64_t two_pngs = prompt_tokens(body_with(json::array({kPng, kPng})));
  ASSERT_GT(two_pngs, one_png);
  EXPECT_EQ(prompt_tokens(body_with(json::array({file_part(two_page_pdf())}))), two_pngs);
  EXPECT_EQ(prompt_tokens(body_with(json::array({file_part(two_page_pdf(), {{"pages", "2"}})}))), one_png);
  // Beside an image part, a page counts as one more image.
  EXPECT_EQ(prompt_tokens(body_with(json::array({kPng, file_part(two_page_pdf(), {{"pages", "1"}})}))), two_pngs);
}

TEST_F(PdfInput, APdfDataUrlInImageUrlGivesEveryPage) {
  // At the default 144 dpi each page is 640 x 480 px: more tokens than the 320 x 240 PNG.
  const json part = {{"type", "image_url"}, {"image_url", {{"url", pdf_uri(two_page_pdf())}}}};
  const int64_t tokens = prompt_tokens(body_with(json::array({part})));
  const json png = {{"type", "image_url"}, {"image_url", {{"url", png_data_uri()}}}};
  EXPECT_GT(tokens, prompt_tokens(body_with(json::array({png, png}))));
}

TEST_F(PdfInput, BadPdfsAndFieldsAre4xxNamingTheField) {
  const std::string p = "messages[0].content[0].file";
  struct Case {
    std::string name;
    json part;
    std::string param;
    int status;
  };
  const std::string text = text_pdf();
  const std::vector<Case> cases = {
      {"encrypted", file_part(encrypted_pdf()), p + ".file_data", 400},
      {"truncated", file_part(text.substr(0, text.size() / 2)), p + ".file_data", 400},
      {"not a PDF", file_part("hello, this is text"), p + ".file_data", 400},
      {"page 5 of 2", file_part(two_page_pdf(), {{"pages", "5"}}), p + ".pages", 400},
      {"bad selection", file_part(two_page_pdf(), {{"pages", "2-1"}}), p + ".pages", 400},
      {"dpi 5000", file_part(two_page_pdf(), {{"dpi", 5000}}), p + ".dpi", 400},
      {"dpi a string", file_part(two_page_pdf(), {{"dpi", "high"}}), p + ".dpi", 400},
      {"file_id", {{"type", "file"}, {"file", {{"file_id", "file-abc"}}}}, p + ".file_id", 400},
      {"unknown key", file_part(two_page_pdf(), {{"password", "x"}}), p + ".password", 400},
      {"no file_data", {{"type", "file"}, {"file", {{"filename", "a.pdf"}}}}, p + ".file_data", 400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const json e = refusal(body_with(json::array({c.part})));
    EXPECT_EQ(e["status"], c.status) << e.dump();
    EXPECT_EQ(e["param"], c.param) << e.dump();
    EXPECT_EQ(e["message"].get<std::string>().find('\n'), std::string::npos);
  }
  expect_healthy();
}

TEST_F(PdfInput, MorePagesThanTheServerAllowsAreRefusedBeforeRendering) {
  std::vector<PdfPageSpec> pages(4, box_page(320, 240));
  const json e = refusal(body_with(json::array({file_part(pdf_of_pages(pages))})));
  EXPECT_EQ(e["status"], 413) << e.dump();
  EXPECT_EQ(e["code"], "too_many_pages");
  EXPECT_NE(e["message"].get<std::string>().find("--max-pdf-pages"), std::string::npos) << e.dump();
  // Across PDFs of one request too.
  const json two = file_part(two_page_pdf());
  EXPECT_EQ(refusal(body_with(json::array({two, two})))["code"], "too_many_pages");
  // Choosing pages brings it under the cap.
  EXPECT_GT(prompt_tokens(body_with(json::array({file_part(pdf_of_pages(pages), {{"pages", "1-3"}})}))), 0);
  expect_healthy();
}

TEST_F(PdfInput, ResponsesInputFileWorksAndErrorsNameItsFields) {
  const json file = {{"type", "input_file"}, {"file_data", pdf_uri(two_page_pdf())}, {"filename", "doc.pdf"},
                     {"dpi", 72}, {"pages", "1"}};
  const json body = {{"input", json::array({{{"role", "user"},
                                             {"content", json::array({file, {{"type", "input_text"}, {"text", "Read it."}}})}}})},
                     {"max_output_tokens", 1},
                     {"store", false}};
  auto c = server_->client();
  auto r = post_json(c, "/v1/responses", body);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const int64_t tokens = json::parse(r->body)["usage"]["input_tokens"].get<int64_t>();
  EXPECT_GT(tokens, 0);

  json bad = body;
  bad["input"][0]["content"][0]["pages"] = "9";
  const json e = refusal(bad, "/v1/responses");
  EXPECT_EQ(e["param"], "input[0].content[0].pages") << e.dump();
  bad = body;
  bad["input"][0]["content"][0].erase("file_data");
  bad["input"][0]["content"][0]["file_id"] = "file-abc";
  EXPECT_EQ(refusal(bad, "/v1/responses")["param"], "input[0].content[0].file_id");
}

TEST_F(PdfInput, AJobWithAPdfCompletes) {
  auto c = server_->client();
  auto r = post_json(c, "/v1/jobs", body_with(json::array({file_part(two_page_pdf())})));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  const std::string id = json::parse(r->body)["id"];
  json status;
  EXPECT_TRUE(eventually(
      [&] {
        auto g = c.Get(("/v1/jobs/" + id).c_str());
        if (!g || g->status != 200) return false;
        status = json::parse(g->body);
        return status["status"] != "queued" && status["status"] != "running";
      },
      60000));
  EXPECT_EQ(status["status"], "succeeded") << status.dump();
}

// Rendering is image work: a page's rendering peak is reserved from the
// image memory budget, from its page box, before Poppler allocates it.
TEST(PdfAdmission, APageOverTheImageMemoryBudgetIs413BeforeRendering) {
  ServerProcess s(media_budget_args(4 << 20));
  auto c = s.client();
  // 320 x 240 pt at 600 dpi: 2667 x 2000 px, 58 MB at the rendering peak.
  auto r = post_json(c, "/v1/chat/completions", body_with(json::array({file_part(two_page_pdf(), {{"dpi", 600}})})));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "image_too_large") << r->body;
  EXPECT_EQ(e["param"], "messages[0].content[0].file") << r->body;
  // At 72 dpi the pages fit.
  r = post_json(c, "/v1/chat/completions", body_with(json::array({file_part(two_page_pdf())})));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(s.stop(), 0) << s.log();
}

}  // namespace
}  // namespace qvl::test
