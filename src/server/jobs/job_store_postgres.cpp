#include "server/jobs/job_store_postgres.h"

#include <libpq-fe.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>

#include "server/jobs/sql_job_store.h"
#include "util/error.h"

namespace qvl {

namespace {

// Each step takes the schema from version i to i + 1 (index i).
const char* const kMigrations[] = {
    // 1: jobs, per-page batches, and the responses kept for previous_response_id.
    R"sql(
CREATE TABLE qvl_jobs (
  seq bigserial PRIMARY KEY,               -- arrival order
  id text NOT NULL UNIQUE,
  created bigint NOT NULL,                 -- Unix seconds
  model text NOT NULL,
  batch text,                              -- the batch's id, or NULL
  page integer NOT NULL DEFAULT 0,
  state text NOT NULL,                     -- queued running succeeded failed cancelled expired
  attempts integer NOT NULL DEFAULT 0,
  owner text,                              -- the runner holding the lease
  lease_until_ms bigint NOT NULL DEFAULT 0,
  cancel_requested boolean NOT NULL DEFAULT false,
  progress_tokens bigint NOT NULL DEFAULT 0,
  finished_ms bigint NOT NULL DEFAULT 0,
  bytes bigint NOT NULL DEFAULT 0,         -- body + result, against --max-job-bytes
  error text,                              -- JSON
  progress_text text NOT NULL DEFAULT '',
  result text,                             -- JSON
  body text NOT NULL                       -- the chat body (JSON); '' for a batch's page
);
CREATE INDEX qvl_jobs_by_state ON qvl_jobs (state, seq);
CREATE INDEX qvl_jobs_by_batch ON qvl_jobs (batch);
CREATE TABLE qvl_batches (
  id text PRIMARY KEY,
  created bigint NOT NULL,
  model text NOT NULL,
  plan text NOT NULL,                      -- page_batch_plan_text()
  job_ids text NOT NULL,                   -- JSON array, in page order
  bytes bigint NOT NULL
);
CREATE TABLE qvl_responses (
  seq bigserial PRIMARY KEY,
  id text NOT NULL UNIQUE,
  items text NOT NULL,                     -- JSON array: the conversation it ends
  response text NOT NULL,                  -- the Response object
  bytes bigint NOT NULL
);
CREATE TABLE qvl_response_items (
  item_id text NOT NULL,
  response_seq bigint NOT NULL REFERENCES qvl_responses (seq) ON DELETE CASCADE
);
CREATE INDEX qvl_response_items_by_id ON qvl_response_items (item_id);
-- Media once (job_media.h): each data: URL of a job's body or a batch's plan
-- by its hash, and where it goes back.
CREATE TABLE qvl_media (
  hash text PRIMARY KEY,                   -- SHA-256 of the data: URL
  data text NOT NULL,
  bytes bigint NOT NULL
);
CREATE TABLE qvl_media_refs (
  seq bigserial PRIMARY KEY,
  owner text NOT NULL,                     -- a job's or a batch's id
  pointer text NOT NULL,                   -- JSON pointer into its body or plan
  hash text NOT NULL
);
CREATE INDEX qvl_media_refs_by_owner ON qvl_media_refs (owner);
CREATE INDEX qvl_media_refs_by_hash ON qvl_media_refs (hash);
)sql",
};
static_assert(std::size(kMigrations) == kPostgresSchemaVersion);

constexpr const char* kChannel = "qvl_jobs";

// PostgreSQL's SQL (sql_database.h).
const SqlDialect kPostgres{
    .table_prefix = "qvl_",
    .param_mark = '$',
    // The database's clock in Unix ms: every replica reads the same one.
    .now_ms = "(extract(epoch from clock_timestamp()) * 1000)::bigint",
    .true_value = "true",
    // A row another replica is claiming right now is not waited for, nor taken twice.
    .skip_locked = " FOR UPDATE SKIP LOCKED",
    .ref_seq = "seq",
    .begin = "BEGIN",
    .relaxed_commit = "SET LOCAL synchronous_commit = off",
    .serialize = "SELECT pg_advisory_xact_lock($1)",
    .notify = std::string("SELECT pg_notify('") + kChannel + "', $1)",
};

// One result; PQclear when it goes.
class Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  ~Result() { PQclear(r_); }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;

  const PGresult* raw() const { return r_; }
  ExecStatusType status() const { return PQresultStatus(r_); }
  // Its rows, copied out.
  SqlRows rows() const {
    SqlRows rows(PQnfields(r_));
    for (int row = 0; row < PQntuples(r_); ++row)
      for (int col = 0; col < PQnfields(r_); ++col)
        if (PQgetisnull(r_, row, col)) rows.add(std::nullopt);
        else rows.add(std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col))));
    const char* n = PQcmdTuples(r_);
    rows.set_affected(n && *n ? std::stoll(n) : 0);
    return rows;
  }

 private:
  PGresult* r_;
};

// Lost the server (as opposed to a statement it refused): worth one retry
// on a fresh connection, then the store is unavailable (StoreUnavailable).
struct ConnectionLost : Error {
  using Error::Error;
};

// The server refused the statement because it is going away or not there
// yet (admin_shutdown, crash_shutdown, cannot_connect_now, class 08
// connection_exception): the connection is lost even if libpq still calls
// it open.
bool connection_gone(const PGresult* r) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  if (!state) return false;
  const std::string s = state;
  return s.rfind("08", 0) == 0 || s == "57P01" || s == "57P02" || s == "57P03";
}

// The first line of a libpq message (the rest is a hint such as "Is the
// server running on that host…"), without its newline.
std::string first_line(const char* message) {
  std::string s = message ? message : "";
  s = s.substr(0, s.find('\n'));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// One connection.
class PostgresConnection final : public SqlConnection {
 public:
  PostgresConnection(const std::string& url, std::string shown)
      : SqlConnection(kPostgres), url_(url), shown_(std::move(shown)) {
    connect();
  }
  ~PostgresConnection() override { PQfinish(conn_); }

  PGconn* raw() { return conn_; }

  // Without parameters, PQexec: it takes several statements at once (the
  // migrations). With them, a statement prepared once per connection: the
  // server plans it once, not on every call.
  SqlRows exec_native(const std::string& sql, std::initializer_list<SqlParam> params) override {
    std::vector<std::string> numbers;  // the integers' text
    numbers.reserve(params.size());
    std::vector<const char*> values;
    for (const SqlParam& p : params) {
      if (const auto* v = std::get_if<int64_t>(&p)) values.push_back(numbers.emplace_back(std::to_string(*v)).c_str());
      else if (const auto* t = std::get_if<std::string>(&p)) values.push_back(t->c_str());
      else values.push_back(nullptr);
    }
    const Result r(values.empty() ? PQexec(conn_, sql.c_str()) : exec_prepared(sql, values));
    const ExecStatusType s = r.status();
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) return r.rows();
    const std::string why = first_line(PQerrorMessage(conn_));
    if (PQstatus(conn_) != CONNECTION_OK || connection_gone(r.raw()))
      throw ConnectionLost(cat("job store ", shown_, ": connection lost: ", why));
    throw Error(cat("job store ", shown_, ": ", why, " (in: ", sql.substr(0, 80), ")"));
  }

 private:
  // The statement's result, or the failed PQprepare's (exec reports its error).
  PGresult* exec_prepared(const std::string& sql, const std::vector<const char*>& values) {
    const int n = static_cast<int>(values.size());
    auto it = prepared_.find(sql);
    if (it == prepared_.end()) {
      const std::string name = "qvl_" + std::to_string(prepared_.size());
      PGresult* p = PQprepare(conn_, name.c_str(), sql.c_str(), n, nullptr);
      if (PQresultStatus(p) != PGRES_COMMAND_OK) return p;
      PQclear(p);
      it = prepared_.emplace(sql, name).first;
    }
    return PQexecPrepared(conn_, it->second.c_str(), n, values.data(), nullptr, nullptr, 0);
  }
  void connect() {
    // Bounds on a server that does not answer (a network cut, a host gone):
    // a connection attempt gives up after 5 s, and an established
    // connection whose peer stopped acknowledging is dropped within ~25 s
    // (keepalives) or 15 s of unacknowledged data (tcp_user_timeout)
    // instead of hanging every call behind the store's mutex. Settings in
    // the URL win: the URL is expanded after these.
    const char* keys[] = {"connect_timeout", "keepalives",     "keepalives_idle", "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout", "dbname",        nullptr};
    const char* values[] = {"5", "1", "10", "5", "3", "15000", url_.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = conn_ ? first_line(PQerrorMessage(conn_)) : "out of memory";
      PQfinish(conn_);
      conn_ = nullptr;
      throw ConnectionLost(cat("job store ", shown_, ": cannot connect: ", why));
    }
    // The server's notices (e.g. "relation already exists, skipping") are not the user's business.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  }

  std::string url_, shown_;
  PGconn* conn_ = nullptr;
  std::map<std::string, std::string> prepared_;  // statement text -> its name on this connection
};

// How long to wait before the next attempt to reach a database that is
// away: 100 ms, doubling to 2 s (a restart or a failover is seen within 2 s
// of its end, and an outage costs a connection attempt every 2 s).
class Backoff {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kFirst{100}, kMost{2000};

  void failed() {
    wait_ = std::min(wait_ == Clock::duration::zero() ? Clock::duration(kFirst) : wait_ * 2,
                     Clock::duration(kMost));
    next_ = Clock::now() + wait_;
  }
  void succeeded() { wait_ = Clock::duration::zero(); }
  bool waiting() const { return Clock::now() < next_; }
  std::chrono::milliseconds left() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::max(next_ - Clock::now(), Clock::duration::zero()));
  }

 private:
  Clock::duration wait_ = Clock::duration::zero();
  Clock::time_point next_{};
};

// LISTEN on a connection of its own, on a thread of its own: calls
// `changed` for every NOTIFY, and once after a reconnect (a notification
// may have been missed meanwhile); calls `lost` with the reason when the
// connection goes or cannot be made, then connects and LISTENs again with
// backoff.
class Listener {
 public:
  Listener(std::string url, std::string shown, std::function<void()> changed,
           std::function<void(const std::string&)> lost)
      : url_(std::move(url)),
        shown_(std::move(shown)),
        changed_(std::move(changed)),
        lost_(std::move(lost)),
        stop_fd_(eventfd(0, EFD_CLOEXEC)) {
    if (stop_fd_ < 0) throw Error(cat("job store ", shown_, ": eventfd failed"));
    thread_ = std::thread([this] { run(); });
  }
  ~Listener() {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
    thread_.join();
    close(stop_fd_);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

 private:
  // Waits for the connection's socket (or the stop signal) up to `ms`; false when stopping.
  bool wait(int fd, int ms) {
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {fd, POLLIN, 0}};
    poll(fds, fd >= 0 ? 2 : 1, ms);
    return !(fds[0].revents & POLLIN);
  }
  void run() {
    Backoff backoff;
    while (true) {
      std::optional<PostgresConnection> c;
      try {
        c.emplace(url_, shown_);
        c->exec_native(cat("LISTEN ", kChannel), {});
      } catch (const Error& e) {
        lost_(e.what());
        backoff.failed();
        if (!wait(-1, static_cast<int>(backoff.left().count()))) return;
        continue;
      }
      backoff.succeeded();
      changed_();  // whatever happened while nobody listened
      while (PQstatus(c->raw()) == CONNECTION_OK) {
        if (!wait(PQsocket(c->raw()), 60000)) return;
        if (!PQconsumeInput(c->raw())) break;
        bool any = false;
        while (PGnotify* n = PQnotifies(c->raw())) {
          PQfreemem(n);
          any = true;
        }
        if (any) changed_();
      }
      lost_(cat("job store ", shown_, ": connection lost: ", first_line(PQerrorMessage(c->raw()))));
    }
  }

  std::string url_, shown_;
  std::function<void()> changed_;
  std::function<void(const std::string&)> lost_;
  int stop_fd_;
  std::thread thread_;
};

// The server, connected to again with backoff while it is away.
class PostgresDatabase final : public SqlDatabase {
 public:
  explicit PostgresDatabase(const std::string& url);
  ~PostgresDatabase() override { listener_.reset(); }

  std::string name() const override { return "postgresql"; }
  bool watch(std::function<void()> changed) override;
  std::string unavailable() const override;

  // A connection the database dropped while idle (it restarted) is made
  // again and `work` run once more. When the database cannot be reached,
  // StoreUnavailable, at once while the backoff lasts.
  void run(const std::function<void(SqlConnection&)>& work) override {
    std::lock_guard lock(mutex_);
    for (int attempt = 0;; ++attempt) {
      const bool had_connection = conn_.has_value();
      try {
        work(connected());
        reached();
        return;
      } catch (const ConnectionLost& e) {
        conn_.reset();
        if (attempt == 0 && had_connection) continue;
        if (!backoff_.waiting()) backoff_.failed();
        lost(e.what());
        throw StoreUnavailable(e.what());
      }
    }
  }

 private:
  // The connection, made (and the schema migrated) if there is none; throws
  // ConnectionLost when the database cannot be reached. Under mutex_.
  PostgresConnection& connected();
  // The database answered, or it could not be reached (`why`): /health's
  // view (unavailable()) and one log line at each change.
  void reached();
  void lost(const std::string& why);
  void migrate(PostgresConnection& c);

  std::string url_, shown_;
  std::mutex mutex_;
  std::optional<PostgresConnection> conn_;  // under mutex_; empty while the database cannot be reached
  bool migrated_ = false;                   // under mutex_
  Backoff backoff_;                         // under mutex_: when to try connecting again
  mutable std::mutex state_mutex_;
  std::string unavailable_;  // under state_mutex_: why the database cannot be reached, or empty
  std::chrono::steady_clock::time_point lost_at_{};  // under state_mutex_
  std::atomic<bool> down_{false};                    // !unavailable_.empty(), read without the lock
  std::unique_ptr<Listener> listener_;
};

PostgresDatabase::PostgresDatabase(const std::string& url) : url_(url), shown_(redact_postgres_url(url)) {
  char* bad = nullptr;
  if (PQconninfoOption* parsed = PQconninfoParse(url.c_str(), &bad)) PQconninfoFree(parsed);
  if (bad) {
    const std::string why = first_line(bad);
    PQfreemem(bad);
    throw Error(cat("job store ", shown_, ": not a PostgreSQL connection URL: ", why));
  }
  // A database that cannot be reached at start is an outage like any
  // other: the server starts (its model loads, chat is served, /health says
  // why the store is unavailable) and the store connects once it can. A
  // database that answers with a schema this qvl cannot use is refused here.
  try {
    std::lock_guard lock(mutex_);
    connected();
  } catch (const ConnectionLost& e) {
    lost(e.what());
  }
}

bool PostgresDatabase::watch(std::function<void()> changed) {
  std::lock_guard lock(mutex_);
  listener_ =
      std::make_unique<Listener>(url_, shown_, std::move(changed), [this](const std::string& why) { lost(why); });
  return true;
}

PostgresConnection& PostgresDatabase::connected() {
  if (conn_) return *conn_;
  if (backoff_.waiting()) {
    std::lock_guard lock(state_mutex_);
    throw ConnectionLost(unavailable_.empty() ? cat("job store ", shown_, ": unavailable") : unavailable_);
  }
  try {
    conn_.emplace(url_, shown_);
    if (!migrated_) migrate(*conn_);
    migrated_ = true;
    backoff_.succeeded();
    return *conn_;
  } catch (...) {
    conn_.reset();
    backoff_.failed();
    throw;
  }
}

void PostgresDatabase::reached() {
  if (!down_.load()) return;
  std::lock_guard lock(state_mutex_);
  if (unavailable_.empty()) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - lost_at_).count();
  std::cerr << cat("qvl: job store ", shown_, ": reachable again after ", std::round(s * 10) / 10, " s\n");
  unavailable_.clear();
  down_.store(false);
}

void PostgresDatabase::lost(const std::string& why) {
  std::lock_guard lock(state_mutex_);
  if (unavailable_.empty()) {
    lost_at_ = std::chrono::steady_clock::now();
    std::cerr << cat("qvl: ", why, "; the job store is unavailable (jobs and stored responses answer 503) until it ",
                     "is reached again, tried every ", Backoff::kMost.count() / 1000.0, " s at most\n");
  }
  unavailable_ = why;
  down_.store(true);
}

std::string PostgresDatabase::unavailable() const {
  if (!down_.load()) return {};
  std::lock_guard lock(state_mutex_);
  return unavailable_;
}

void PostgresDatabase::migrate(PostgresConnection& c) {
  SqlTransaction t(c);
  c.serialize(SqlLock::Migrate);  // replicas starting together migrate once
  c.exec_native("CREATE TABLE IF NOT EXISTS qvl_schema (version integer NOT NULL)", {});
  const SqlRows r = c.exec_native("SELECT version FROM qvl_schema", {});
  const int version = r.empty() ? 0 : static_cast<int>(r.i64(0, 0));
  if (version > kPostgresSchemaVersion)
    throw Error(cat("job store ", shown_, ": schema version ", version, " is newer than this qvl's (",
                    kPostgresSchemaVersion, "): run the newer qvl, or point --jobs-db elsewhere"));
  for (int v = version; v < kPostgresSchemaVersion; ++v) c.exec_native(kMigrations[v], {});
  if (r.empty()) c.exec_native("INSERT INTO qvl_schema (version) VALUES ($1)", {int64_t{kPostgresSchemaVersion}});
  else c.exec_native("UPDATE qvl_schema SET version = $1", {int64_t{kPostgresSchemaVersion}});
  t.commit();
}

}  // namespace

std::string redact_postgres_url(const std::string& url) {
  // postgresql://user:secret@host → postgresql://user:***@host; password=secret → password=***
  static const std::regex userinfo(R"(^(postgres(?:ql)?://[^:/@?]*):[^@/?]*@)");
  static const std::regex param(R"((password=)[^&\s]*)");
  return std::regex_replace(std::regex_replace(url, userinfo, "$1:***@"), param, "$1***");
}

std::unique_ptr<JobStore> open_postgres_job_store(const std::string& url, const JobStoreOptions& options) {
  return std::make_unique<SqlJobStore>(std::make_shared<PostgresDatabase>(url), options);
}

}  // namespace qvl
