// The search routes against the real server with the tiny model served as an
// embedding model (--task embed), its index the default SQLite file in the
// test's state folder: index a PDF and an image (data URLs), list, search
// (scores equal to /v1/embeddings' vectors' inner products), thumbnails and
// page images, delete, and every refusal naming its field; reranking with a
// reranker loaded beside the embedding model (--rerank-model), its scores
// those of POST /v1/rerank for the same (question, page image) pairs; and
// indexing inside --memory-budget.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "../pdf/pdf_writer.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;

const std::string kQueryInstruction = "Retrieve the document pages that answer the user's question.";

void expect_error(const httplib::Result& r, int status, const std::string& param, const std::string& words) {
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  const json e = json::parse(r->body)["error"];
  if (param.empty()) EXPECT_TRUE(e["param"].is_null()) << r->body;
  else EXPECT_EQ(e["param"], param) << r->body;
  EXPECT_NE(e["message"].get<std::string>().find(words), std::string::npos) << r->body;
}

std::string pdf_data_uri() {
  return "data:application/pdf;base64," + base64(pdf_of_pages({text_page(300, 200), box_page(200, 300)}));
}

class Search : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new ServerProcess({"--task", "embed", "--weights", "f32"}); }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    delete server_;
  }
  static inline ServerProcess* server_ = nullptr;
};

double dot(const json& a, const json& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i].get<double>() * b[i].get<double>();
  return s;
}

TEST_F(Search, IndexListSearchThumbnailsAndDelete) {
  auto c = server_->client();
  auto pdf = post_json(c, "/v1/index", {{"file_data", pdf_data_uri()}, {"filename", "report.pdf"}, {"collection", "e2e"}, {"dpi", 72}});
  ASSERT_TRUE(pdf);
  ASSERT_EQ(pdf->status, 200) << pdf->body;
  const json p = json::parse(pdf->body);
  EXPECT_EQ(p["object"], "qvl.index.document");
  EXPECT_EQ(p["outcome"], "added");
  EXPECT_EQ(p["filename"], "report.pdf");
  EXPECT_EQ(p["collection"], "e2e");
  EXPECT_EQ(p["pages"], 2);
  // The same bytes again: nothing embedded, the same document.
  auto again = post_json(c, "/v1/index", {{"file_data", pdf_data_uri()}, {"filename", "report.pdf"}, {"collection", "e2e"}, {"dpi", 72}});
  ASSERT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(json::parse(again->body)["outcome"], "unchanged");
  EXPECT_EQ(json::parse(again->body)["id"], p["id"]);
  auto png = post_json(c, "/v1/index", {{"file_data", png_data_uri()}, {"filename", "chart.png"}, {"collection", "e2e"}});
  ASSERT_EQ(png->status, 200) << png->body;
  const json g = json::parse(png->body);
  EXPECT_EQ(g["pages"], 1);

  auto list = c.Get("/v1/index");
  ASSERT_EQ(list->status, 200) << list->body;
  const json l = json::parse(list->body);
  ASSERT_EQ(l["data"].size(), 2u);
  EXPECT_EQ(l["data"][0]["filename"], "chart.png");  // by name
  ASSERT_EQ(l["collections"].size(), 1u);
  EXPECT_EQ(l["collections"][0]["pages"], 3);
  EXPECT_EQ(l["collections"][0]["dimensions"], 64);
  auto only = c.Get("/v1/index?collection=e2e");
  ASSERT_EQ(only->status, 200) << only->body;
  EXPECT_EQ(json::parse(only->body)["data"].size(), 2u);
  auto other = c.Get("/v1/index?collection=elsewhere");
  ASSERT_EQ(other->status, 200) << other->body;
  EXPECT_EQ(json::parse(other->body)["data"].size(), 0u);

  auto s = post_json(c, "/v1/search", {{"query", "a gradient chart"}, {"collection", "e2e"}, {"top_k", 3}});
  ASSERT_EQ(s->status, 200) << s->body;
  const json hits = json::parse(s->body)["data"];
  ASSERT_EQ(hits.size(), 3u);
  for (size_t i = 0; i < hits.size(); ++i) {
    EXPECT_EQ(hits[i]["rank"], i + 1);
    if (i > 0) {
      EXPECT_GE(hits[i - 1]["score"].get<double>(), hits[i]["score"].get<double>());
    }
  }
  // The image's score is the inner product of the model's own vectors.
  auto q = post_json(c, "/v1/embeddings", {{"input", {{{"text", "a gradient chart"}, {"instruction", kQueryInstruction}},
                                                      {{"image", png_data_uri()}}}}});
  ASSERT_EQ(q->status, 200) << q->body;
  const json v = json::parse(q->body)["data"];
  const double want = dot(v[0]["embedding"], v[1]["embedding"]);
  bool seen = false;
  for (const json& h : hits)
    if (h["filename"] == "chart.png") {
      EXPECT_NEAR(h["score"].get<double>(), want, 1e-4);
      EXPECT_EQ(h["page"], 1);
      EXPECT_EQ(h["document_id"], g["id"]);
      seen = true;
    }
  EXPECT_TRUE(seen) << hits.dump();

  const std::string thumb_url = hits[0]["thumbnail_url"];
  EXPECT_EQ(thumb_url, "/v1/index/pages/" + std::to_string(hits[0]["page_id"].get<int64_t>()) + "/thumbnail");
  auto thumb = c.Get(thumb_url);
  ASSERT_EQ(thumb->status, 200);
  EXPECT_EQ(thumb->get_header_value("Content-Type"), "image/jpeg");
  EXPECT_EQ(thumb->body.substr(0, 2), "\xff\xd8");
  auto image = c.Get(hits[0]["image_url"].get<std::string>());
  ASSERT_EQ(image->status, 200) << image->body;
  EXPECT_EQ(image->body.substr(0, 2), "\xff\xd8");
  EXPECT_GT(image->body.size(), thumb->body.size() / 4);

  // Delete: its pages go with it.
  int64_t pdf_page = 0;
  for (const json& h : hits)
    if (h["filename"] == "report.pdf") pdf_page = h["page_id"];
  auto del = c.Delete("/v1/index/" + std::to_string(p["id"].get<int64_t>()));
  ASSERT_EQ(del->status, 200) << del->body;
  EXPECT_EQ(json::parse(del->body)["deleted"], true);
  expect_error(c.Delete("/v1/index/" + std::to_string(p["id"].get<int64_t>())), 404, "", "no indexed document");
  expect_error(c.Get("/v1/index/pages/" + std::to_string(pdf_page) + "/thumbnail"), 404, "", "no indexed page");
  auto after = post_json(c, "/v1/search", {{"query", "anything"}, {"collection", "e2e"}});
  ASSERT_EQ(after->status, 200);
  EXPECT_EQ(json::parse(after->body)["data"].size(), 1u);
}

TEST_F(Search, RefusalsNameTheirField) {
  auto c = server_->client();
  expect_error(post_json(c, "/v1/index", {{"filename", "a.pdf"}}), 400, "file_data", "'file_data' is required");
  expect_error(post_json(c, "/v1/index", {{"file_data", pdf_data_uri()}}), 400, "filename", "'filename' is required");
  expect_error(post_json(c, "/v1/index", {{"file_data", pdf_data_uri()}, {"filename", "a\nb"}}), 400, "filename",
               "without control characters");
  expect_error(post_json(c, "/v1/index", {{"file_data", pdf_data_uri()}, {"filename", "a.pdf"}, {"pages", "1"}}), 400,
               "pages", "unknown field 'pages'");
  expect_error(post_json(c, "/v1/index", {{"file_data", pdf_data_uri()}, {"filename", "a.pdf"}, {"collection", "a/b"}}),
               400, "collection", "1-64 of A-Z");
  expect_error(post_json(c, "/v1/index", {{"file_data", pdf_data_uri()}, {"filename", "a.pdf"}, {"dpi", 5000}}), 400,
               "dpi", "'dpi' must be a number in [36, 600]");
  expect_error(post_json(c, "/v1/index", {{"file_data", "data:text/plain;base64," + base64("hello")}, {"filename", "a.txt"}}),
               400, "file_data", "");
  expect_error(post_json(c, "/v1/search", {{"collection", "e2e"}}), 400, "query", "'query' is required");
  expect_error(post_json(c, "/v1/search", {{"query", ""}}), 400, "query", "'query' is empty");
  expect_error(post_json(c, "/v1/search", {{"query", "q"}, {"top_k", 0}}), 400, "top_k", "'top_k' must be in [1, 100]");
  expect_error(post_json(c, "/v1/search", {{"query", "q"}, {"top_k", "3"}}), 400, "top_k", "must be an integer");
  expect_error(post_json(c, "/v1/search", {{"query", "q"}, {"rerank", 5}}), 400, "rerank",
               "this server has no reranker model: start it with --rerank-model DIR");
  expect_error(post_json(c, "/v1/search", {{"query", "q"}, {"rerank", 0}}), 400, "rerank", "'rerank' must be in [1, 100]");
  expect_error(post_json(c, "/v1/search", {{"query", "q"}, {"collection", "nowhere"}}), 404, "collection",
               "no collection 'nowhere'");
  expect_error(post_json(c, "/v1/search", {{"query", "q"}, {"filter", 1}}), 400, "filter", "unknown field 'filter'");
  expect_error(c.Get("/v1/index/pages/999999/image"), 404, "", "no indexed page");
  expect_error(c.Get("/v1/index?limit=3"), 400, "limit", "unknown query parameter 'limit'");
  expect_error(c.Get("/v1/index?collection=a%2Fb"), 400, "collection", "1-64 of A-Z");
  // The server is still healthy.
  EXPECT_EQ(c.Get("/health")->status, 200);
}

// The tiny model as a Qwen3-VL-Reranker folder: its files, and the script
// that says what it is (the official repos ship it; --rerank-model needs it).
struct RerankerFolder {
  std::filesystem::path dir;
  RerankerFolder() {
    namespace fs = std::filesystem;
    dir = fs::temp_directory_path() / ("qvl-search-e2e-reranker-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir / "scripts");
    for (const auto& f : fs::directory_iterator(kTinyModel)) fs::create_symlink(fs::absolute(f.path()), dir / f.path().filename());
    std::ofstream(dir / "scripts" / "qwen3_vl_reranker.py") << "# the official script\n";
  }
  ~RerankerFolder() { std::filesystem::remove_all(dir); }
};

class SearchRerank : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new RerankerFolder();
    server_ = new ServerProcess({"--task", "embed", "--weights", "f32", "--rerank-model", folder_->dir.string()});
    reranker_ = new ServerProcess({"--weights", "f32"}, {}, folder_->dir.string());  // serves /v1/rerank: its script says so
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(server_->stop(), 0) << server_->log();
    EXPECT_EQ(reranker_->stop(), 0) << reranker_->log();
    delete server_;
    delete reranker_;
    delete folder_;
  }
  static inline RerankerFolder* folder_ = nullptr;
  static inline ServerProcess *server_ = nullptr, *reranker_ = nullptr;
};

TEST_F(SearchRerank, ScoresAreTheRerankRoutesSortedByThem) {
  // Three pages: a one-page PDF at the default dpi (rendered again as it was
  // indexed) and two images.
  const std::string pdf = "data:application/pdf;base64," + base64(pdf_of_pages({text_page(300, 200)}));
  const std::map<std::string, std::string> files = {
      {"page.pdf", pdf}, {"chart.png", png_data_uri()}, {"text.png", png_data_uri("text_400x128")}};
  auto c = server_->client();
  for (const auto& [name, uri] : files) {
    auto r = post_json(c, "/v1/index", {{"file_data", uri}, {"filename", name}, {"collection", "rr"}});
    ASSERT_EQ(r->status, 200) << r->body;
  }
  const std::string question = "a chart of the quarterly prices";
  auto s = post_json(c, "/v1/search", {{"query", question}, {"collection", "rr"}, {"top_k", 10}, {"rerank", 3}});
  ASSERT_EQ(s->status, 200) << s->body;
  const json hits = json::parse(s->body)["data"];
  ASSERT_EQ(hits.size(), 3u) << hits.dump();

  // The same pairs through POST /v1/rerank (the PDF's page rendered from the same bytes at the same dpi).
  json docs = json::array();
  std::vector<std::string> names;
  for (const auto& [name, uri] : files) docs.push_back({{"image", uri}}), names.push_back(name);
  auto rc = reranker_->client();
  auto r = post_json(rc, "/v1/rerank", {{"query", question}, {"documents", docs}});
  ASSERT_EQ(r->status, 200) << r->body;
  std::map<std::string, double> want;
  const json results = json::parse(r->body)["results"];
  for (const json& x : results) want[names[x["index"].get<size_t>()]] = x["relevance_score"];
  ASSERT_EQ(want.size(), 3u) << r->body;
  for (size_t i = 0; i < hits.size(); ++i) {
    EXPECT_EQ(hits[i]["rank"], i + 1);
    ASSERT_TRUE(hits[i].contains("rerank_score")) << hits[i];
    EXPECT_NEAR(hits[i]["rerank_score"].get<double>(), want.at(hits[i]["filename"]), 1e-5) << hits[i];
    EXPECT_TRUE(hits[i]["score"].is_number());
    if (i > 0) {
      EXPECT_GE(hits[i - 1]["rerank_score"].get<double>(), hits[i]["rerank_score"].get<double>());
    }
  }
  // The best K by vector are rescored, the best top_k of them returned.
  auto two = post_json(c, "/v1/search", {{"query", question}, {"collection", "rr"}, {"top_k", 2}, {"rerank", 3}});
  ASSERT_EQ(two->status, 200) << two->body;
  const json best = json::parse(two->body)["data"];
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0]["page_id"], hits[0]["page_id"]);
  EXPECT_EQ(best[1]["page_id"], hits[1]["page_id"]);
  // Without rerank: no rerank_score, ranked by the vectors.
  auto plain = post_json(c, "/v1/search", {{"query", question}, {"collection", "rr"}});
  ASSERT_EQ(plain->status, 200) << plain->body;
  const json plain_hits = json::parse(plain->body)["data"];
  ASSERT_FALSE(plain_hits.empty());
  for (const json& h : plain_hits) EXPECT_FALSE(h.contains("rerank_score")) << h;

  expect_error(post_json(c, "/v1/search", {{"query", question}, {"collection", "rr"}, {"rerank", 0}}), 400, "rerank",
               "'rerank' must be in [1, 100]");
  expect_error(post_json(c, "/v1/search", {{"query", question}, {"collection", "rr"}, {"rerank", 101}}), 400, "rerank",
               "'rerank' must be in [1, 100], got 101");
  expect_error(post_json(c, "/v1/search", {{"query", question}, {"collection", "rr"}, {"rerank", "3"}}), 400, "rerank",
               "'rerank' must be an integer");
  expect_error(post_json(c, "/v1/search", {{"query", question}, {"collection", "rr"}, {"rerank", 2.5}}), 400, "rerank",
               "'rerank' must be an integer");
  EXPECT_EQ(c.Get("/health")->status, 200);
}

// POST /v1/index renders pages through the memory budget chat media use: a
// page that cannot fit beside the KV caches is chat's 413, at a lower dpi it fits.
TEST(SearchMemory, APageOverTheBudgetIsRefusedAsChatsImages) {
  ServerProcess s([] {
    std::vector<std::string> a = {"--task", "embed", "--weights", "f32"};
    for (const std::string& x : media_budget_args(1 << 20)) a.push_back(x);
    return a;
  }());
  auto c = s.client();
  // 600 x 400 px at 144 dpi, with the renderer's working memory: over 1 MiB.
  const std::string pdf = "data:application/pdf;base64," + base64(pdf_of_pages({text_page(300, 200)}));
  auto r = post_json(c, "/v1/index", {{"file_data", pdf}, {"filename", "big.pdf"}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 413) << r->body;
  const json e = json::parse(r->body)["error"];
  EXPECT_EQ(e["code"], "image_too_large") << e;
  EXPECT_EQ(e["param"], "file_data") << e;
  EXPECT_NE(e["message"].get<std::string>().find("over the server's image memory budget of 1048576 bytes"), std::string::npos)
      << e;
  // An 800 x 600 image: 1.44 MB of pixels, refused the same way.
  auto big = post_json(c, "/v1/index", {{"file_data", png_data_uri("large_800x600")}, {"filename", "large.png"}});
  ASSERT_TRUE(big);
  ASSERT_EQ(big->status, 413) << big->body;
  EXPECT_EQ(json::parse(big->body)["error"]["code"], "image_too_large");
  // Nothing was stored; the same PDF at 72 dpi and a smaller image fit.
  auto list = c.Get("/v1/index");
  ASSERT_EQ(list->status, 200) << list->body;
  EXPECT_EQ(json::parse(list->body)["data"].size(), 0u);
  auto small = post_json(c, "/v1/index", {{"file_data", pdf}, {"filename", "big.pdf"}, {"dpi", 72}});
  ASSERT_EQ(small->status, 200) << small->body;
  EXPECT_EQ(json::parse(small->body)["pages"], 1);
  auto png = post_json(c, "/v1/index", {{"file_data", png_data_uri()}, {"filename", "chart.png"}});
  ASSERT_EQ(png->status, 200) << png->body;
  EXPECT_EQ(s.stop(), 0) << s.log();
}

}  // namespace
}  // namespace qvl::test
