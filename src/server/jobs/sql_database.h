// What the SQL job store (sql_job_store.h) and the stored responses
// (sql_response_store.h) need from a database, so that they are written once
// for SQLite (job_store_sqlite.h) and PostgreSQL (job_store_postgres.h).
//
// Statements are written once, in a neutral SQL that SqlDialect turns into
// each database's own: parameters ?1, ?2, … (PostgreSQL's $1, $2, …), table
// names in braces ({jobs}: "jobs" or "qvl_jobs"), and a few words in braces
// that the two say differently:
//   {now_ms}       the clock in Unix ms (the process's for SQLite, which runs
//                  in it; the database's for PostgreSQL, which replicas share)
//   {true}         a true boolean column value (1 | true)
//   {skip_locked}  after a claim's SELECT: PostgreSQL's FOR UPDATE SKIP LOCKED
//                  (replicas never take one row twice nor wait on each
//                  other); nothing for SQLite, whose BEGIN IMMEDIATE already
//                  lets one writer in at a time
//   {ref_seq}      media_refs' insertion order (rowid | seq)
// The schema is not neutral: each backend creates and migrates its own.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace qvl {

// A statement's parameter: NULL, an integer or a text.
using SqlParam = std::variant<std::monostate, int64_t, std::string>;

// A JSON value as a parameter: its text, or NULL for null.
SqlParam json_param(const nlohmann::json& j);

// A statement's rows, read whole (the statement is done with when it returns).
class SqlRows {
 public:
  SqlRows() = default;
  explicit SqlRows(int columns) : columns_(columns) {}

  void add(std::optional<std::string> cell) { cells_.push_back(std::move(cell)); }
  void set_affected(int64_t n) { affected_ = n; }

  int size() const { return columns_ ? static_cast<int>(cells_.size()) / columns_ : 0; }
  bool empty() const { return size() == 0; }
  // Rows an INSERT, UPDATE or DELETE changed.
  int64_t affected() const { return affected_; }
  bool null(int row, int col) const { return !cell(row, col); }
  std::string text(int row, int col) const { return cell(row, col).value_or(""); }  // NULL: ""
  int64_t i64(int row, int col) const;                                              // NULL: 0
  bool flag(int row, int col) const;               // a boolean column, as either database writes it
  nlohmann::json json_at(int row, int col) const;  // NULL: null

 private:
  const std::optional<std::string>& cell(int row, int col) const { return cells_.at(row * columns_ + col); }

  int columns_ = 0;
  std::vector<std::optional<std::string>> cells_;  // row after row
  int64_t affected_ = 0;
};

// The words of one database's SQL (the neutral SQL above).
struct SqlDialect {
  std::string table_prefix;  // before every {table}
  char param_mark = '?';     // ?1 | $1
  std::string now_ms;        // {now_ms}
  std::string true_value;    // {true}
  std::string skip_locked;   // {skip_locked}
  std::string ref_seq;       // {ref_seq}
  // The statements below are in the dialect's own SQL, not the neutral one.
  std::string begin;  // starts a transaction
  // Run after `begin` in a transaction whose loss in a crash of the database
  // costs nothing (a claim, a heartbeat), so its commit waits for no flush;
  // empty where commits never wait.
  std::string relaxed_commit;
  // One transaction at a time across processes, until it ends (its one
  // parameter: a SqlLock); empty where one writer at a time is the
  // database's own rule.
  std::string serialize;
  // Tells every process watching the store (SqlDatabase::watch) that jobs
  // changed (its one parameter: what), on commit; empty where none can watch.
  std::string notify;

  // The neutral statement in this dialect; throws Error on an unknown {word}.
  std::string translate(std::string_view neutral) const;
};

// Keys of SqlDialect::serialize: what a transaction holds alone.
enum class SqlLock : int64_t { Migrate = 7415166061, AddJobs = 7415166062, PutResponse = 7415166063 };

// One connection to the database. Not thread-safe: SqlDatabase::run hands it
// to one caller at a time.
class SqlConnection {
 public:
  explicit SqlConnection(const SqlDialect& dialect) : dialect_(dialect) {}
  virtual ~SqlConnection() = default;
  SqlConnection(const SqlConnection&) = delete;
  SqlConnection& operator=(const SqlConnection&) = delete;

  const SqlDialect& dialect() const { return dialect_; }
  // Runs one neutral statement. Throws Error naming the store and the
  // statement when the database refuses it; JobStoreFull when it could not
  // be written for want of disk.
  SqlRows exec(std::string_view neutral, std::initializer_list<SqlParam> params = {}) {
    return exec_native(dialect_.translate(neutral), params);
  }
  // Runs one statement in the dialect's own SQL.
  virtual SqlRows exec_native(const std::string& sql, std::initializer_list<SqlParam> params) = 0;

  // Holds `lock` across processes until the transaction ends (SqlDialect::serialize).
  void serialize(SqlLock lock);
  // SqlDialect::notify: `what` changed, for the watchers.
  void notify(const char* what);

 private:
  const SqlDialect& dialect_;
};

// BEGIN … COMMIT, or ROLLBACK when left by an exception.
class SqlTransaction {
 public:
  enum class Commit { Durable, Relaxed };  // SqlDialect::relaxed_commit
  explicit SqlTransaction(SqlConnection& c, Commit commit = Commit::Durable);
  ~SqlTransaction();
  SqlTransaction(const SqlTransaction&) = delete;
  SqlTransaction& operator=(const SqlTransaction&) = delete;
  void commit();

 private:
  void rollback() noexcept;

  SqlConnection& c_;
  bool done_ = false;
};

// A database the job store keeps its state in: its connection, and what
// happens when the database goes away.
class SqlDatabase {
 public:
  virtual ~SqlDatabase() = default;
  virtual std::string name() const = 0;  // "sqlite" | "postgresql" (metrics, logs)

  // Runs `work` on the connection, one caller at a time. A database that can
  // drop the connection (a server restarting) may run `work` once more on a
  // fresh one, so `work` is one transaction at most, and tells a commit whose
  // reply was lost when it runs again. Throws StoreUnavailable at once while
  // the database cannot be reached.
  virtual void run(const std::function<void(SqlConnection&)>& work) = 0;

  // SqlDialect::notify's watcher, as JobStore::watch.
  virtual bool watch(std::function<void()> changed) {
    (void)changed;
    return false;
  }
  // As JobStore::unavailable.
  virtual std::string unavailable() const { return {}; }

  // run() for work that returns a value.
  template <typename F>
  auto with(F&& f) {
    using R = std::invoke_result_t<F&, SqlConnection&>;
    if constexpr (std::is_void_v<R>) {
      run(f);
    } else {
      std::optional<R> out;
      run([&](SqlConnection& c) { out.emplace(f(c)); });
      return std::move(*out);
    }
  }
};

}  // namespace qvl
