// qvl index and qvl search on a small folder with the tiny model (as an
// embedding and a reranker checkpoint): what is indexed, skipped, replaced
// and removed, and search results whose scores and order are the embedding
// model's own (checked against qvl embed and qvl rerank on the same pages).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../pdf/pdf_writer.h"
#include "run_qvl.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const std::string kFixtures = QVL_FIXTURES_DIR;
const std::string kTiny = kFixtures + "/tiny-qwen3vl";
const std::string kQueryInstruction = "Retrieve the document pages that answer the user's question.";

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// A folder to index, an index file beside it, and the tiny model shipping
// the reranker script (for --rerank-model).
struct Workspace {
  fs::path dir, docs, reranker;
  std::string db;
  Workspace() {
    dir = fs::temp_directory_path() / ("qvl-search-cli-" + std::to_string(::getpid()) + "-" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    docs = dir / "docs";
    fs::create_directories(docs / "sub");
    // Small pages at 72 dpi: a few hundred image tokens each on the tiny model.
    write(docs / "report.pdf", pdf_of_pages({text_page(300, 200), table_page(), box_page(200, 300)}));
    fs::copy_file(kFixtures + "/golden/images/gradient_320x240.png", docs / "sub" / "chart.png");
    write(docs / "notes.txt", "not a page");
    reranker = dir / "reranker";
    fs::create_directories(reranker / "scripts");
    for (const auto& f : fs::directory_iterator(kTiny)) fs::create_symlink(fs::absolute(f.path()), reranker / f.path().filename());
    write(reranker / "scripts" / "qwen3_vl_reranker.py", "# the official script\n");
    db = "sqlite:" + (dir / "search.db").string();
  }
  ~Workspace() { fs::remove_all(dir); }

  std::vector<std::string> model_args() const {
    return {"--model", kTiny, "--task", "embed", "--weights", "f32", "--threads", "2", "--index-db", db,
            "--collection", "docs"};
  }
  QvlResult index(std::vector<std::string> more) const {
    std::vector<std::string> a = {"index"};
    for (const auto& x : model_args()) a.push_back(x);
    a.push_back("--dpi");
    a.push_back("72");
    for (auto& x : more) a.push_back(x);
    return run_qvl(a);
  }
  QvlResult search(const std::string& q, std::vector<std::string> more = {}) const {
    std::vector<std::string> a = {"search", q};
    for (const auto& x : model_args()) a.push_back(x);
    for (auto& x : more) a.push_back(x);
    return run_qvl(a);
  }
};

double dot(const json& a, const json& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i].get<double>() * b[i].get<double>();
  return s;
}

TEST(SearchCli, IndexesAFolderAndRanksPagesByTheModelsVectors) {
  Workspace w;
  QvlResult r = w.index({w.docs.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["collection"], "docs");
  EXPECT_EQ(out["index"], "sqlite");
  ASSERT_EQ(out["files"].size(), 2u) << out.dump();  // notes.txt is not a page
  EXPECT_EQ(out["files"][0]["path"], fs::absolute(w.docs / "report.pdf").string());
  EXPECT_EQ(out["files"][0]["outcome"], "added");
  EXPECT_EQ(out["files"][0]["pages"], 3);
  EXPECT_EQ(out["files"][1]["path"], fs::absolute(w.docs / "sub" / "chart.png").string());
  EXPECT_EQ(out["files"][1]["pages"], 1);
  EXPECT_EQ(out["added"], 2);
  EXPECT_EQ(out["pages_embedded"], 4);

  // What the model says of the same pages and question.
  QvlResult pages = run_qvl({"embed", "--model", kTiny, "--task", "embed", "--weights", "f32", "--threads", "2", "--dpi",
                             "72", "--image", (w.docs / "report.pdf").string(), "--image", (w.docs / "sub" / "chart.png").string()});
  ASSERT_EQ(pages.code, 0) << pages.err;
  QvlResult query = run_qvl({"embed", "--model", kTiny, "--task", "embed", "--weights", "f32", "--threads", "2",
                             "--instruction", kQueryInstruction, "--text", "the price list"});
  ASSERT_EQ(query.code, 0) << query.err;
  const json pv = json::parse(pages.out)["data"], qv = json::parse(query.out)["data"][0]["embedding"];
  std::vector<std::pair<double, std::pair<std::string, int>>> want;
  for (int i = 0; i < 4; ++i)
    want.push_back({dot(pv[i]["embedding"], qv),
                    {i < 3 ? "report.pdf" : "chart.png", i < 3 ? i + 1 : 1}});
  std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first > b.first; });

  QvlResult s = w.search("the price list", {"--top", "3"});
  ASSERT_EQ(s.code, 0) << s.err;
  const json res = json::parse(s.out);
  EXPECT_EQ(res["query"], "the price list");
  ASSERT_EQ(res["results"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const json& hit = res["results"][i];
    EXPECT_EQ(hit["rank"], i + 1);
    EXPECT_EQ(fs::path(hit["path"].get<std::string>()).filename().string(), want[i].second.first) << res.dump();
    EXPECT_EQ(hit["page"], want[i].second.second) << res.dump();
    EXPECT_NEAR(hit["score"].get<double>(), want[i].first, 1e-4);
  }

  // --rerank 3: the three best by vector, scored by the reranker as qvl rerank scores them, reordered.
  QvlResult rr = w.search("the price list", {"--top", "2", "--rerank", "3", "--rerank-model", w.reranker.string()});
  ASSERT_EQ(rr.code, 0) << rr.err;
  const json rres = json::parse(rr.out)["results"];
  ASSERT_EQ(rres.size(), 2u);
  EXPECT_GE(rres[0]["rerank_score"].get<double>(), rres[1]["rerank_score"].get<double>());
  for (const json& hit : rres) {
    std::vector<std::string> a = {"rerank", "--model", w.reranker.string(), "--weights", "f32", "--threads", "2",
                                  "--query", "the price list", "--dpi", "72"};
    a.push_back("--document-image");
    a.push_back(hit["path"].get<std::string>());
    if (hit["path"].get<std::string>().ends_with(".pdf")) {
      a.push_back("--pages");
      a.push_back(std::to_string(hit["page"].get<int>()));
    }
    QvlResult one = run_qvl(a);
    ASSERT_EQ(one.code, 0) << one.err;
    EXPECT_NEAR(hit["rerank_score"].get<double>(), json::parse(one.out)["results"][0]["relevance_score"].get<double>(), 1e-6);
  }
}

TEST(SearchCli, SkipsUnchangedFilesReplacesChangedOnesAndDeletes) {
  Workspace w;
  ASSERT_EQ(w.index({w.docs.string()}).code, 0);
  const fs::path png = w.docs / "sub" / "chart.png";
  QvlResult again = w.index({w.docs.string()});
  ASSERT_EQ(again.code, 0) << again.err;
  json out = json::parse(again.out);
  EXPECT_EQ(out["unchanged"], 2);
  EXPECT_EQ(out["pages_embedded"], 0);
  const int64_t png_id = out["files"][1]["document_id"];

  // The same bytes with a new time: unchanged, the same document.
  write(png, read(png));
  out = json::parse(w.index({png.string()}).out);
  EXPECT_EQ(out["files"][0]["outcome"], "unchanged");
  EXPECT_EQ(out["files"][0]["document_id"], png_id);

  // Other bytes: its pages replaced.
  fs::copy_file(kFixtures + "/golden/images/odd_313x97.png", png, fs::copy_options::overwrite_existing);
  out = json::parse(w.index({png.string()}).out);
  EXPECT_EQ(out["files"][0]["outcome"], "replaced");
  EXPECT_NE(out["files"][0]["document_id"], png_id);

  QvlResult del = run_qvl({"index", "--delete", (w.docs / "report.pdf").string(), "--index-db", w.db, "--collection", "docs"});
  ASSERT_EQ(del.code, 0) << del.err;
  EXPECT_EQ(json::parse(del.out)["removed"][0]["pages"], 3);
  QvlResult list = run_qvl({"index", "--list", "--index-db", w.db});
  ASSERT_EQ(list.code, 0) << list.err;
  const json l = json::parse(list.out);
  ASSERT_EQ(l["collections"].size(), 1u);
  EXPECT_EQ(l["collections"][0]["name"], "docs");
  EXPECT_EQ(l["collections"][0]["dimensions"], 64);
  EXPECT_EQ(l["collections"][0]["pages"], 1);
  ASSERT_EQ(l["documents"].size(), 1u);
  EXPECT_EQ(l["documents"][0]["path"], fs::absolute(png).string());
  QvlResult s = w.search("anything");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_EQ(json::parse(s.out)["results"].size(), 1u);

  // Deleting what is not there says so.
  QvlResult gone = run_qvl({"index", "--delete", (w.docs / "report.pdf").string(), "--index-db", w.db, "--collection", "docs"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_NE(gone.err.find("is not in collection 'docs'"), std::string::npos) << gone.err;
}

TEST(SearchCli, RefusesWhatItCannotDo) {
  Workspace w;
  QvlResult none = w.search("q");
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("no collection 'docs' in the index"), std::string::npos) << none.err;
  QvlResult no_model = w.search("q", {"--rerank", "3"});
  EXPECT_EQ(no_model.code, 2);
  EXPECT_NE(no_model.err.find("--rerank needs --rerank-model"), std::string::npos) << no_model.err;
  QvlResult bad_name = run_qvl({"index", "--list", "--index-db", w.db, "--collection", "a b"});
  EXPECT_EQ(bad_name.code, 2);
  EXPECT_NE(bad_name.err.find("is not 1-64 of A-Z a-z 0-9 . _ -"), std::string::npos) << bad_name.err;
  QvlResult missing = w.index({(w.docs / "nope.pdf").string()});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("nope.pdf: no such file or folder"), std::string::npos) << missing.err;
  // A file that is not a page fails alone; the others are indexed.
  QvlResult mixed = w.index({(w.docs / "notes.txt").string(), (w.docs / "sub").string()});
  EXPECT_EQ(mixed.code, 1);
  const json m = json::parse(mixed.out);
  EXPECT_EQ(m["failed"], 1);
  EXPECT_EQ(m["added"], 1);
  EXPECT_EQ(m["files"][0]["outcome"], "failed");
}

}  // namespace
}  // namespace qvl::test
