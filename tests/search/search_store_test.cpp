// The search stores against one contract: add, replace, delete, and search
// order against a brute-force reference (double-precision inner products
// over every stored vector). SQLite always; PostgreSQL + pgvector on a
// server the test starts itself (tests/server/postgres_server.h), skipped
// with the reason when Debian's postgresql or its pgvector package is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "../server/postgres_server.h"
#include "search/search_store_open.h"
#include "util/error.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

std::vector<float> unit_vector(std::mt19937& rng, int64_t dim) {
  std::normal_distribution<float> n(0, 1);
  std::vector<float> v(static_cast<size_t>(dim));
  double s = 0;
  for (float& x : v) {
    x = n(rng);
    s += double(x) * x;
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

SearchDocument doc_at(const std::string& collection, const std::string& path, const std::string& hash = "h") {
  SearchDocument d;
  d.collection = collection;
  d.path = path;
  d.size = 10;
  d.mtime_ns = 5;
  d.sha256 = hash;
  return d;
}

std::vector<SearchPage> pages_of(std::mt19937& rng, int count, int64_t dim) {
  std::vector<SearchPage> out;
  for (int i = 0; i < count; ++i) {
    SearchPage p;
    p.page = i + 1;
    p.width = 100 + i, p.height = 200;
    p.vector = unit_vector(rng, dim);
    p.thumbnail = {0xff, 0xd8, static_cast<uint8_t>(i), 0xff, 0xd9};
    out.push_back(std::move(p));
  }
  return out;
}

// The stored pages the test knows of, by (path, page): what the store should rank.
using Known = std::map<std::pair<std::string, int64_t>, std::vector<float>>;

std::vector<std::pair<std::string, int64_t>> brute_force(const Known& known, const std::vector<float>& q, size_t k) {
  std::vector<std::pair<double, std::pair<std::string, int64_t>>> scored;
  for (const auto& [key, v] : known) {
    double s = 0;
    for (size_t i = 0; i < q.size(); ++i) s += double(v[i]) * q[i];
    scored.push_back({s, key});
  }
  std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 0; i < std::min(k, scored.size()); ++i) out.push_back(scored[i].second);
  return out;
}

// One server for the suite (initdb takes seconds).
test::PostgresServer& postgres() {
  static test::PostgresServer server;
  return server;
}

// pgvector's control file in Debian's layout (postgresql-<version>-pgvector), looked for
// before a server is started for nothing.
bool pgvector_packaged() {
  std::error_code ec;
  for (const auto& v : fs::directory_iterator("/usr/share/postgresql", ec))
    if (fs::exists(v.path() / "extension" / "vector.control")) return true;
  return false;
}

bool has_pgvector() {
  return pgvector_packaged() && test::PostgresServer::sql(postgres().url("postgres"),
                                   "SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'") == "1";
}

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qvl-search-store-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    if (GetParam() == "sqlite") {
      url_ = "sqlite:" + (dir_ / "search.db").string();
    } else {
      if (!pgvector_packaged() || !postgres().available() || !has_pgvector())
        GTEST_SKIP() << "pgvector is not installed (Debian 13: postgresql-<version>-pgvector; Debian 12 does not "
                        "package it)";
      url_ = postgres().fresh_database();
    }
    store_ = open();
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<SearchStore> open() { return open_search_store({url_, "", "", 100}); }

  fs::path dir_;
  std::string url_;
  std::unique_ptr<SearchStore> store_;
};

TEST_P(StoreTest, SearchRanksEveryStoredPageAsBruteForceDoes) {
  std::mt19937 rng(1);
  const int64_t dim = 37;
  Known known;
  for (int d = 0; d < 4; ++d) {
    const std::string path = "/docs/" + std::to_string(d) + ".pdf";
    std::vector<SearchPage> pages = pages_of(rng, 6, dim);
    for (const SearchPage& p : pages) known[{path, p.page}] = p.vector;
    store_->put(doc_at("c", path), pages, {}, "tiny");
  }
  for (int trial = 0; trial < 5; ++trial) {
    const std::vector<float> q = unit_vector(rng, dim);
    const std::vector<SearchHit> hits = store_->search("c", q, 7);
    const auto want = brute_force(known, q, 7);
    ASSERT_EQ(hits.size(), 7u);
    for (size_t i = 0; i < hits.size(); ++i) {
      EXPECT_EQ(std::make_pair(hits[i].path, hits[i].page), want[i]) << "rank " << i << " of trial " << trial;
      EXPECT_EQ(hits[i].width, 100 + hits[i].page - 1);  // as indexed, for rendering the page again
      const std::optional<SearchHit> one = store_->page(hits[i].page_id);
      ASSERT_TRUE(one.has_value());
      EXPECT_EQ(one->width, hits[i].width);
      double s = 0;
      for (int64_t j = 0; j < dim; ++j) s += double(known[want[i]][j]) * q[j];
      EXPECT_NEAR(hits[i].score, s, 1e-5);
    }
  }
  // k over the page count: every page, once.
  EXPECT_EQ(store_->search("c", unit_vector(rng, dim), 100).size(), 24u);
  const std::vector<SearchCollection> cs = store_->collections();
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].name, "c");
  EXPECT_EQ(cs[0].dimensions, dim);
  EXPECT_EQ(cs[0].model, "tiny");
  EXPECT_EQ(cs[0].documents, 4);
  EXPECT_EQ(cs[0].pages, 24);
}

TEST_P(StoreTest, TheTwoBModelsDimensionSearchesAsBruteForceDoes) {
  // 2048 > pgvector's 2000 for vector indexes: the HNSW index is over the vectors as halfvec.
  std::mt19937 rng(5);
  const int64_t dim = 2048;
  Known known;
  for (int d = 0; d < 3; ++d) {
    const std::string path = "/big/" + std::to_string(d) + ".pdf";
    std::vector<SearchPage> pages = pages_of(rng, 10, dim);
    for (const SearchPage& p : pages) known[{path, p.page}] = p.vector;
    store_->put(doc_at("big", path), pages, {}, "2b");
  }
  const std::vector<float> q = unit_vector(rng, dim);
  const std::vector<SearchHit> hits = store_->search("big", q, 5);
  const auto want = brute_force(known, q, 5);
  ASSERT_EQ(hits.size(), 5u);
  for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(std::make_pair(hits[i].path, hits[i].page), want[i]) << i;
  if (GetParam() == "pgvector") {
    EXPECT_NE(test::PostgresServer::sql(url_, "SELECT indexdef FROM pg_indexes WHERE indexname LIKE 'qvl_search_hnsw_%'")
                  .find("(embedding)::halfvec(2048)) halfvec_ip_ops"),
              std::string::npos);
  }
}

TEST_P(StoreTest, PutReplacesTheDocumentsPagesAndDeleteRemovesThem) {
  std::mt19937 rng(2);
  const int64_t dim = 16;
  std::vector<SearchPage> first = pages_of(rng, 3, dim);
  const int64_t id1 = store_->put(doc_at("c", "/a.pdf", "old"), first, {}, "m");
  const std::vector<SearchHit> before = store_->search("c", first[1].vector, 1);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].page, 2);
  EXPECT_NEAR(before[0].score, 1.0, 1e-5);
  const int64_t old_page = before[0].page_id;
  ASSERT_TRUE(store_->thumbnail(old_page).has_value());
  EXPECT_EQ(*store_->thumbnail(old_page), first[1].thumbnail);

  std::vector<SearchPage> second = pages_of(rng, 2, dim);
  const std::vector<uint8_t> content = {'%', 'P', 'D', 'F', 0, 1, 2};
  const int64_t id2 = store_->put(doc_at("c", "/a.pdf", "new"), second, content, "m");
  EXPECT_NE(id1, id2);
  EXPECT_FALSE(store_->document(id1).has_value());
  EXPECT_FALSE(store_->thumbnail(old_page).has_value());
  const std::optional<SearchDocument> d = store_->find("c", "/a.pdf");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->id, id2);
  EXPECT_EQ(d->sha256, "new");
  EXPECT_EQ(d->pages, 2);
  EXPECT_TRUE(d->stored_content);
  EXPECT_EQ(*store_->content(id2), content);
  EXPECT_EQ(store_->search("c", first[1].vector, 10).size(), 2u);

  store_->touch(id2, 99, 1234);
  EXPECT_EQ(store_->document(id2)->size, 99);
  EXPECT_EQ(store_->document(id2)->mtime_ns, 1234);

  store_->put(doc_at("c", "/b.png"), pages_of(rng, 1, dim), {}, "m");
  EXPECT_EQ(store_->documents("c").size(), 2u);
  EXPECT_EQ(store_->documents("").size(), 2u);
  EXPECT_TRUE(store_->remove(id2));
  EXPECT_FALSE(store_->remove(id2));
  const std::vector<SearchHit> left = store_->search("c", second[0].vector, 10);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].path, "/b.png");
  EXPECT_FALSE(store_->content(id2).has_value());
}

TEST_P(StoreTest, CollectionsKeepTheirDimensionAndAreSeparate) {
  std::mt19937 rng(3);
  store_->put(doc_at("a", "/x.pdf"), pages_of(rng, 2, 8), {}, "m");
  store_->put(doc_at("b", "/x.pdf"), pages_of(rng, 3, 12), {}, "m");
  EXPECT_EQ(store_->search("a", unit_vector(rng, 8), 10).size(), 2u);
  EXPECT_EQ(store_->search("b", unit_vector(rng, 12), 10).size(), 3u);
  try {
    store_->put(doc_at("a", "/y.pdf"), pages_of(rng, 1, 12), {}, "m");
    FAIL() << "a vector of another dimension was stored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("collection 'a' holds vectors of 8 dimensions, not 12"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(store_->documents("a").size(), 1u);  // the refused put left nothing
  try {
    store_->search("a", unit_vector(rng, 12), 3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds vectors of 8 dimensions; the query has 12"), std::string::npos) << e.what();
  }
  try {
    store_->search("nope", unit_vector(rng, 8), 3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no collection 'nope'"), std::string::npos) << e.what();
  }
}

TEST_P(StoreTest, AnotherConnectionSeesWrites) {
  // The SQLite store caches a collection's vectors; another process's write must show.
  std::mt19937 rng(4);
  std::vector<SearchPage> pages = pages_of(rng, 2, 8);
  store_->put(doc_at("c", "/one.png"), pages, {}, "m");
  std::unique_ptr<SearchStore> other = open();
  EXPECT_EQ(other->search("c", pages[0].vector, 10).size(), 2u);
  std::vector<SearchPage> more = pages_of(rng, 1, 8);
  store_->put(doc_at("c", "/two.png"), more, {}, "m");
  const std::vector<SearchHit> hits = other->search("c", more[0].vector, 10);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].path, "/two.png");
  store_->remove(store_->find("c", "/one.png")->id);
  EXPECT_EQ(other->search("c", more[0].vector, 10).size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values("sqlite", "pgvector"),
                         [](const auto& info) { return info.param; });

TEST(SearchStoreOpen, RefusesAPostgresWithoutPgvectorNamingThePackage) {
  if (!postgres().available()) GTEST_SKIP() << "PostgreSQL: " << postgres().why_not();
  if (has_pgvector()) GTEST_SKIP() << "pgvector is installed here";
  try {
    open_search_store({postgres().fresh_database(), "", "", 100});
    FAIL() << "opened without pgvector";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no pgvector extension (Debian 13: apt-get install postgresql-<version>-pgvector"),
              std::string::npos)
        << e.what();
  }
}

TEST(SearchStoreOpen, SqliteFolderIsCreated) {
  const fs::path dir = fs::temp_directory_path() / ("qvl-search-open-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    auto s = open_search_store({"", (dir / "state" / "search.db").string(), "", 100});
    EXPECT_EQ(s->name(), "sqlite");
  }
  EXPECT_TRUE(fs::exists(dir / "state" / "search.db"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace qvl
