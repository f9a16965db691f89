#include "server/job_store_sqlite.h"

#include <sqlite3.h>

#include <cerrno>
#include <filesystem>
#include <map>
#include <mutex>

#include "server/job_media.h"
#include "util/error.h"

namespace qvl {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

// Each step takes the schema from version i to i + 1 (index i).
const char* const kMigrations[] = {
    // 1: jobs and per-page batches.
    R"sql(
CREATE TABLE jobs (
  -- The small columns first: a row's large texts (body, result) live in
  -- overflow pages that a query reading only the columns before them skips.
  seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- arrival order
  id TEXT NOT NULL UNIQUE,
  created INTEGER NOT NULL,               -- Unix seconds
  model TEXT NOT NULL,
  batch TEXT,                             -- the batch's id, or NULL
  page INTEGER NOT NULL DEFAULT 0,
  state TEXT NOT NULL,                    -- queued running succeeded failed cancelled expired
  attempts INTEGER NOT NULL DEFAULT 0,
  owner TEXT,                             -- the runner holding the lease
  lease_until_ms INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  progress_tokens INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0,       -- body + result, against --max-job-bytes
  error TEXT,                             -- JSON
  progress_text TEXT NOT NULL DEFAULT '',
  result TEXT,                            -- JSON
  body TEXT NOT NULL                      -- the chat body (JSON); '' for a batch's page
);
CREATE INDEX jobs_by_state ON jobs (state, seq);
CREATE INDEX jobs_by_batch ON jobs (batch);
CREATE TABLE batches (
  id TEXT PRIMARY KEY,
  created INTEGER NOT NULL,
  model TEXT NOT NULL,
  plan TEXT NOT NULL,                     -- page_batch_plan_text()
  job_ids TEXT NOT NULL,                  -- JSON array, in page order
  bytes INTEGER NOT NULL
);
)sql",
    // 2: the responses kept for previous_response_id, and their items by id.
    R"sql(
CREATE TABLE responses (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  items TEXT NOT NULL,                    -- JSON array: the conversation it ends
  response TEXT NOT NULL,                 -- the Response object
  bytes INTEGER NOT NULL
);
CREATE TABLE response_items (
  item_id TEXT NOT NULL,
  response_seq INTEGER NOT NULL REFERENCES responses (seq) ON DELETE CASCADE
);
CREATE INDEX response_items_by_id ON response_items (item_id);
)sql",
    // 3: media once (job_media.h): each data: URL of a job's body or a
    // batch's plan by its hash, and where it goes back.
    R"sql(
CREATE TABLE media (
  hash TEXT PRIMARY KEY,                  -- SHA-256 of the data: URL
  data TEXT NOT NULL,
  bytes INTEGER NOT NULL
);
CREATE TABLE media_refs (
  owner TEXT NOT NULL,                    -- a job's or a batch's id
  pointer TEXT NOT NULL,                  -- JSON pointer into its body or plan
  hash TEXT NOT NULL
);
CREATE INDEX media_refs_by_owner ON media_refs (owner);
CREATE INDEX media_refs_by_hash ON media_refs (hash);
)sql",
};
static_assert(std::size(kMigrations) == kSqliteSchemaVersion);

constexpr const char* kEnded = "('succeeded','failed','cancelled','expired')";

// Jobs kept, and the bytes of bodies, results, plans and media (each file once).
constexpr const char* kStoredJobsAndBytes =
    "SELECT (SELECT count(*) FROM jobs), (SELECT coalesce(sum(bytes), 0) FROM jobs) + "
    "(SELECT coalesce(sum(bytes), 0) FROM batches) + (SELECT coalesce(sum(bytes), 0) FROM media)";

// One connection, its statements prepared once. Not thread-safe: the
// store's mutex guards it.
class Db {
 public:
  Db(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw Error(cat("job store ", path, ": cannot open: ", why));
    }
  }
  ~Db() {
    for (auto& [sql, stmt] : stmts_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  [[noreturn]] void fail(const char* what) const { raise(cat("job store ", path_, ": ", what, ": ", sqlite3_errmsg(db_))); }
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string why = err ? err : "?";
      sqlite3_free(err);
      raise(cat("job store ", path_, ": ", why, " (in: ", std::string(sql).substr(0, 80), ")"));
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

 private:
  // The last call's failure: JobStoreFull when the disk is full (SQLite
  // says SQLITE_FULL for a short write; a write or a size change of the WAL
  // or its index that failed with ENOSPC can come as an I/O error).
  [[noreturn]] void raise(const std::string& message) const {
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    if (code == SQLITE_FULL || (code == SQLITE_IOERR && sqlite3_system_errno(db_) == ENOSPC))
      throw JobStoreFull(message);
    throw Error(message);
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  std::map<const char*, sqlite3_stmt*> stmts_;  // by the address of a literal
};

// One use of a prepared statement: binds, steps, reads columns, and resets
// it when it goes.
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
  Query& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Query& bind_json(int i, const json& j) { return j.is_null() ? bind_null(i) : bind(i, j.dump()); }
  // True while there is a row.
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
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, sqlite3_column_bytes(stmt_, col)) : std::string();
  }
  bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  json json_at(int col) const { return null(col) ? json() : json::parse(text(col)); }

 private:
  Db& db_;
  sqlite3_stmt* stmt_;
};

// BEGIN IMMEDIATE ... COMMIT, or ROLLBACK when left by an exception.
class Transaction {
 public:
  explicit Transaction(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) rollback();
  }
  void commit() {
    db_.exec("COMMIT");
    done_ = true;
  }

 private:
  void rollback() noexcept {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
  }
  Db& db_;
  bool done_ = false;
};

constexpr const char* kJobColumns =
    "id, created, model, body, batch, page, state, attempts, owner, lease_until_ms, cancel_requested, "
    "progress_tokens, progress_text, result, error, finished_ms";

JobRecord job_at(const Query& q) {
  JobRecord j;
  j.id = q.text(0);
  j.created = q.i64(1);
  j.model = q.text(2);
  j.body = q.text(3);
  j.batch = q.text(4);
  j.page = static_cast<int>(q.i64(5));
  j.state = job_state_named(q.text(6)).value_or(JobState::Failed);
  j.attempts = static_cast<int>(q.i64(7));
  j.owner = q.text(8);
  j.lease_until_ms = q.i64(9);
  j.cancel_requested = q.i64(10) != 0;
  j.progress_tokens = q.i64(11);
  j.progress_text = q.text(12);
  j.result = q.json_at(13);
  j.error = q.json_at(14);
  j.finished_ms = q.i64(15);
  return j;
}

std::string sql(std::initializer_list<std::string> parts) {
  std::string s;
  for (const std::string& p : parts) s += p;
  return s;
}

class SqliteResponseStore;

class SqliteJobStore final : public JobStore {
 public:
  SqliteJobStore(const std::string& path, const JobStoreOptions& options);

  std::string name() const override { return "sqlite"; }
  bool durable() const override { return true; }
  bool add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) override;
  std::optional<ClaimedJob> claim(const std::string& owner, int window) override;
  bool heartbeat(const std::string& id, const std::string& owner, int64_t tokens, const std::string& text) override;
  bool finish(const std::string& id, const std::string& owner, JobState state, const json& result,
              const json& error) override;
  void release(const std::string& id, const std::string& owner) override;
  std::optional<JobRecord> cancel(const std::string& id) override;
  std::optional<JobRecord> get(const std::string& id) override;
  std::optional<BatchRecord> batch(const std::string& id) override;
  JobCounts counts() override;
  ResponseStore& responses() override;

  // For the response store: the connection under the mutex.
  template <typename F>
  auto locked(F&& f) {
    std::lock_guard lock(mutex_);
    return f(db_);
  }

 private:
  void migrate();
  void purge(int64_t now_ms);  // under mutex_
  // Batches without jobs, and media no job or batch refers to, go.
  void drop_unowned();
  void store_media(const std::string& owner, const DetachedMedia& d);
  // `text` (owner's body or plan as stored) with its media put back.
  std::string attached(const std::string& owner, const std::string& text);
  std::optional<JobRecord> get_locked(const std::string& id, int64_t now_ms);
  std::optional<BatchRecord> batch_locked(const std::string& id);

  // Statements built once from the column list (their addresses key the cache).
  const std::string select_job_ =
      sql({"SELECT ", kJobColumns, " FROM jobs WHERE id = ?1 AND (finished_ms = 0 OR finished_ms > ?2)"});

  JobStoreOptions options_;
  std::mutex mutex_;
  Db db_;
  int64_t taken_over_ = 0;
  int64_t last_purge_ms_ = 0;
  std::unique_ptr<SqliteResponseStore> responses_;
};

class SqliteResponseStore final : public ResponseStore {
 public:
  explicit SqliteResponseStore(SqliteJobStore& store) : store_(store) {}

  void put(Entry entry) override {
    const std::string items = entry.items.dump(), response = entry.response.dump();
    const auto bytes = static_cast<int64_t>(items.size() + response.size());
    if (bytes > static_cast<int64_t>(kMaxBytes)) return;  // could never be held
    store_.locked([&](Db& db) {
      Transaction t(db);
      Query(db, "DELETE FROM responses WHERE id = ?1").bind(1, entry.id).run();
      Query(db, "INSERT INTO responses (id, items, response, bytes) VALUES (?1, ?2, ?3, ?4)")
          .bind(1, entry.id)
          .bind(2, items)
          .bind(3, response)
          .bind(4, bytes)
          .run();
      int64_t seq = 0;
      {
        Query q(db, "SELECT last_insert_rowid()");
        if (q.step()) seq = q.i64(0);
      }
      for (const ojson& item : entry.items)
        if (auto id = item.find("id"); id != item.end() && id->is_string())
          Query(db, "INSERT INTO response_items (item_id, response_seq) VALUES (?1, ?2)")
              .bind(1, id->get<std::string>())
              .bind(2, seq)
              .run();
      // The oldest go first, past either bound.
      for (;;) {
        Query q(db, "SELECT count(*), coalesce(sum(bytes), 0), min(seq) FROM responses");
        q.step();
        if (q.i64(0) <= static_cast<int64_t>(kMaxEntries) && q.i64(1) <= static_cast<int64_t>(kMaxBytes)) break;
        const int64_t oldest = q.i64(2);
        Query(db, "DELETE FROM response_items WHERE response_seq = ?1").bind(1, oldest).run();
        Query(db, "DELETE FROM responses WHERE seq = ?1").bind(1, oldest).run();
      }
      t.commit();
      return 0;
    });
  }
  std::shared_ptr<const Entry> get(const std::string& id) const override {
    return store_.locked([&](Db& db) -> std::shared_ptr<const Entry> {
      Query q(db, "SELECT items, response FROM responses WHERE id = ?1");
      q.bind(1, id);
      if (!q.step()) return nullptr;
      auto e = std::make_shared<Entry>();
      e->id = id;
      e->items = ojson::parse(q.text(0));
      e->response = ojson::parse(q.text(1));
      return e;
    });
  }
  std::optional<ojson> find_item(const std::string& item_id) const override {
    return store_.locked([&](Db& db) -> std::optional<ojson> {
      Query q(db,
              "SELECT r.items FROM response_items i JOIN responses r ON r.seq = i.response_seq "
              "WHERE i.item_id = ?1 ORDER BY r.seq DESC LIMIT 1");
      q.bind(1, item_id);
      if (!q.step()) return std::nullopt;
      for (const ojson& item : ojson::parse(q.text(0)))
        if (auto id = item.find("id"); id != item.end() && id->is_string() && *id == item_id) return item;
      return std::nullopt;
    });
  }
  bool erase(const std::string& id) override {
    return store_.locked([&](Db& db) {
      Transaction t(db);
      Query(db, "DELETE FROM response_items WHERE response_seq IN (SELECT seq FROM responses WHERE id = ?1)")
          .bind(1, id)
          .run();
      Query(db, "DELETE FROM responses WHERE id = ?1").bind(1, id).run();
      const bool erased = db.changes() > 0;
      t.commit();
      return erased;
    });
  }
  size_t size() const override {
    return store_.locked([&](Db& db) {
      Query q(db, "SELECT count(*) FROM responses");
      q.step();
      return static_cast<size_t>(q.i64(0));
    });
  }

 private:
  SqliteJobStore& store_;
};

SqliteJobStore::SqliteJobStore(const std::string& path, const JobStoreOptions& options) : options_(options), db_(path) {
  db_.exec("PRAGMA busy_timeout = 5000");  // another process sharing the file holds the write lock
  db_.exec("PRAGMA journal_mode = WAL");
  // WAL + NORMAL: a commit survives the process dying (kill -9), not a power
  // cut (docs/deploy.md); FULL would fsync every state change.
  db_.exec("PRAGMA synchronous = NORMAL");
  migrate();
  responses_ = std::make_unique<SqliteResponseStore>(*this);
}

ResponseStore& SqliteJobStore::responses() { return *responses_; }

void SqliteJobStore::migrate() {
  Transaction t(db_);
  int version = 0;
  {
    Query q(db_, "PRAGMA user_version");
    if (q.step()) version = static_cast<int>(q.i64(0));
  }
  if (version > kSqliteSchemaVersion)
    throw Error(cat("job store: schema version ", version, " is newer than this qvl's (", kSqliteSchemaVersion,
                    "): run the newer qvl, or point --jobs-db elsewhere"));
  for (int v = version; v < kSqliteSchemaVersion; ++v) db_.exec(kMigrations[v]);
  if (version != kSqliteSchemaVersion) db_.exec(cat("PRAGMA user_version = ", kSqliteSchemaVersion).c_str());
  t.commit();
}

void SqliteJobStore::purge(int64_t now_ms) {
  const auto ttl_ms = static_cast<int64_t>(options_.ttl_s * 1000);
  static const std::string del = sql({"DELETE FROM jobs WHERE state IN ", kEnded, " AND finished_ms <= ?1"});
  Query(db_, del.c_str()).bind(1, now_ms - ttl_ms).run();
  if (db_.changes() > 0) drop_unowned();
  last_purge_ms_ = now_ms;
}

void SqliteJobStore::drop_unowned() {
  Query(db_, "DELETE FROM batches WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.batch = batches.id)").run();
  Query(db_,
        "DELETE FROM media_refs WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = media_refs.owner) "
        "AND NOT EXISTS (SELECT 1 FROM batches WHERE batches.id = media_refs.owner)")
      .run();
  Query(db_, "DELETE FROM media WHERE NOT EXISTS (SELECT 1 FROM media_refs WHERE media_refs.hash = media.hash)").run();
}

void SqliteJobStore::store_media(const std::string& owner, const DetachedMedia& d) {
  for (const auto& [hash, data] : d.blobs)
    Query(db_, "INSERT OR IGNORE INTO media (hash, data, bytes) VALUES (?1, ?2, ?3)")
        .bind(1, hash)
        .bind(2, data)
        .bind(3, static_cast<int64_t>(data.size()))
        .run();
  for (const MediaRef& r : d.refs)
    Query(db_, "INSERT INTO media_refs (owner, pointer, hash) VALUES (?1, ?2, ?3)")
        .bind(1, owner)
        .bind(2, r.pointer)
        .bind(3, r.hash)
        .run();
}

std::string SqliteJobStore::attached(const std::string& owner, const std::string& text) {
  std::vector<MediaRef> refs;
  std::map<std::string, std::string> blobs;
  Query q(db_,
          "SELECT r.pointer, r.hash, m.data FROM media_refs r JOIN media m ON m.hash = r.hash "
          "WHERE r.owner = ?1 ORDER BY r.rowid");
  q.bind(1, owner);
  while (q.step()) {
    refs.push_back({q.text(0), q.text(1)});
    blobs.try_emplace(q.text(1), q.text(2));
  }
  return attach_media(text, refs, blobs);
}

bool SqliteJobStore::add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) {
  const DetachedAdd detached = detach_add(jobs, batch);
  const int64_t bytes = detached.bytes;
  if (static_cast<int64_t>(jobs.size()) > options_.max_jobs || bytes > options_.max_bytes) return false;
  std::lock_guard lock(mutex_);
  Transaction t(db_);
  purge(unix_ms());
  static const std::string oldest_ended =
      sql({"SELECT seq FROM jobs WHERE state IN ", kEnded, " ORDER BY finished_ms LIMIT 1"});
  for (;;) {
    Query q(db_, kStoredJobsAndBytes);
    q.step();
    if (q.i64(0) + static_cast<int64_t>(jobs.size()) <= options_.max_jobs && q.i64(1) + bytes <= options_.max_bytes)
      break;
    Query o(db_, oldest_ended.c_str());
    if (!o.step()) return false;  // full of unfinished jobs (the transaction rolls back)
    Query(db_, "DELETE FROM jobs WHERE seq = ?1").bind(1, o.i64(0)).run();
    drop_unowned();
  }
  if (batch) {
    Query(db_, "INSERT INTO batches (id, created, model, plan, job_ids, bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")
        .bind(1, batch->id)
        .bind(2, batch->created)
        .bind(3, batch->model)
        .bind(4, detached.plan->text)
        .bind(5, json(batch->job_ids).dump())
        .bind(6, static_cast<int64_t>(detached.plan->text.size()))
        .run();
    store_media(batch->id, *detached.plan);
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobRecord& j = jobs[i];
    const std::string& body = detached.bodies[i].text;
    store_media(j.id, detached.bodies[i]);
    Query q(db_,
            "INSERT INTO jobs (id, created, model, body, batch, page, state, bytes) "
            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7)");
    q.bind(1, j.id).bind(2, j.created).bind(3, j.model).bind(4, body).bind(6, j.page);
    if (j.batch.empty()) q.bind_null(5);
    else q.bind(5, j.batch);
    q.bind(7, static_cast<int64_t>(body.size())).run();
  }
  t.commit();
  return true;
}

std::optional<ClaimedJob> SqliteJobStore::claim(const std::string& owner, int window) {
  std::lock_guard lock(mutex_);
  const int64_t now = unix_ms();
  Transaction t(db_);
  if (now - last_purge_ms_ >= 1000) purge(now);
  Query(db_,
        "UPDATE jobs SET state = 'failed', error = ?1, finished_ms = ?2, owner = NULL "
        "WHERE state = 'running' AND lease_until_ms < ?2 AND attempts >= ?3")
      .bind(1, attempts_exhausted_error(options_.max_attempts).dump())
      .bind(2, now)
      .bind(3, options_.max_attempts)
      .run();
  std::string id;
  bool taken_over = false;
  {
    Query q(db_,
            "SELECT id, state FROM jobs j WHERE "
            "(state = 'queued' AND (batch IS NULL OR "
            "  (SELECT count(*) FROM jobs r WHERE r.batch = j.batch AND r.state = 'running') < ?1)) "
            "OR (state = 'running' AND lease_until_ms < ?2) ORDER BY seq LIMIT 1");
    q.bind(1, window).bind(2, now);
    if (!q.step()) {
      t.commit();
      return std::nullopt;
    }
    id = q.text(0);
    taken_over = q.text(1) == "running";
  }
  Query(db_,
        "UPDATE jobs SET state = 'running', owner = ?2, lease_until_ms = ?3, attempts = attempts + 1, "
        "progress_tokens = 0, progress_text = '' WHERE id = ?1")
      .bind(1, id)
      .bind(2, owner)
      .bind(3, now + static_cast<int64_t>(options_.lease_s * 1000))
      .run();
  ClaimedJob c{*get_locked(id, now), std::nullopt, taken_over};
  c.job.body = attached(id, c.job.body);
  if (!c.job.batch.empty() && (c.batch = batch_locked(c.job.batch)))
    c.batch->plan = attached(c.batch->id, c.batch->plan);
  t.commit();
  if (taken_over) ++taken_over_;
  return c;
}

bool SqliteJobStore::heartbeat(const std::string& id, const std::string& owner, int64_t tokens,
                               const std::string& text) {
  std::lock_guard lock(mutex_);
  Query(db_,
        "UPDATE jobs SET lease_until_ms = ?3, progress_tokens = ?4, progress_text = ?5 "
        "WHERE id = ?1 AND owner = ?2 AND state = 'running' AND cancel_requested = 0")
      .bind(1, id)
      .bind(2, owner)
      .bind(3, unix_ms() + static_cast<int64_t>(options_.lease_s * 1000))
      .bind(4, tokens)
      .bind(5, text)
      .run();
  return db_.changes() > 0;
}

bool SqliteJobStore::finish(const std::string& id, const std::string& owner, JobState state, const json& result,
                            const json& error) {
  const std::string result_text = result.is_null() ? std::string() : result.dump();
  std::lock_guard lock(mutex_);
  Query q(db_,
          "UPDATE jobs SET state = ?3, result = ?4, error = ?5, owner = NULL, progress_text = '', "
          "finished_ms = ?6, bytes = bytes + ?7 WHERE id = ?1 AND owner = ?2 AND state = 'running'");
  q.bind(1, id).bind(2, owner).bind(3, std::string(job_state_name(state)));
  if (result.is_null()) q.bind_null(4);
  else q.bind(4, result_text);
  q.bind_json(5, error).bind(6, unix_ms()).bind(7, static_cast<int64_t>(result_text.size())).run();
  return db_.changes() > 0;
}

void SqliteJobStore::release(const std::string& id, const std::string& owner) {
  std::lock_guard lock(mutex_);
  Query(db_,
        "UPDATE jobs SET state = 'queued', owner = NULL, attempts = attempts - 1 "
        "WHERE id = ?1 AND owner = ?2 AND state = 'running'")
      .bind(1, id)
      .bind(2, owner)
      .run();
}

std::optional<JobRecord> SqliteJobStore::cancel(const std::string& id) {
  std::lock_guard lock(mutex_);
  const int64_t now = unix_ms();
  Transaction t(db_);
  Query(db_, "UPDATE jobs SET state = 'cancelled', finished_ms = ?2 WHERE id = ?1 AND state = 'queued'")
      .bind(1, id)
      .bind(2, now)
      .run();
  Query(db_, "UPDATE jobs SET cancel_requested = 1 WHERE id = ?1 AND state = 'running'").bind(1, id).run();
  std::optional<JobRecord> j = get_locked(id, now);
  t.commit();
  return j;
}

std::optional<JobRecord> SqliteJobStore::get_locked(const std::string& id, int64_t now_ms) {
  Query q(db_, select_job_.c_str());
  q.bind(1, id).bind(2, now_ms - static_cast<int64_t>(options_.ttl_s * 1000));
  if (!q.step()) return std::nullopt;
  return job_at(q);
}

std::optional<JobRecord> SqliteJobStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  return get_locked(id, unix_ms());
}

std::optional<BatchRecord> SqliteJobStore::batch_locked(const std::string& id) {
  Query q(db_,
          "SELECT id, created, model, plan, job_ids FROM batches b WHERE id = ?1 AND "
          "EXISTS (SELECT 1 FROM jobs WHERE jobs.batch = b.id AND (finished_ms = 0 OR finished_ms > ?2))");
  q.bind(1, id).bind(2, unix_ms() - static_cast<int64_t>(options_.ttl_s * 1000));
  if (!q.step()) return std::nullopt;
  return BatchRecord{q.text(0), q.i64(1), q.text(2), q.text(3), json::parse(q.text(4)).get<std::vector<std::string>>()};
}

std::optional<BatchRecord> SqliteJobStore::batch(const std::string& id) {
  std::lock_guard lock(mutex_);
  return batch_locked(id);
}

JobCounts SqliteJobStore::counts() {
  std::lock_guard lock(mutex_);
  JobCounts c;
  for (JobState s : kJobStates) c.jobs[s] = 0;
  {
    Query q(db_, "SELECT state, count(*) FROM jobs WHERE finished_ms = 0 OR finished_ms > ?1 GROUP BY state");
    q.bind(1, unix_ms() - static_cast<int64_t>(options_.ttl_s * 1000));
    while (q.step())
      if (auto s = job_state_named(q.text(0))) c.jobs[*s] = q.i64(1);
  }
  Query q(db_, kStoredJobsAndBytes);
  q.step();
  c.bytes = q.i64(1);
  c.leases_taken_over = taken_over_;
  return c;
}

}  // namespace

std::unique_ptr<JobStore> open_sqlite_job_store(const std::string& path, const JobStoreOptions& options) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(cat("job store ", path, ": cannot create its folder ", dir.string(), ": ", ec.message()));
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);  // jobs hold users' images
  }
  return std::make_unique<SqliteJobStore>(path, options);
}

}  // namespace qvl
