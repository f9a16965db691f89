#include "search/search_store_postgres.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>

#include "util/error.h"

namespace qvl {
namespace {

// Every statement is idempotent: replicas may run it at once (under the lock below).
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS qvl_search_collections (
  id bigserial PRIMARY KEY,
  name text NOT NULL UNIQUE,
  dimensions integer NOT NULL,
  model text NOT NULL
);
CREATE TABLE IF NOT EXISTS qvl_search_documents (
  id bigserial PRIMARY KEY,                -- never reused
  collection bigint NOT NULL REFERENCES qvl_search_collections (id),
  path text NOT NULL,
  size bigint NOT NULL,
  mtime_ns bigint NOT NULL,
  sha256 text NOT NULL,
  pages bigint NOT NULL,
  indexed_at bigint NOT NULL,
  content bytea,                           -- an upload's bytes; NULL for a file on disk
  UNIQUE (collection, path)
);
CREATE TABLE IF NOT EXISTS qvl_search_pages (
  id bigserial PRIMARY KEY,
  collection bigint NOT NULL,
  document bigint NOT NULL REFERENCES qvl_search_documents (id) ON DELETE CASCADE,
  page bigint NOT NULL,
  width bigint NOT NULL,
  height bigint NOT NULL,
  embedding vector NOT NULL,               -- each collection's HNSW index casts it to its dimension
  thumbnail bytea NOT NULL
);
CREATE INDEX IF NOT EXISTS qvl_search_pages_by_document ON qvl_search_pages (document);
)sql";
constexpr const char* kSchemaLock = "7415166071";  // pg_advisory_xact_lock key

// pgvector's HNSW limits on the indexed type's dimensions.
constexpr int64_t kMaxVectorIndexDims = 2000, kMaxHalfvecIndexDims = 4000;
// The graph's build parameters. pgvector's defaults (m 16, ef_construction 64) give recall@10
// of 0.81 at ef_search 400 on 10k random 2048-d unit vectors (Debian 13, pgvector 0.8.0):
// a denser graph built with a wider search is what lifts it.
constexpr int kHnswM = 32, kHnswEfConstruction = 200;

std::string first_line(const char* message) {
  std::string s = message ? message : "";
  s = s.substr(0, s.find('\n'));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

class Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  ~Result() { PQclear(r_); }
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  ExecStatusType status() const { return PQresultStatus(r_); }
  int rows() const { return PQntuples(r_); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col); }
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
  }
  int64_t i64(int row, int col) const { return null(row, col) ? 0 : std::stoll(text(row, col)); }
  std::vector<uint8_t> bytes(int row, int col) const {  // a binary-format result's column
    const auto* p = reinterpret_cast<const uint8_t*>(PQgetvalue(r_, row, col));
    return {p, p + PQgetlength(r_, row, col)};
  }

 private:
  PGresult* r_;
};

// A statement's parameter: text, or raw bytes (bytea), or NULL.
struct Param {
  std::string value;
  bool binary = false;
  bool null = false;
};
// Bytes (bytea); `empty_is_null`: none given means NULL (an absent file content), not zero bytes.
Param bytes_param(std::span<const uint8_t> b, bool empty_is_null = false) {
  return {std::string(b.begin(), b.end()), true, empty_is_null && b.empty()};
}
Param text(std::string s) { return {std::move(s)}; }
Param text(int64_t v) { return {std::to_string(v)}; }

// pgvector's text form, every float32 exactly ("%.9g" round-trips).
std::string vector_text(std::span<const float> v) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof(buf), i ? ",%.9g" : "%.9g", static_cast<double>(v[i]));
    s += buf;
  }
  return s + "]";
}

// The indexed expression of a collection of `dims`, or "" when none fits.
std::string indexed_expression(int64_t dims) {
  if (dims <= kMaxVectorIndexDims) return cat("(embedding::vector(", dims, "))");
  if (dims <= kMaxHalfvecIndexDims) return cat("(embedding::halfvec(", dims, "))");
  return "";
}
std::string query_cast(int64_t dims) { return dims <= kMaxVectorIndexDims ? cat("vector(", dims, ")") : cat("halfvec(", dims, ")"); }

class PostgresSearchStore final : public SearchStore {
 public:
  explicit PostgresSearchStore(const PostgresSearchOptions& options)
      : options_(options), owned_(PQconnectdb(options.url.c_str())), conn_(owned_.get()) {
    if (PQstatus(conn_) != CONNECTION_OK)
      throw Error(cat("search index ", options.shown, ": cannot connect: ", first_line(PQerrorMessage(conn_))));
    exec("SET client_min_messages = warning");
    Result avail = exec("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
    if (avail.rows() == 0)
      throw Error(cat("search index ", options.shown,
                      ": this PostgreSQL has no pgvector extension (Debian 13: apt-get install "
                      "postgresql-<version>-pgvector; Debian 12 does not package it)"));
    exec("BEGIN");
    exec(cat("SELECT pg_advisory_xact_lock(", kSchemaLock, ")"));
    exec("CREATE EXTENSION IF NOT EXISTS vector");
    exec(kSchema);
    exec("COMMIT");
    exec(cat("SET hnsw.ef_search = ", std::clamp(options.ef_search, 1, 1000)));
  }

  std::string name() const override { return "postgresql"; }

  std::optional<SearchDocument> find(const std::string& collection, const std::string& path) override {
    std::lock_guard lock(mutex_);
    Result r = exec(cat(kDocumentColumns, "WHERE c.name = $1 AND d.path = $2"), {text(collection), text(path)});
    if (r.rows() == 0) return std::nullopt;
    return document_at(r, 0);
  }

  std::optional<SearchDocument> document(int64_t id) override {
    std::lock_guard lock(mutex_);
    Result r = exec(cat(kDocumentColumns, "WHERE d.id = $1"), {text(id)});
    if (r.rows() == 0) return std::nullopt;
    return document_at(r, 0);
  }

  int64_t put(const SearchDocument& doc, const std::vector<SearchPage>& pages, std::span<const uint8_t> content,
              const std::string& model) override {
    if (pages.empty()) throw Error(cat("search index: ", doc.path, " has no pages to store"));
    const int64_t dims = static_cast<int64_t>(pages[0].vector.size());
    for (const SearchPage& p : pages)
      if (static_cast<int64_t>(p.vector.size()) != dims || dims == 0)
        throw Error(cat("search index: the pages of ", doc.path, " have vectors of different lengths"));
    std::lock_guard lock(mutex_);
    Transaction t(*this);
    const int64_t cid = collection_for_write(doc.collection, dims, model);
    exec("DELETE FROM qvl_search_documents WHERE collection = $1 AND path = $2", {text(cid), text(doc.path)});
    Result r = exec(
        "INSERT INTO qvl_search_documents (collection, path, size, mtime_ns, sha256, pages, indexed_at, content) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        {text(cid), text(doc.path), text(doc.size), text(doc.mtime_ns), text(doc.sha256),
         text(static_cast<int64_t>(pages.size())), text(static_cast<int64_t>(std::time(nullptr))), bytes_param(content, true)});
    const int64_t id = r.i64(0, 0);
    for (const SearchPage& p : pages)
      exec("INSERT INTO qvl_search_pages (collection, document, page, width, height, embedding, thumbnail) "
           "VALUES ($1, $2, $3, $4, $5, $6::vector, $7)",
           {text(cid), text(id), text(p.page), text(p.width), text(p.height), text(vector_text(p.vector)),
            bytes_param(p.thumbnail)});
    t.commit();
    return id;
  }

  void touch(int64_t id, int64_t size, int64_t mtime_ns) override {
    std::lock_guard lock(mutex_);
    exec("UPDATE qvl_search_documents SET size = $2, mtime_ns = $3 WHERE id = $1", {text(id), text(size), text(mtime_ns)});
  }

  bool remove(int64_t id) override {
    std::lock_guard lock(mutex_);
    Result r = exec("DELETE FROM qvl_search_documents WHERE id = $1 RETURNING id", {text(id)});
    return r.rows() > 0;
  }

  std::vector<SearchDocument> documents(const std::string& collection) override {
    std::lock_guard lock(mutex_);
    Result r = exec(cat(kDocumentColumns, "WHERE $1 = '' OR c.name = $1 ORDER BY c.name, d.path"), {text(collection)});
    std::vector<SearchDocument> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(document_at(r, i));
    return out;
  }

  std::vector<SearchCollection> collections() override {
    std::lock_guard lock(mutex_);
    Result r = exec(
        "SELECT c.name, c.dimensions, c.model, (SELECT count(*) FROM qvl_search_documents d WHERE d.collection = c.id), "
        "(SELECT count(*) FROM qvl_search_pages p WHERE p.collection = c.id) FROM qvl_search_collections c ORDER BY c.name");
    std::vector<SearchCollection> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back({r.text(i, 0), r.i64(i, 1), r.text(i, 2), r.i64(i, 3), r.i64(i, 4)});
    return out;
  }

  std::vector<SearchHit> search(const std::string& collection, std::span<const float> query, int64_t k) override {
    std::lock_guard lock(mutex_);
    Result c = exec("SELECT id, dimensions FROM qvl_search_collections WHERE name = $1", {text(collection)});
    if (c.rows() == 0) throw Error(cat("search index: no collection '", collection, "' (qvl index adds one)"));
    const int64_t cid = c.i64(0, 0), dims = c.i64(0, 1);
    if (dims != static_cast<int64_t>(query.size()))
      throw Error(cat("search index: collection '", collection, "' holds vectors of ", dims, " dimensions; the query has ",
                      query.size()));
    // The collection id is written into the statement (an integer) so the
    // planner matches the partial index's predicate; ORDER BY repeats the
    // indexed expression exactly. The query goes twice ($1 scored as
    // float32, $2 as the index's type): one parameter cast to two types
    // would be deduced inconsistently.
    const std::string expr = indexed_expression(dims);
    const std::string order =
        expr.empty() ? "embedding <#> $2::vector" : cat(expr, " <#> $2::", query_cast(dims));
    Result r = exec(cat("SELECT p.id, p.document, p.page, d.path, p.score, p.width FROM (SELECT id, document, page, "
                        "width, -(embedding <#> $1::vector) AS score FROM qvl_search_pages WHERE collection = ",
                        cid, " ORDER BY ", order, " LIMIT ", std::max<int64_t>(k, 0),
                        ") p JOIN qvl_search_documents d ON d.id = p.document"),
                    {text(vector_text(query)), text(vector_text(query))});
    std::vector<SearchHit> out;
    for (int i = 0; i < r.rows(); ++i)
      out.push_back({r.i64(i, 0), r.i64(i, 1), r.text(i, 3), r.i64(i, 2), std::stof(r.text(i, 4)), r.i64(i, 5)});
    std::sort(out.begin(), out.end(), [](const SearchHit& a, const SearchHit& b) {
      return a.score != b.score ? a.score > b.score : a.page_id < b.page_id;
    });
    return out;
  }

  std::optional<SearchHit> page(int64_t page_id) override {
    std::lock_guard lock(mutex_);
    Result r = exec("SELECT p.document, p.page, d.path, p.width FROM qvl_search_pages p JOIN qvl_search_documents d "
                    "ON d.id = p.document WHERE p.id = $1",
                    {text(page_id)});
    if (r.rows() == 0) return std::nullopt;
    return SearchHit{page_id, r.i64(0, 0), r.text(0, 2), r.i64(0, 1), 0, r.i64(0, 3)};
  }

  std::optional<std::vector<uint8_t>> thumbnail(int64_t page_id) override {
    std::lock_guard lock(mutex_);
    Result r = exec("SELECT thumbnail FROM qvl_search_pages WHERE id = $1", {text(page_id)}, true);
    if (r.rows() == 0) return std::nullopt;
    return r.bytes(0, 0);
  }

  std::optional<std::vector<uint8_t>> content(int64_t document_id) override {
    std::lock_guard lock(mutex_);
    Result r = exec("SELECT content FROM qvl_search_documents WHERE id = $1 AND content IS NOT NULL",
                    {text(document_id)}, true);
    if (r.rows() == 0) return std::nullopt;
    return r.bytes(0, 0);
  }

 private:
  static constexpr const char* kDocumentColumns =
      "SELECT d.id, c.name, d.path, d.size, d.mtime_ns, d.sha256, d.pages, d.indexed_at, "
      "(d.content IS NOT NULL)::int FROM qvl_search_documents d JOIN qvl_search_collections c ON c.id = d.collection ";

  static SearchDocument document_at(const Result& r, int i) {
    SearchDocument d;
    d.id = r.i64(i, 0);
    d.collection = r.text(i, 1);
    d.path = r.text(i, 2);
    d.size = r.i64(i, 3);
    d.mtime_ns = r.i64(i, 4);
    d.sha256 = r.text(i, 5);
    d.pages = r.i64(i, 6);
    d.indexed_at = r.i64(i, 7);
    d.stored_content = r.i64(i, 8) != 0;
    return d;
  }

  // BEGIN … COMMIT, or ROLLBACK when left by an exception.
  class Transaction {
   public:
    explicit Transaction(PostgresSearchStore& s) : s_(s) { s_.exec("BEGIN"); }
    ~Transaction() {
      if (!done_) PQclear(PQexec(s_.conn_, "ROLLBACK"));
    }
    void commit() {
      s_.exec("COMMIT");
      done_ = true;
    }

   private:
    PostgresSearchStore& s_;
    bool done_ = false;
  };

  // A connection lost between calls is opened again once.
  void reconnect_if_lost() {
    if (PQstatus(conn_) == CONNECTION_OK) return;
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK)
      throw Error(cat("search index ", options_.shown, ": connection lost: ", first_line(PQerrorMessage(conn_))));
    exec(cat("SET hnsw.ef_search = ", std::clamp(options_.ef_search, 1, 1000)));
  }

  Result exec(const std::string& sql, const std::vector<Param>& params = {}, bool binary_result = false) {
    reconnect_if_lost();
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const Param& p : params) {
      values.push_back(p.null ? nullptr : p.value.data());
      lengths.push_back(static_cast<int>(p.value.size()));
      formats.push_back(p.binary ? 1 : 0);
    }
    Result r(params.empty() && !binary_result
                 ? PQexec(conn_, sql.c_str())
                 : PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                                lengths.data(), formats.data(), binary_result ? 1 : 0));
    if (r.status() == PGRES_COMMAND_OK || r.status() == PGRES_TUPLES_OK) return r;
    throw Error(cat("search index ", options_.shown, ": ", first_line(PQerrorMessage(conn_)),
                    " (in: ", sql.substr(0, 80), ")"));
  }

  int64_t collection_for_write(const std::string& name, int64_t dims, const std::string& model) {
    exec(cat("SELECT pg_advisory_xact_lock(", kSchemaLock, ")"));
    Result r = exec("SELECT id, dimensions FROM qvl_search_collections WHERE name = $1", {text(name)});
    if (r.rows() > 0) {
      if (r.i64(0, 1) != dims)
        throw Error(cat("search index: collection '", name, "' holds vectors of ", r.i64(0, 1), " dimensions, not ",
                        dims, " (another embedding model or --dimensions); use another --collection"));
      return r.i64(0, 0);
    }
    Result made = exec("INSERT INTO qvl_search_collections (name, dimensions, model) VALUES ($1, $2, $3) RETURNING id",
                       {text(name), text(dims), text(model)});
    const int64_t cid = made.i64(0, 0);
    if (const std::string expr = indexed_expression(dims); !expr.empty())
      exec(cat("CREATE INDEX qvl_search_hnsw_", cid, " ON qvl_search_pages USING hnsw (", expr, " ",
               dims <= kMaxVectorIndexDims ? "vector_ip_ops" : "halfvec_ip_ops", ") WITH (m = ", kHnswM,
               ", ef_construction = ", kHnswEfConstruction, ") WHERE collection = ", cid));
    return cid;
  }

  struct Finish {
    void operator()(PGconn* c) const { PQfinish(c); }
  };
  PostgresSearchOptions options_;
  std::mutex mutex_;
  std::unique_ptr<PGconn, Finish> owned_;  // closed however the constructor ends
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<SearchStore> open_postgres_search_store(const PostgresSearchOptions& options) {
  return std::make_unique<PostgresSearchStore>(options);
}

}  // namespace qvl
