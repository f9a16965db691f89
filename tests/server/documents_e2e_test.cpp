// POST /v1/qvl/documents/pages against the real server: every page listed
// with the size it renders at and exactly the image tokens it costs in a
// chat request (checked against real chat requests, their image_tokens and
// their prompt-token differences), thumbnails that decode with the asked
// longest side, a selection and a cap on thumbnails, a large document
// answered quickly, and every refusal a 4xx naming its field.
#include <chrono>

#include "../pdf/pdf_writer.h"
#include "image/image.h"
#include "jpeg_data_url.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

std::string pdf_uri(const std::string& pdf) { return "data:application/pdf;base64," + base64(pdf); }

// Pages of different areas, so each has its own cost: 320 x 240, 240 x 400,
// US Letter with text, and a wide one.
std::string mixed_pdf() {
  return pdf_of_pages({box_page(320, 240), box_page(240, 400), text_page(), box_page(640, 200)});
}

class DocumentPages : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--max-pdf-pages", "3"}); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    delete server_;
    server_ = nullptr;
  }

  static json pages(const json& body, int want_status = 200) {
    auto c = server_->client();
    auto r = post_json(c, "/v1/qvl/documents/pages", body);
    if (!r) return json();
    EXPECT_EQ(r->status, want_status) << r->body.substr(0, 400);
    json j = json::parse(r->body);
    if (r->status >= 400) j["error"]["status"] = r->status;
    return j;
  }

  // The usage of a chat request with `parts` then a question.
  static json chat_usage(const json& parts, const json& extra = json::object()) {
    json content = parts;
    content.push_back({{"type", "text"}, {"text", "What is on the page?"}});
    json body = {{"messages", json::array({{{"role", "user"}, {"content", content}}})}, {"max_tokens", 1}};
    body.update(extra);
    auto c = server_->client();
    auto r = post_json(c, "/v1/chat/completions", body);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body.substr(0, 400);
    return json::parse(r->body)["usage"];
  }

  static json page_part(const std::string& pdf, int page, double dpi) {
    return {{"type", "file"}, {"file", {{"file_data", pdf_uri(pdf)}, {"pages", std::to_string(page)}, {"dpi", dpi}}}};
  }

  static inline ServerProcess* server_ = nullptr;
};

TEST_F(DocumentPages, EveryPageWithItsSizeAndExactlyItsChatTokenCost) {
  const std::string pdf = mixed_pdf();
  const json doc = pages({{"file_data", pdf_uri(pdf)}, {"dpi", 72}, {"pages", "1"}});
  EXPECT_EQ(doc["object"], "qvl.document");
  EXPECT_EQ(doc["pages"], 4);  // listed beyond --max-pdf-pages: the client picks from all of them
  EXPECT_EQ(doc["max_pages"], 3);
  EXPECT_EQ(doc["dpi"], 72);
  ASSERT_EQ(doc["page_info"].size(), 4u) << doc.dump().substr(0, 400);
  const int sizes[4][2] = {{320, 240}, {240, 400}, {612, 792}, {640, 200}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(doc["page_info"][i]["page"], i + 1);
    EXPECT_EQ(doc["page_info"][i]["width"], sizes[i][0]);
    EXPECT_EQ(doc["page_info"][i]["height"], sizes[i][1]);
  }

  // What a page's part adds to a prompt beyond its image tokens (the vision
  // start and end markers), measured on a PNG whose image tokens the chat
  // usage reports.
  const json text_only = chat_usage(json::array());
  const json png = chat_usage(json::array({{{"type", "image_url"}, {"image_url", {{"url", png_data_uri()}}}}}));
  const int64_t framing = png["prompt_tokens"].get<int64_t>() - text_only["prompt_tokens"].get<int64_t>() -
                          png["prompt_tokens_details"]["image_tokens"].get<int64_t>();
  std::set<int64_t> costs;
  for (int page = 1; page <= 4; ++page) {
    SCOPED_TRACE(page);
    const int64_t listed = doc["page_info"][page - 1]["image_tokens"];
    const json usage = chat_usage(json::array({page_part(pdf, page, 72)}));
    EXPECT_EQ(usage["prompt_tokens_details"]["image_tokens"], listed);
    EXPECT_EQ(usage["prompt_tokens"].get<int64_t>() - text_only["prompt_tokens"].get<int64_t>(), listed + framing);
    costs.insert(listed);
  }
  EXPECT_EQ(costs.size(), 4u);  // the sizes differ, so must the costs

  // At 144 dpi with the request's own pixel range, as a chat request with the same fields.
  const json narrow = pages({{"file_data", pdf_uri(pdf)}, {"dpi", 144}, {"max_pixels", 200000}, {"pages", "3"}});
  EXPECT_EQ(narrow["page_info"][2]["width"], 1224);
  EXPECT_EQ(narrow["page_info"][2]["height"], 1584);
  const json usage = chat_usage(json::array({page_part(pdf, 3, 144)}), {{"max_pixels", 200000}});
  EXPECT_EQ(usage["prompt_tokens_details"]["image_tokens"], narrow["page_info"][2]["image_tokens"]);
  EXPECT_LT(narrow["page_info"][2]["image_tokens"].get<int64_t>(), 200000 / (32 * 32) + 1);
}

TEST_F(DocumentPages, ThumbnailsDecodeWithTheAskedLongestSide) {
  const json doc = pages({{"file_data", pdf_uri(mixed_pdf())}, {"thumbnail_size", 100}});
  ASSERT_EQ(doc["page_info"].size(), 4u);
  EXPECT_EQ(doc["thumbnail_size"], 100);
  const int sizes[4][2] = {{100, 75}, {60, 100}, {77, 100}, {100, 31}};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i + 1);
    ASSERT_TRUE(doc["page_info"][i].contains("thumbnail"));
    const qvl::Image thumb = decode_jpeg_data_url(doc["page_info"][i]["thumbnail"]);
    EXPECT_EQ(thumb.width, sizes[i][0]);
    EXPECT_EQ(thumb.height, sizes[i][1]);
  }
  // The first page's black box (72..216 x 72..144 pt from the bottom left) is dark in the thumbnail.
  const qvl::Image first = decode_jpeg_data_url(doc["page_info"][0]["thumbnail"]);
  const int x = 140 * 100 / 320, y = (240 - 108) * 100 / 320;
  EXPECT_LT(first.rgb[(size_t(y) * first.width + x) * 3], 60);
  EXPECT_GT(first.rgb[(size_t(5) * first.width + 5) * 3], 200);  // paper is white

  // The default size is 256, and "pages" chooses which pages get one.
  const json chosen = pages({{"file_data", pdf_uri(mixed_pdf())}, {"pages", "2,4"}});
  EXPECT_FALSE(chosen["page_info"][0].contains("thumbnail"));
  EXPECT_FALSE(chosen["page_info"][2].contains("thumbnail"));
  ASSERT_TRUE(chosen["page_info"][1].contains("thumbnail"));
  EXPECT_EQ(decode_jpeg_data_url(chosen["page_info"][1]["thumbnail"]).height, 256);
  EXPECT_EQ(decode_jpeg_data_url(chosen["page_info"][3]["thumbnail"]).width, 256);
}

TEST_F(DocumentPages, ALargeDocumentIsListedQuicklyWithCappedThumbnails) {
  // 500 pages of text: every page listed, thumbnails for the first 32 only.
  const std::string pdf = pdf_of_pages(std::vector<PdfPageSpec>(500, text_page()));
  const auto start = std::chrono::steady_clock::now();
  const json doc = pages({{"file_data", pdf_uri(pdf)}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10) << "a 500-page listing took " << seconds << " s";
  ASSERT_EQ(doc["page_info"].size(), 500u);
  EXPECT_EQ(doc["max_thumbnails"], 32);
  int thumbnails = 0;
  for (const json& p : doc["page_info"]) thumbnails += p.contains("thumbnail");
  EXPECT_EQ(thumbnails, 32);
  EXPECT_TRUE(doc["page_info"][31].contains("thumbnail"));
  EXPECT_FALSE(doc["page_info"][32].contains("thumbnail"));
  EXPECT_EQ(doc["page_info"][499]["image_tokens"], doc["page_info"][0]["image_tokens"]);
  // Later pages in ranges; more than 32 at once is refused naming pages.
  const json later = pages({{"file_data", pdf_uri(pdf)}, {"pages", "480-500"}});
  EXPECT_TRUE(later["page_info"][499].contains("thumbnail"));
  const json over = pages({{"file_data", pdf_uri(pdf)}, {"pages", "1-33"}}, 400);
  EXPECT_EQ(over["error"]["param"], "pages");
  EXPECT_EQ(over["error"]["code"], "invalid_pages");
  std::cerr << "500-page listing with 32 thumbnails: " << seconds << " s\n";
}

TEST_F(DocumentPages, RefusalsNameTheirField) {
  const std::string text = text_pdf();
  const std::string uri = pdf_uri(mixed_pdf());
  struct Case {
    std::string name;
    json body;
    int status;
    std::string param, code;
  };
  const std::vector<Case> cases = {
      {"encrypted", {{"file_data", pdf_uri(encrypted_pdf())}}, 400, "file_data", "invalid_pdf"},
      {"truncated", {{"file_data", pdf_uri(text.substr(0, text.size() / 2))}}, 400, "file_data", "invalid_pdf"},
      {"not a PDF", {{"file_data", pdf_uri("hello")}}, 400, "file_data", "invalid_pdf"},
      {"no file_data", {{"dpi", 72}}, 400, "file_data", "missing_field"},
      {"file_data a number", {{"file_data", 3}}, 400, "file_data", "invalid_type"},
      {"unknown field", {{"file_data", uri}, {"password", "x"}}, 400, "password", "unsupported_parameter"},
      {"dpi too high", {{"file_data", uri}, {"dpi", 5000}}, 400, "dpi", "invalid_value"},
      {"dpi a string", {{"file_data", uri}, {"dpi", "high"}}, 400, "dpi", "invalid_type"},
      {"thumbnail too large", {{"file_data", uri}, {"thumbnail_size", 2000}}, 400, "thumbnail_size", "invalid_value"},
      {"thumbnail too small", {{"file_data", uri}, {"thumbnail_size", 32}}, 400, "thumbnail_size", "invalid_value"},
      {"page 9 of 4", {{"file_data", uri}, {"pages", "9"}}, 400, "pages", "invalid_pages"},
      {"min_pixels 0", {{"file_data", uri}, {"min_pixels", 0}}, 400, "min_pixels", "invalid_value"},
      {"a 200-inch page", {{"file_data", pdf_uri(pdf_of_pages({box_page(14400, 14400)}))}}, 413, "file_data",
       "pdf_too_large"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const json e = pages(c.body, c.status)["error"];
    EXPECT_EQ(e["param"], c.param) << e.dump();
    EXPECT_EQ(e["code"], c.code) << e.dump();
  }
  auto c = server_->client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
}

TEST(DocumentPagesLimits, AFileOverTheSizeLimitIs413AndThumbnailsUseTheImageBudget) {
  ServerProcess s({"--max-pdf-bytes", "2000"});
  auto c = s.client();
  // 100 bytes over the limit (a comment after %%EOF): within the JSON
  // string limit, which leaves room for the data: header.
  std::string big = text_pdf();
  ASSERT_LT(big.size(), 2000u);
  big += "\n%" + std::string(2100 - big.size() - 2, 'x');
  auto r = post_json(c, "/v1/qvl/documents/pages", {{"file_data", pdf_uri(big)}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "file_data");
  EXPECT_EQ(s.stop(), 0) << s.log();

  // A 1024-px thumbnail's rendering peak (~11 bytes a pixel) does not fit a 1 MB budget.
  ServerProcess tight(media_budget_args(1 << 20));
  auto t = tight.client();
  r = post_json(t, "/v1/qvl/documents/pages",
                {{"file_data", pdf_uri(pdf_of_pages({box_page(612, 792)}))}, {"thumbnail_size", 1024}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  r = post_json(t, "/v1/qvl/documents/pages",
                {{"file_data", pdf_uri(pdf_of_pages({box_page(612, 792)}))}, {"thumbnail_size", 128}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body.substr(0, 300);
  EXPECT_EQ(tight.stop(), 0) << tight.log();
}

}  // namespace
}  // namespace qvl::test
