// The page embedded by cmake/embed_web.cmake must be byte-for-byte the files in web/, complete,
// with the right Content-Type, and reachable only by exact path.
#include "server/web_assets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace {

// web/ sits next to tests/ in the source tree; QVL_FIXTURES_DIR is <source>/tests/fixtures.
fs::path web_dir() { return fs::path(QVL_FIXTURES_DIR).parent_path().parent_path() / "web"; }

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What embed_web.cmake promises to embed: all of web/ but tests, docs and dot-files.
std::set<std::string> expected_paths() {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(web_dir())) {
    if (!e.is_regular_file()) continue;
    std::string rel = fs::relative(e.path(), web_dir()).generic_string();
    if (rel.starts_with("test/") || rel.ends_with(".md") || rel.starts_with(".") ||
        rel.find("/.") != std::string::npos) {
      continue;
    }
    out.insert("/" + rel);
  }
  return out;
}

}  // namespace

TEST(WebAssets, EmbedsEveryPageFileByteForByte) {
  std::set<std::string> embedded;
  for (const qvl::WebAsset& a : qvl::web_assets()) {
    embedded.insert(std::string(a.path));
    EXPECT_EQ(a.data, read_file(web_dir() / std::string(a.path.substr(1)))) << a.path;
  }
  EXPECT_EQ(embedded, expected_paths());
  EXPECT_TRUE(embedded.count("/index.html"));
  EXPECT_TRUE(embedded.count("/js/app.js"));
  EXPECT_FALSE(embedded.count("/test/markdown.test.mjs"));
}

TEST(WebAssets, SortedForLookup) {
  auto all = qvl::web_assets();
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(),
                             [](const qvl::WebAsset& a, const qvl::WebAsset& b) { return a.path < b.path; }));
}

TEST(WebAssets, ContentTypes) {
  EXPECT_EQ(qvl::find_web_asset("/index.html")->mime, "text/html; charset=utf-8");
  EXPECT_EQ(qvl::find_web_asset("/style.css")->mime, "text/css; charset=utf-8");
  // ES modules are refused by browsers unless served with a JavaScript MIME type.
  for (const qvl::WebAsset& a : qvl::web_assets()) {
    if (a.path.ends_with(".js")) {
      EXPECT_EQ(a.mime, "text/javascript; charset=utf-8") << a.path;
    }
  }
  EXPECT_EQ(qvl::find_web_asset("/favicon.svg")->mime, "image/svg+xml");
}

TEST(WebAssets, LookupIsExact) {
  const qvl::WebAsset* root = qvl::find_web_asset("/");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->path, "/index.html");
  EXPECT_NE(root->data.find("<script type=\"module\" src=\"js/app.js\">"), std::string_view::npos);
  EXPECT_EQ(qvl::find_web_asset(""), nullptr);
  EXPECT_EQ(qvl::find_web_asset("index.html"), nullptr);
  EXPECT_EQ(qvl::find_web_asset("/INDEX.HTML"), nullptr);
  EXPECT_EQ(qvl::find_web_asset("/js/"), nullptr);
  EXPECT_EQ(qvl::find_web_asset("/../CMakeLists.txt"), nullptr);
  EXPECT_EQ(qvl::find_web_asset("/js/../index.html"), nullptr);
  EXPECT_EQ(qvl::find_web_asset("/test/markdown.test.mjs"), nullptr);
  EXPECT_EQ(qvl::find_web_asset("/index.html?x=1"), nullptr);
  EXPECT_EQ(qvl::find_web_asset("/zzz"), nullptr);
}

TEST(WebAssets, PageIsSelfContained) {
  // Offline by design: no asset may load anything from another origin.
  for (const qvl::WebAsset& a : qvl::web_assets()) {
    if (!a.mime.starts_with("text/")) continue;
    for (const char* needle : {"src=\"http", "href=\"http", "@import", "url(http", "fonts.googleapis"}) {
      EXPECT_EQ(a.data.find(needle), std::string_view::npos) << a.path << " contains " << needle;
    }
  }
}
