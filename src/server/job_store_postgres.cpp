#include "server/job_store_postgres.h"

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

#include "server/job_media.h"
#include "util/error.h"

namespace qvl {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

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

// Advisory lock keys (pg_advisory_xact_lock): one for migrations, one that
// serialises add() across replicas so the store's bounds hold.
constexpr const char* kMigrateLock = "7415166061";
constexpr const char* kAddLock = "7415166062";
constexpr const char* kResponsesLock = "7415166063";
constexpr const char* kChannel = "qvl_jobs";

// The database's clock in Unix ms: every replica reads the same one.
#define NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"
#define ENDED "('succeeded','failed','cancelled','expired')"

// Jobs kept, and the bytes of bodies, results, plans and media (each file once).
constexpr const char* kStoredJobsAndBytes =
    "SELECT (SELECT count(*) FROM qvl_jobs), (SELECT coalesce(sum(bytes), 0) FROM qvl_jobs) + "
    "(SELECT coalesce(sum(bytes), 0) FROM qvl_batches) + (SELECT coalesce(sum(bytes), 0) FROM qvl_media)";

std::string i64s(int64_t v) { return std::to_string(v); }

// One result; PQclear when it goes.
class Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  ~Result() { PQclear(r_); }
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;

  const PGresult* raw() const { return r_; }
  ExecStatusType status() const { return PQresultStatus(r_); }
  int rows() const { return PQntuples(r_); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col); }
  std::string text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
  }
  int64_t i64(int row, int col) const { return null(row, col) ? 0 : std::stoll(text(row, col)); }
  bool boolean(int row, int col) const { return text(row, col) == "t"; }
  json json_at(int row, int col) const { return null(row, col) ? json() : json::parse(text(row, col)); }
  int64_t affected() const {
    const char* n = PQcmdTuples(r_);
    return n && *n ? std::stoll(n) : 0;
  }

 private:
  PGresult* r_;
};

// A parameter: text, or NULL.
using Param = std::optional<std::string>;

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

// One connection. Not thread-safe: the store's mutex guards it.
class Connection {
 public:
  Connection(const std::string& url, std::string shown) : url_(url), shown_(std::move(shown)) { connect(); }
  ~Connection() { PQfinish(conn_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  PGconn* raw() { return conn_; }
  const std::string& shown() const { return shown_; }

  // Runs one statement with text parameters ($1, $2, …).
  Result exec(const char* sql, std::initializer_list<Param> params = {}) {
    std::vector<const char*> values;
    for (const Param& p : params) values.push_back(p ? p->c_str() : nullptr);
    // Without parameters, PQexec: it takes several statements at once (the
    // migrations). With them, a statement prepared once per connection: the
    // server plans it once, not on every call.
    Result r(values.empty() ? PQexec(conn_, sql) : exec_prepared(sql, values));
    const ExecStatusType s = r.status();
    if (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK) return r;
    const std::string why = first_line(PQerrorMessage(conn_));
    if (PQstatus(conn_) != CONNECTION_OK || connection_gone(r.raw()))
      throw ConnectionLost(cat("job store ", shown_, ": connection lost: ", why));
    throw Error(cat("job store ", shown_, ": ", why, " (in: ", std::string(sql).substr(0, 80), ")"));
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

// BEGIN … COMMIT, or ROLLBACK when left by an exception.
class Transaction {
 public:
  explicit Transaction(Connection& c) : c_(c) { c_.exec("BEGIN"); }
  ~Transaction() {
    if (!done_) {
      try {
        c_.exec("ROLLBACK");
      } catch (...) {  // the connection is gone: the server rolled back
      }
    }
  }
  void commit() {
    c_.exec("COMMIT");
    done_ = true;
  }

 private:
  Connection& c_;
  bool done_ = false;
};

constexpr const char* kJobColumns =
    "id, created, model, body, batch, page, state, attempts, owner, lease_until_ms, cancel_requested, "
    "progress_tokens, progress_text, result, error, finished_ms";

JobRecord job_at(const Result& r, int row) {
  JobRecord j;
  j.id = r.text(row, 0);
  j.created = r.i64(row, 1);
  j.model = r.text(row, 2);
  j.body = r.text(row, 3);
  j.batch = r.text(row, 4);
  j.page = static_cast<int>(r.i64(row, 5));
  j.state = job_state_named(r.text(row, 6)).value_or(JobState::Failed);
  j.attempts = static_cast<int>(r.i64(row, 7));
  j.owner = r.text(row, 8);
  j.lease_until_ms = r.i64(row, 9);
  j.cancel_requested = r.boolean(row, 10);
  j.progress_tokens = r.i64(row, 11);
  j.progress_text = r.text(row, 12);
  j.result = r.json_at(row, 13);
  j.error = r.json_at(row, 14);
  j.finished_ms = r.i64(row, 15);
  return j;
}

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
      std::optional<Connection> c;
      try {
        c.emplace(url_, shown_);
        c->exec(cat("LISTEN ", kChannel).c_str());
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

class PostgresResponseStore;

class PostgresJobStore final : public JobStore {
 public:
  PostgresJobStore(const std::string& url, const JobStoreOptions& options);
  ~PostgresJobStore() override;

  std::string name() const override { return "postgresql"; }
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
  bool watch(std::function<void()> changed) override;

  // Runs f(connection) under the mutex. A connection the database dropped
  // while idle (it restarted) is made again and f run once more (f is one
  // transaction: it either committed or not; add() tells a commit whose
  // reply was lost by its job's id). When the database cannot be reached,
  // StoreUnavailable, at once while the backoff lasts.
  template <typename F>
  auto locked(F&& f) {
    std::lock_guard lock(mutex_);
    for (int attempt = 0;; ++attempt) {
      const bool had_connection = conn_.has_value();
      try {
        auto r = f(connected());
        reached();
        return r;
      } catch (const ConnectionLost& e) {
        conn_.reset();
        if (attempt == 0 && had_connection) continue;
        if (!backoff_.waiting()) backoff_.failed();
        lost(e.what());
        throw StoreUnavailable(e.what());
      }
    }
  }
  std::string unavailable() const override;

 private:
  // The connection, made (and the schema migrated) if there is none; throws
  // ConnectionLost when the database cannot be reached. Under mutex_.
  Connection& connected();
  // The database answered, or it could not be reached (`why`): /health's
  // view (unavailable()) and one log line at each change.
  void reached();
  void lost(const std::string& why);
  void migrate(Connection& c);
  void purge(Connection& c);
  // Batches without jobs, and media no job or batch refers to, go.
  static void drop_unowned(Connection& c);
  static void store_media(Connection& c, const std::string& owner, const DetachedMedia& d);
  // `text` (owner's body or plan as stored) with its media put back.
  static std::string attached(Connection& c, const std::string& owner, const std::string& text);
  std::optional<JobRecord> get_in(Connection& c, const std::string& id);
  std::optional<BatchRecord> batch_in(Connection& c, const std::string& id);
  std::string ttl_ms() const { return i64s(static_cast<int64_t>(options_.ttl_s * 1000)); }
  std::string lease_ms() const { return i64s(static_cast<int64_t>(options_.lease_s * 1000)); }

  JobStoreOptions options_;
  std::string url_, shown_;
  std::mutex mutex_;
  std::optional<Connection> conn_;  // under mutex_; empty while the database cannot be reached
  bool migrated_ = false;           // under mutex_
  Backoff backoff_;                 // under mutex_: when to try connecting again
  mutable std::mutex state_mutex_;
  std::string unavailable_;  // under state_mutex_: why the database cannot be reached, or empty
  std::chrono::steady_clock::time_point lost_at_{};  // under state_mutex_
  std::atomic<bool> down_{false};                     // !unavailable_.empty(), read without the lock
  std::atomic<int64_t> taken_over_{0};
  int64_t last_purge_ms_ = 0;  // under mutex_, this process's clock
  std::unique_ptr<PostgresResponseStore> responses_;
  std::unique_ptr<Listener> listener_;
};

class PostgresResponseStore final : public ResponseStore {
 public:
  explicit PostgresResponseStore(PostgresJobStore& store) : store_(store) {}

  void put(Entry entry) override {
    const std::string items = entry.items.dump(), response = entry.response.dump();
    const auto bytes = static_cast<int64_t>(items.size() + response.size());
    if (bytes > static_cast<int64_t>(kMaxBytes)) return;  // could never be held
    store_.locked([&](Connection& c) {
      Transaction t(c);
      c.exec(cat("SELECT pg_advisory_xact_lock(", kResponsesLock, ")").c_str());  // the bounds hold across replicas
      c.exec("DELETE FROM qvl_responses WHERE id = $1", {entry.id});
      const Result r =
          c.exec("INSERT INTO qvl_responses (id, items, response, bytes) VALUES ($1, $2, $3, $4) RETURNING seq",
                 {entry.id, items, response, i64s(bytes)});
      const std::string seq = r.text(0, 0);
      for (const ojson& item : entry.items)
        if (auto id = item.find("id"); id != item.end() && id->is_string())
          c.exec("INSERT INTO qvl_response_items (item_id, response_seq) VALUES ($1, $2)",
                 {id->get<std::string>(), seq});
      // The oldest go first, past either bound.
      for (;;) {
        const Result q = c.exec("SELECT count(*), coalesce(sum(bytes), 0), min(seq) FROM qvl_responses");
        if (q.i64(0, 0) <= static_cast<int64_t>(kMaxEntries) && q.i64(0, 1) <= static_cast<int64_t>(kMaxBytes)) break;
        c.exec("DELETE FROM qvl_responses WHERE seq = $1", {q.text(0, 2)});  // its items go by cascade
      }
      t.commit();
      return 0;
    });
  }
  std::shared_ptr<const Entry> get(const std::string& id) const override {
    return store_.locked([&](Connection& c) -> std::shared_ptr<const Entry> {
      const Result r = c.exec("SELECT items, response FROM qvl_responses WHERE id = $1", {id});
      if (r.rows() == 0) return nullptr;
      auto e = std::make_shared<Entry>();
      e->id = id;
      e->items = ojson::parse(r.text(0, 0));
      e->response = ojson::parse(r.text(0, 1));
      return e;
    });
  }
  std::optional<ojson> find_item(const std::string& item_id) const override {
    return store_.locked([&](Connection& c) -> std::optional<ojson> {
      const Result r = c.exec(
          "SELECT r.items FROM qvl_response_items i JOIN qvl_responses r ON r.seq = i.response_seq "
          "WHERE i.item_id = $1 ORDER BY r.seq DESC LIMIT 1",
          {item_id});
      if (r.rows() == 0) return std::nullopt;
      for (const ojson& item : ojson::parse(r.text(0, 0)))
        if (auto id = item.find("id"); id != item.end() && id->is_string() && *id == item_id) return item;
      return std::nullopt;
    });
  }
  bool erase(const std::string& id) override {
    return store_.locked(
        [&](Connection& c) { return c.exec("DELETE FROM qvl_responses WHERE id = $1", {id}).affected() > 0; });
  }
  size_t size() const override {
    return store_.locked(
        [&](Connection& c) { return static_cast<size_t>(c.exec("SELECT count(*) FROM qvl_responses").i64(0, 0)); });
  }

 private:
  PostgresJobStore& store_;
};

PostgresJobStore::PostgresJobStore(const std::string& url, const JobStoreOptions& options)
    : options_(options), url_(url), shown_(redact_postgres_url(url)) {
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
  responses_ = std::make_unique<PostgresResponseStore>(*this);
}

PostgresJobStore::~PostgresJobStore() { listener_.reset(); }

ResponseStore& PostgresJobStore::responses() { return *responses_; }

bool PostgresJobStore::watch(std::function<void()> changed) {
  std::lock_guard lock(mutex_);
  listener_ =
      std::make_unique<Listener>(url_, shown_, std::move(changed), [this](const std::string& why) { lost(why); });
  return true;
}

Connection& PostgresJobStore::connected() {
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

void PostgresJobStore::reached() {
  if (!down_.load()) return;
  std::lock_guard lock(state_mutex_);
  if (unavailable_.empty()) return;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - lost_at_).count();
  std::cerr << cat("qvl: job store ", shown_, ": reachable again after ", std::round(s * 10) / 10, " s\n");
  unavailable_.clear();
  down_.store(false);
}

void PostgresJobStore::lost(const std::string& why) {
  std::lock_guard lock(state_mutex_);
  if (unavailable_.empty()) {
    lost_at_ = std::chrono::steady_clock::now();
    std::cerr << cat("qvl: ", why, "; the job store is unavailable (jobs and stored responses answer 503) until it ",
                     "is reached again, tried every ", Backoff::kMost.count() / 1000.0, " s at most\n");
  }
  unavailable_ = why;
  down_.store(true);
}

std::string PostgresJobStore::unavailable() const {
  if (!down_.load()) return {};
  std::lock_guard lock(state_mutex_);
  return unavailable_;
}

void PostgresJobStore::migrate(Connection& c) {
  Transaction t(c);
  c.exec(cat("SELECT pg_advisory_xact_lock(", kMigrateLock, ")").c_str());
  c.exec("CREATE TABLE IF NOT EXISTS qvl_schema (version integer NOT NULL)");
  const Result r = c.exec("SELECT version FROM qvl_schema");
  const int version = r.rows() ? static_cast<int>(r.i64(0, 0)) : 0;
  if (version > kPostgresSchemaVersion)
    throw Error(cat("job store ", shown_, ": schema version ", version, " is newer than this qvl's (",
                    kPostgresSchemaVersion, "): run the newer qvl, or point --jobs-db elsewhere"));
  for (int v = version; v < kPostgresSchemaVersion; ++v) c.exec(kMigrations[v]);
  if (r.rows() == 0) c.exec("INSERT INTO qvl_schema (version) VALUES ($1)", {i64s(kPostgresSchemaVersion)});
  else c.exec("UPDATE qvl_schema SET version = $1", {i64s(kPostgresSchemaVersion)});
  t.commit();
}

void PostgresJobStore::purge(Connection& c) {
  const Result r =
      c.exec("DELETE FROM qvl_jobs WHERE state IN " ENDED " AND finished_ms <= " NOW_MS " - $1", {ttl_ms()});
  if (r.affected() > 0) drop_unowned(c);
  last_purge_ms_ = unix_ms();
}

void PostgresJobStore::drop_unowned(Connection& c) {
  c.exec("DELETE FROM qvl_batches b WHERE NOT EXISTS (SELECT 1 FROM qvl_jobs WHERE qvl_jobs.batch = b.id)");
  c.exec(
      "DELETE FROM qvl_media_refs r WHERE NOT EXISTS (SELECT 1 FROM qvl_jobs WHERE qvl_jobs.id = r.owner) "
      "AND NOT EXISTS (SELECT 1 FROM qvl_batches WHERE qvl_batches.id = r.owner)");
  c.exec("DELETE FROM qvl_media m WHERE NOT EXISTS (SELECT 1 FROM qvl_media_refs r WHERE r.hash = m.hash)");
}

void PostgresJobStore::store_media(Connection& c, const std::string& owner, const DetachedMedia& d) {
  for (const auto& [hash, data] : d.blobs)
    c.exec("INSERT INTO qvl_media (hash, data, bytes) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING",
           {hash, data, i64s(static_cast<int64_t>(data.size()))});
  for (const MediaRef& r : d.refs)
    c.exec("INSERT INTO qvl_media_refs (owner, pointer, hash) VALUES ($1, $2, $3)", {owner, r.pointer, r.hash});
}

std::string PostgresJobStore::attached(Connection& c, const std::string& owner, const std::string& text) {
  const Result r = c.exec(
      "SELECT r.pointer, r.hash, m.data FROM qvl_media_refs r JOIN qvl_media m ON m.hash = r.hash "
      "WHERE r.owner = $1 ORDER BY r.seq",
      {owner});
  std::vector<MediaRef> refs;
  std::map<std::string, std::string> blobs;
  for (int i = 0; i < r.rows(); ++i) {
    refs.push_back({r.text(i, 0), r.text(i, 1)});
    blobs.try_emplace(r.text(i, 1), r.text(i, 2));
  }
  return attach_media(text, refs, blobs);
}

bool PostgresJobStore::add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) {
  const DetachedAdd detached = detach_add(jobs, batch);
  const int64_t bytes = detached.bytes;
  if (static_cast<int64_t>(jobs.size()) > options_.max_jobs || bytes > options_.max_bytes) return false;
  return locked([&](Connection& c) {
    // Run again after a commit whose reply was lost: the jobs are in (ids are random, 128 bits).
    if (!jobs.empty() && c.exec("SELECT 1 FROM qvl_jobs WHERE id = $1", {jobs.front().id}).rows() > 0) return true;
    Transaction t(c);
    c.exec(cat("SELECT pg_advisory_xact_lock(", kAddLock, ")").c_str());
    purge(c);
    for (;;) {
      const Result q = c.exec(kStoredJobsAndBytes);
      if (q.i64(0, 0) + static_cast<int64_t>(jobs.size()) <= options_.max_jobs &&
          q.i64(0, 1) + bytes <= options_.max_bytes)
        break;
      const Result o = c.exec("SELECT seq FROM qvl_jobs WHERE state IN " ENDED " ORDER BY finished_ms LIMIT 1");
      if (o.rows() == 0) return false;  // full of unfinished jobs (the transaction rolls back)
      c.exec("DELETE FROM qvl_jobs WHERE seq = $1", {o.text(0, 0)});
      drop_unowned(c);
    }
    if (batch) {
      const std::string& plan = detached.plan->text;
      c.exec("INSERT INTO qvl_batches (id, created, model, plan, job_ids, bytes) VALUES ($1, $2, $3, $4, $5, $6)",
             {batch->id, i64s(batch->created), batch->model, plan, json(batch->job_ids).dump(),
              i64s(static_cast<int64_t>(plan.size()))});
      store_media(c, batch->id, *detached.plan);
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      const JobRecord& j = jobs[i];
      const std::string& body = detached.bodies[i].text;
      c.exec(
          "INSERT INTO qvl_jobs (id, created, model, body, batch, page, state, bytes) "
          "VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7)",
          {j.id, i64s(j.created), j.model, body, j.batch.empty() ? Param() : Param(j.batch), i64s(j.page),
           i64s(static_cast<int64_t>(body.size()))});
      store_media(c, j.id, detached.bodies[i]);
    }
    c.exec("SELECT pg_notify($1, 'added')", {std::string(kChannel)});
    t.commit();
    return true;
  });
}

std::optional<ClaimedJob> PostgresJobStore::claim(const std::string& owner, int window) {
  return locked([&](Connection& c) -> std::optional<ClaimedJob> {
    Transaction t(c);
    // A claim lost to a crash of the database leaves the job queued (or its
    // lease to run out): harmless, so its commit waits for no disk flush.
    c.exec("SET LOCAL synchronous_commit = off");
    if (unix_ms() - last_purge_ms_ >= 1000) purge(c);
    c.exec("UPDATE qvl_jobs SET state = 'failed', error = $1, finished_ms = " NOW_MS
           ", owner = NULL "
           "WHERE state = 'running' AND lease_until_ms < " NOW_MS " AND attempts >= $2",
           {attempts_exhausted_error(options_.max_attempts).dump(), i64s(options_.max_attempts)});
    // SKIP LOCKED: a row another replica is claiming right now is not waited for, nor taken twice.
    const Result pick = c.exec(
        "SELECT id, state FROM qvl_jobs j WHERE "
        "(state = 'queued' AND (batch IS NULL OR "
        "  (SELECT count(*) FROM qvl_jobs r WHERE r.batch = j.batch AND r.state = 'running') < $1)) "
        "OR (state = 'running' AND lease_until_ms < " NOW_MS ") ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED",
        {i64s(window)});
    if (pick.rows() == 0) {
      t.commit();
      return std::nullopt;
    }
    const std::string id = pick.text(0, 0);
    const bool taken_over = pick.text(0, 1) == "running";
    const Result r = c.exec(cat("UPDATE qvl_jobs SET state = 'running', owner = $2, lease_until_ms = " NOW_MS
                                " + $3, attempts = attempts + 1, progress_tokens = 0, progress_text = '' "
                                "WHERE id = $1 RETURNING ",
                                kJobColumns)
                                .c_str(),
                            {id, owner, lease_ms()});
    ClaimedJob claimed{job_at(r, 0), std::nullopt, taken_over};
    claimed.job.body = attached(c, id, claimed.job.body);
    if (!claimed.job.batch.empty() && (claimed.batch = batch_in(c, claimed.job.batch)))
      claimed.batch->plan = attached(c, claimed.batch->id, claimed.batch->plan);
    t.commit();
    if (taken_over) ++taken_over_;
    return claimed;
  });
}

bool PostgresJobStore::heartbeat(const std::string& id, const std::string& owner, int64_t tokens,
                                 const std::string& text) {
  return locked([&](Connection& c) {
    Transaction t(c);
    c.exec("SET LOCAL synchronous_commit = off");  // a lost heartbeat costs nothing: the next one renews
    const bool mine = c.exec("UPDATE qvl_jobs SET lease_until_ms = " NOW_MS
                             " + $3, progress_tokens = $4, progress_text = $5 "
                             "WHERE id = $1 AND owner = $2 AND state = 'running' AND NOT cancel_requested",
                             {id, owner, lease_ms(), i64s(tokens), text})
                          .affected() > 0;
    t.commit();
    return mine;
  });
}

bool PostgresJobStore::finish(const std::string& id, const std::string& owner, JobState state, const json& result,
                              const json& error) {
  const Param result_text = result.is_null() ? Param() : Param(result.dump());
  const Param error_text = error.is_null() ? Param() : Param(error.dump());
  const int64_t result_bytes = result_text ? static_cast<int64_t>(result_text->size()) : 0;
  return locked([&](Connection& c) {
    Transaction t(c);
    const bool mine = c.exec(
                           "UPDATE qvl_jobs SET state = $3, result = $4, error = $5, owner = NULL, progress_text = '', "
                           "finished_ms = " NOW_MS
                           ", bytes = bytes + $6 "
                           "WHERE id = $1 AND owner = $2 AND state = 'running'",
                           {id, owner, std::string(job_state_name(state)), result_text, error_text, i64s(result_bytes)})
                          .affected() > 0;
    // A batch's next page may be claimable now.
    if (mine) c.exec("SELECT pg_notify($1, 'ended')", {std::string(kChannel)});
    t.commit();
    return mine;
  });
}

void PostgresJobStore::release(const std::string& id, const std::string& owner) {
  locked([&](Connection& c) {
    Transaction t(c);
    c.exec(
        "UPDATE qvl_jobs SET state = 'queued', owner = NULL, attempts = attempts - 1 "
        "WHERE id = $1 AND owner = $2 AND state = 'running'",
        {id, owner});
    c.exec("SELECT pg_notify($1, 'released')", {std::string(kChannel)});
    t.commit();
    return 0;
  });
}

std::optional<JobRecord> PostgresJobStore::cancel(const std::string& id) {
  return locked([&](Connection& c) {
    Transaction t(c);
    c.exec("UPDATE qvl_jobs SET state = 'cancelled', finished_ms = " NOW_MS " WHERE id = $1 AND state = 'queued'",
           {id});
    // The replica running it sees this at its next heartbeat.
    c.exec("UPDATE qvl_jobs SET cancel_requested = true WHERE id = $1 AND state = 'running'", {id});
    c.exec("SELECT pg_notify($1, 'cancelled')", {std::string(kChannel)});
    std::optional<JobRecord> j = get_in(c, id);
    t.commit();
    return j;
  });
}

std::optional<JobRecord> PostgresJobStore::get_in(Connection& c, const std::string& id) {
  const Result r = c.exec(
      cat("SELECT ", kJobColumns, " FROM qvl_jobs WHERE id = $1 AND (finished_ms = 0 OR finished_ms > " NOW_MS " - $2)")
          .c_str(),
      {id, ttl_ms()});
  if (r.rows() == 0) return std::nullopt;
  return job_at(r, 0);
}

std::optional<JobRecord> PostgresJobStore::get(const std::string& id) {
  return locked([&](Connection& c) { return get_in(c, id); });
}

std::optional<BatchRecord> PostgresJobStore::batch_in(Connection& c, const std::string& id) {
  const Result r = c.exec(
      "SELECT id, created, model, plan, job_ids FROM qvl_batches b WHERE id = $1 AND EXISTS (SELECT 1 FROM qvl_jobs "
      "WHERE qvl_jobs.batch = b.id AND (finished_ms = 0 OR finished_ms > " NOW_MS " - $2))",
      {id, ttl_ms()});
  if (r.rows() == 0) return std::nullopt;
  return BatchRecord{r.text(0, 0), r.i64(0, 1), r.text(0, 2), r.text(0, 3),
                     json::parse(r.text(0, 4)).get<std::vector<std::string>>()};
}

std::optional<BatchRecord> PostgresJobStore::batch(const std::string& id) {
  return locked([&](Connection& c) { return batch_in(c, id); });
}

JobCounts PostgresJobStore::counts() {
  return locked([&](Connection& c) {
    JobCounts counts;
    for (JobState s : kJobStates) counts.jobs[s] = 0;
    const Result r = c.exec("SELECT state, count(*) FROM qvl_jobs WHERE finished_ms = 0 OR finished_ms > " NOW_MS
                            " - $1 GROUP BY state",
                            {ttl_ms()});
    for (int i = 0; i < r.rows(); ++i)
      if (auto s = job_state_named(r.text(i, 0))) counts.jobs[*s] = r.i64(i, 1);
    counts.bytes = c.exec(kStoredJobsAndBytes).i64(0, 1);
    counts.leases_taken_over = taken_over_;
    return counts;
  });
}

}  // namespace

std::string redact_postgres_url(const std::string& url) {
  // postgresql://user:secret@host → postgresql://user:***@host; password=secret → password=***
  static const std::regex userinfo(R"(^(postgres(?:ql)?://[^:/@?]*):[^@/?]*@)");
  static const std::regex param(R"((password=)[^&\s]*)");
  return std::regex_replace(std::regex_replace(url, userinfo, "$1:***@"), param, "$1***");
}

std::unique_ptr<JobStore> open_postgres_job_store(const std::string& url, const JobStoreOptions& options) {
  return std::make_unique<PostgresJobStore>(url, options);
}

}  // namespace qvl
