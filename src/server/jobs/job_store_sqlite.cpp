#include "server/jobs/job_store_sqlite.h"

#include <sqlite3.h>

#include <cerrno>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "server/jobs/sql_job_store.h"
#include "util/error.h"

namespace qvl {

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

// SQLite's SQL (sql_database.h). It runs in this process, so its clock is
// this process's, read through qvl_now_ms() (a function of the connection's).
const SqlDialect kSqlite{
    .table_prefix = "",
    .param_mark = '?',
    .now_ms = "qvl_now_ms()",
    .true_value = "1",
    .skip_locked = "",  // BEGIN IMMEDIATE: one writer at a time claims
    .ref_seq = "rowid",
    // The write lock at once: a transaction that reads and then writes
    // never meets another process's writer half-way (SQLITE_BUSY).
    .begin = "BEGIN IMMEDIATE",
    .relaxed_commit = "",  // synchronous = NORMAL: no commit waits for the disk
    .serialize = "",       // BEGIN IMMEDIATE lets one writer in at a time
    .notify = "",          // nothing to listen with: runners poll
};

// One connection, its statements prepared once.
class SqliteConnection final : public SqlConnection {
 public:
  explicit SqliteConnection(const std::string& path) : SqlConnection(kSqlite), path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw Error(cat("job store ", path, ": cannot open: ", why));
    }
    sqlite3_create_function_v2(
        db_, "qvl_now_ms", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, nullptr,
        [](sqlite3_context* ctx, int, sqlite3_value**) { sqlite3_result_int64(ctx, unix_ms()); }, nullptr, nullptr,
        nullptr);
  }
  ~SqliteConnection() override {
    for (auto& [sql, stmt] : stmts_) sqlite3_finalize(stmt);
    sqlite3_close(db_);
  }

  SqlRows exec_native(const std::string& sql, std::initializer_list<SqlParam> params) override {
    sqlite3_stmt* stmt = prepared(sql);
    struct Reset {  // the statement is ready for its next use, however this one ends
      sqlite3_stmt* stmt;
      ~Reset() {
        sqlite3_reset(stmt);
        sqlite3_clear_bindings(stmt);
      }
    } reset{stmt};
    int i = 1;
    for (const SqlParam& p : params) {  // SQLITE_STATIC: `params` outlive the statement's use
      if (const auto* v = std::get_if<int64_t>(&p)) sqlite3_bind_int64(stmt, i, *v);
      else if (const auto* t = std::get_if<std::string>(&p))
        sqlite3_bind_text64(stmt, i, t->data(), t->size(), SQLITE_STATIC, SQLITE_UTF8);
      else sqlite3_bind_null(stmt, i);
      ++i;
    }
    const int columns = sqlite3_column_count(stmt);
    SqlRows rows(columns);
    for (;;) {
      const int rc = sqlite3_step(stmt);
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) raise(sqlite3_errmsg(db_), sql);
      for (int col = 0; col < columns; ++col) {
        if (sqlite3_column_type(stmt, col) == SQLITE_NULL) {
          rows.add(std::nullopt);
          continue;
        }
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, col));
        rows.add(p ? std::string(p, sqlite3_column_bytes(stmt, col)) : std::string());
      }
    }
    rows.set_affected(sqlite3_stmt_readonly(stmt) ? 0 : sqlite3_changes64(db_));
    return rows;
  }

  // Statements without parameters, as they are (pragmas, migrations).
  void script(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string why = err ? err : "?";
      sqlite3_free(err);
      raise(why, sql);
    }
  }

 private:
  sqlite3_stmt* prepared(const std::string& sql) {
    auto [it, fresh] = stmts_.try_emplace(sql, nullptr);
    if (fresh &&
        sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &it->second, nullptr) != SQLITE_OK) {
      stmts_.erase(it);
      raise(sqlite3_errmsg(db_), sql);
    }
    return it->second;
  }
  // The last call's failure: JobStoreFull when the disk is full (SQLite
  // says SQLITE_FULL for a short write; a write or a size change of the WAL
  // or its index that failed with ENOSPC can come as an I/O error).
  [[noreturn]] void raise(const std::string& why, const std::string& sql) const {
    const std::string message = cat("job store ", path_, ": ", why, " (in: ", sql.substr(0, 80), ")");
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    if (code == SQLITE_FULL || (code == SQLITE_IOERR && sqlite3_system_errno(db_) == ENOSPC))
      throw JobStoreFull(message);
    throw Error(message);
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> stmts_;  // by their text
};

// The file, opened and migrated; one caller at a time.
class SqliteDatabase final : public SqlDatabase {
 public:
  explicit SqliteDatabase(const std::string& path) : conn_(path) {
    conn_.script("PRAGMA busy_timeout = 5000");  // another process sharing the file holds the write lock
    conn_.script("PRAGMA journal_mode = WAL");
    // WAL + NORMAL: a commit survives the process dying (kill -9), not a power
    // cut (docs/deploy.md); FULL would fsync every state change.
    conn_.script("PRAGMA synchronous = NORMAL");
    migrate();
  }

  std::string name() const override { return "sqlite"; }
  void run(const std::function<void(SqlConnection&)>& work) override {
    std::lock_guard lock(mutex_);
    work(conn_);
  }

 private:
  void migrate() {
    SqlTransaction t(conn_);
    const int version = static_cast<int>(conn_.exec_native("PRAGMA user_version", {}).i64(0, 0));
    if (version > kSqliteSchemaVersion)
      throw Error(cat("job store: schema version ", version, " is newer than this qvl's (", kSqliteSchemaVersion,
                      "): run the newer qvl, or point --jobs-db elsewhere"));
    for (int v = version; v < kSqliteSchemaVersion; ++v) conn_.script(kMigrations[v]);
    if (version != kSqliteSchemaVersion) conn_.script(cat("PRAGMA user_version = ", kSqliteSchemaVersion));
    t.commit();
  }

  std::mutex mutex_;
  SqliteConnection conn_;
};

}  // namespace

std::unique_ptr<JobStore> open_sqlite_job_store(const std::string& path, const JobStoreOptions& options) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw Error(cat("job store ", path, ": cannot create its folder ", dir.string(), ": ", ec.message()));
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);  // jobs hold users' images
  }
  return std::make_unique<SqlJobStore>(std::make_shared<SqliteDatabase>(path), options);
}

}  // namespace qvl
