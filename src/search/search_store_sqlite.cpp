#include "search/search_store_sqlite.h"

#include <sqlite3.h>

#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

#include "ops/dot_rows.h"
#include "search/search_ranking.h"
#include "util/error.h"

namespace qvl {
namespace {

constexpr int kSchemaVersion = 1;

const char* const kSchema = R"sql(
CREATE TABLE collections (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  dimensions INTEGER NOT NULL,
  model TEXT NOT NULL,
  generation INTEGER NOT NULL DEFAULT 0  -- bumped by every write: a reader's cached vectors are stale
);
CREATE TABLE documents (
  id INTEGER PRIMARY KEY AUTOINCREMENT,   -- never reused
  collection INTEGER NOT NULL,
  path TEXT NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  sha256 TEXT NOT NULL,
  pages INTEGER NOT NULL,
  indexed_at INTEGER NOT NULL,
  content BLOB,                           -- an upload's bytes; NULL for a file on disk
  UNIQUE (collection, path)
);
CREATE TABLE pages (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  collection INTEGER NOT NULL,
  document INTEGER NOT NULL,
  page INTEGER NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  vector BLOB NOT NULL,                   -- float32 [dimensions], little-endian
  thumbnail BLOB NOT NULL                 -- JPEG
);
CREATE INDEX pages_by_collection ON pages (collection, id);
CREATE INDEX pages_by_document ON pages (document);
)sql";

class Db {
 public:
  explicit Db(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw Error(cat("search index ", path, ": cannot open: ", why));
    }
  }
  ~Db() {
    for (auto& [sql, stmt] : stmts_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  [[noreturn]] void fail(const char* what) const {
    throw Error(cat("search index ", path_, ": ", std::string(what).substr(0, 80), ": ", sqlite3_errmsg(db_)));
  }
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string why = err ? err : "?";
      sqlite3_free(err);
      throw Error(cat("search index ", path_, ": ", why, " (in: ", std::string(sql).substr(0, 80), ")"));
    }
  }
  sqlite3_stmt* prepared(const char* sql) {
    auto [it, fresh] = stmts_.try_emplace(sql, nullptr);
    if (fresh && sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &it->second, nullptr) != SQLITE_OK) {
      stmts_.erase(it);
      fail(sql);
    }
    return it->second;
  }
  int64_t changes() const { return sqlite3_changes64(db_); }
  int64_t last_id() const { return sqlite3_last_insert_rowid(db_); }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<const char*, sqlite3_stmt*> stmts_;  // by the address of a literal
};

// One use of a prepared statement, reset when it goes.
class Query {
 public:
  Query(Db& db, const char* sql) : db_(db), stmt_(db.prepared(sql)) {}
  ~Query() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Query& bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Query& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Query& bind_blob(int i, const void* p, size_t n) {
    sqlite3_bind_blob64(stmt_, i, n ? p : "", n, SQLITE_TRANSIENT);
    return *this;
  }
  Query& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) db_.fail(sqlite3_sql(stmt_));
    return false;
  }
  void run() {
    while (step()) {
    }
  }
  int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, sqlite3_column_bytes(stmt_, col)) : std::string();
  }
  std::span<const uint8_t> blob(int col) const {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, col));
    return {p, p ? static_cast<size_t>(sqlite3_column_bytes(stmt_, col)) : 0};
  }

 private:
  Db& db_;
  sqlite3_stmt* stmt_;
};

class Transaction {
 public:
  explicit Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) try {
        db_.exec("ROLLBACK");
      } catch (...) {
      }
  }
  void commit() {
    db_.exec("COMMIT");
    done_ = true;
  }

 private:
  Db& db_;
  bool done_ = false;
};

constexpr const char* kDocumentColumns =
    "SELECT d.id, c.name, d.path, d.size, d.mtime_ns, d.sha256, d.pages, d.indexed_at, d.content IS NOT NULL "
    "FROM documents d JOIN collections c ON c.id = d.collection ";

SearchDocument document_at(const Query& q) {
  SearchDocument d;
  d.id = q.i64(0);
  d.collection = q.text(1);
  d.path = q.text(2);
  d.size = q.i64(3);
  d.mtime_ns = q.i64(4);
  d.sha256 = q.text(5);
  d.pages = q.i64(6);
  d.indexed_at = q.i64(7);
  d.stored_content = q.i64(8) != 0;
  return d;
}

// A collection's vectors as one matrix, as of its generation.
struct CachedVectors {
  int64_t collection_id = 0, generation = -1, dimensions = 0;
  std::vector<int64_t> page_ids;  // [pages]
  std::vector<float> vectors;     // [pages, dimensions]
};

class SqliteSearchStore final : public SearchStore {
 public:
  explicit SqliteSearchStore(const std::string& path) : path_(path), db_(path) {
    db_.exec("PRAGMA busy_timeout = 5000");
    db_.exec("PRAGMA journal_mode = WAL");
    db_.exec("PRAGMA synchronous = NORMAL");
    Transaction t(db_);
    int64_t version = 0;
    {
      Query q(db_, "PRAGMA user_version");
      if (q.step()) version = q.i64(0);
    }
    if (version > kSchemaVersion)
      throw Error(cat("search index ", path, ": schema version ", version, " is newer than this qvl's (",
                      kSchemaVersion, "): run the newer qvl, or point --index-db elsewhere"));
    if (version < kSchemaVersion) {
      db_.exec(kSchema);
      db_.exec("PRAGMA user_version = 1");
    }
    t.commit();
  }

  std::string name() const override { return "sqlite"; }

  std::optional<SearchDocument> find(const std::string& collection, const std::string& path) override {
    std::lock_guard lock(mutex_);
    static const std::string sql = std::string(kDocumentColumns) + "WHERE c.name = ?1 AND d.path = ?2";
    Query q(db_, sql.c_str());
    q.bind(1, collection).bind(2, path);
    if (!q.step()) return std::nullopt;
    return document_at(q);
  }

  std::optional<SearchDocument> document(int64_t id) override {
    std::lock_guard lock(mutex_);
    static const std::string sql = std::string(kDocumentColumns) + "WHERE d.id = ?1";
    Query q(db_, sql.c_str());
    q.bind(1, id);
    if (!q.step()) return std::nullopt;
    return document_at(q);
  }

  int64_t put(const SearchDocument& doc, const std::vector<SearchPage>& pages, std::span<const uint8_t> content,
              const std::string& model) override {
    if (pages.empty()) throw Error(cat("search index: ", doc.path, " has no pages to store"));
    const int64_t dims = static_cast<int64_t>(pages[0].vector.size());
    for (const SearchPage& p : pages)
      if (static_cast<int64_t>(p.vector.size()) != dims || dims == 0)
        throw Error(cat("search index: the pages of ", doc.path, " have vectors of different lengths"));
    std::lock_guard lock(mutex_);
    Transaction t(db_);
    const int64_t cid = collection_for_write(doc.collection, dims, model);
    remove_locked(cid, doc.path);
    {
      Query q(db_,
              "INSERT INTO documents (collection, path, size, mtime_ns, sha256, pages, indexed_at, content) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
      q.bind(1, cid).bind(2, doc.path).bind(3, doc.size).bind(4, doc.mtime_ns).bind(5, doc.sha256);
      q.bind(6, static_cast<int64_t>(pages.size())).bind(7, static_cast<int64_t>(std::time(nullptr)));
      if (content.empty()) q.bind_null(8);
      else q.bind_blob(8, content.data(), content.size());
      q.run();
    }
    const int64_t id = db_.last_id();
    for (const SearchPage& p : pages) {
      Query q(db_,
              "INSERT INTO pages (collection, document, page, width, height, vector, thumbnail) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
      q.bind(1, cid).bind(2, id).bind(3, p.page).bind(4, p.width).bind(5, p.height);
      q.bind_blob(6, p.vector.data(), p.vector.size() * sizeof(float));  // x86-64 and arm64 are little-endian
      q.bind_blob(7, p.thumbnail.data(), p.thumbnail.size());
      q.run();
    }
    Query(db_, "UPDATE collections SET generation = generation + 1 WHERE id = ?1").bind(1, cid).run();
    t.commit();
    return id;
  }

  void touch(int64_t id, int64_t size, int64_t mtime_ns) override {
    std::lock_guard lock(mutex_);
    Query(db_, "UPDATE documents SET size = ?2, mtime_ns = ?3 WHERE id = ?1").bind(1, id).bind(2, size).bind(3, mtime_ns).run();
  }

  bool remove(int64_t id) override {
    std::lock_guard lock(mutex_);
    Transaction t(db_);
    int64_t cid = 0;
    std::string path;
    {
      Query q(db_, "SELECT collection, path FROM documents WHERE id = ?1");
      q.bind(1, id);
      if (!q.step()) return false;
      cid = q.i64(0);
      path = q.text(1);
    }
    remove_locked(cid, path);
    Query(db_, "UPDATE collections SET generation = generation + 1 WHERE id = ?1").bind(1, cid).run();
    t.commit();
    return true;
  }

  std::vector<SearchDocument> documents(const std::string& collection) override {
    std::lock_guard lock(mutex_);
    static const std::string sql =
        std::string(kDocumentColumns) + "WHERE ?1 = '' OR c.name = ?1 ORDER BY c.name, d.path";
    Query q(db_, sql.c_str());
    q.bind(1, collection);
    std::vector<SearchDocument> out;
    while (q.step()) out.push_back(document_at(q));
    return out;
  }

  std::vector<SearchCollection> collections() override {
    std::lock_guard lock(mutex_);
    Query q(db_,
            "SELECT c.name, c.dimensions, c.model, (SELECT count(*) FROM documents d WHERE d.collection = c.id), "
            "(SELECT count(*) FROM pages p WHERE p.collection = c.id) FROM collections c ORDER BY c.name");
    std::vector<SearchCollection> out;
    while (q.step()) out.push_back({q.text(0), q.i64(1), q.text(2), q.i64(3), q.i64(4)});
    return out;
  }

  std::vector<SearchHit> search(const std::string& collection, std::span<const float> query, int64_t k) override {
    std::lock_guard lock(mutex_);
    const CachedVectors& v = vectors_locked(collection, static_cast<int64_t>(query.size()));
    const int64_t n = static_cast<int64_t>(v.page_ids.size());
    std::vector<float> scores(static_cast<size_t>(n));
    dot_rows(v.vectors.data(), n, v.dimensions, query.data(), scores.data());
    std::vector<SearchHit> out;
    for (size_t i : best_k(scores, v.page_ids, k)) {
      std::optional<SearchHit> hit = page_locked(v.page_ids[i]);
      if (!hit) continue;
      hit->score = scores[i];
      out.push_back(std::move(*hit));
    }
    return out;
  }

  std::optional<SearchHit> page(int64_t page_id) override {
    std::lock_guard lock(mutex_);
    return page_locked(page_id);
  }

  std::optional<std::vector<uint8_t>> thumbnail(int64_t page_id) override {
    std::lock_guard lock(mutex_);
    Query q(db_, "SELECT thumbnail FROM pages WHERE id = ?1");
    q.bind(1, page_id);
    if (!q.step()) return std::nullopt;
    const auto b = q.blob(0);
    return std::vector<uint8_t>(b.begin(), b.end());
  }

  std::optional<std::vector<uint8_t>> content(int64_t document_id) override {
    std::lock_guard lock(mutex_);
    Query q(db_, "SELECT content FROM documents WHERE id = ?1 AND content IS NOT NULL");
    q.bind(1, document_id);
    if (!q.step()) return std::nullopt;
    const auto b = q.blob(0);
    return std::vector<uint8_t>(b.begin(), b.end());
  }

 private:
  int64_t collection_for_write(const std::string& name, int64_t dims, const std::string& model) {
    {
      Query q(db_, "SELECT id, dimensions FROM collections WHERE name = ?1");
      q.bind(1, name);
      if (q.step()) {
        if (q.i64(1) != dims)
          throw Error(cat("search index: collection '", name, "' holds vectors of ", q.i64(1),
                          " dimensions, not ", dims, " (another embedding model or --dimensions); use another "
                          "--collection"));
        return q.i64(0);
      }
    }
    Query(db_, "INSERT INTO collections (name, dimensions, model) VALUES (?1, ?2, ?3)")
        .bind(1, name)
        .bind(2, dims)
        .bind(3, model)
        .run();
    return db_.last_id();
  }

  void remove_locked(int64_t cid, const std::string& path) {
    Query(db_, "DELETE FROM pages WHERE document IN (SELECT id FROM documents WHERE collection = ?1 AND path = ?2)")
        .bind(1, cid)
        .bind(2, path)
        .run();
    Query(db_, "DELETE FROM documents WHERE collection = ?1 AND path = ?2").bind(1, cid).bind(2, path).run();
  }

  std::optional<SearchHit> page_locked(int64_t page_id) {
    Query q(db_, "SELECT p.document, p.page, d.path, p.width FROM pages p JOIN documents d ON d.id = p.document "
                 "WHERE p.id = ?1");
    q.bind(1, page_id);
    if (!q.step()) return std::nullopt;
    SearchHit h;
    h.page_id = page_id;
    h.document_id = q.i64(0);
    h.page = q.i64(1);
    h.path = q.text(2);
    h.width = q.i64(3);
    return h;
  }

  const CachedVectors& vectors_locked(const std::string& collection, int64_t dims) {
    int64_t cid = 0, generation = 0, stored_dims = 0;
    {
      Query q(db_, "SELECT id, generation, dimensions FROM collections WHERE name = ?1");
      q.bind(1, collection);
      if (!q.step()) throw Error(cat("search index: no collection '", collection, "' (qvl index adds one)"));
      cid = q.i64(0), generation = q.i64(1), stored_dims = q.i64(2);
    }
    if (stored_dims != dims)
      throw Error(cat("search index: collection '", collection, "' holds vectors of ", stored_dims,
                      " dimensions; the query has ", dims));
    CachedVectors& c = cache_[collection];
    if (c.collection_id == cid && c.generation == generation) return c;
    c = CachedVectors{cid, generation, dims, {}, {}};
    Query q(db_, "SELECT id, vector FROM pages WHERE collection = ?1 ORDER BY id");
    q.bind(1, cid);
    while (q.step()) {
      const auto b = q.blob(1);
      if (b.size() != static_cast<size_t>(dims) * sizeof(float))
        throw Error(cat("search index ", path_, ": page ", q.i64(0), " has a vector of ", b.size(), " bytes, not ",
                        dims * 4));
      c.page_ids.push_back(q.i64(0));
      const size_t at = c.vectors.size();
      c.vectors.resize(at + static_cast<size_t>(dims));
      std::memcpy(c.vectors.data() + at, b.data(), b.size());
    }
    return c;
  }

  std::string path_;
  std::mutex mutex_;
  Db db_;
  std::map<std::string, CachedVectors> cache_;  // by collection name
};

}  // namespace

std::unique_ptr<SearchStore> open_sqlite_search_store(const std::string& path) {
  return std::make_unique<SqliteSearchStore>(path);
}

}  // namespace qvl
