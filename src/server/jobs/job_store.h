// The job store: async jobs (POST /v1/jobs), the pages of per-page batches
// and the responses kept for previous_response_id, held as data — the
// request body, state, lease, attempts, progress, result or error, batch and
// page — never as a live engine task. job_runner.h claims stored jobs and
// runs them; the scheduler and the engine know nothing of the store.
//
// Backends (open_job_store, job_store_open.h): "memory" (one process, gone
// with it), "sqlite:PATH" (the default, job_store_sqlite.h: survives
// restarts and kill -9), "postgresql://…" (job_store_postgres.h: one queue
// shared by replicas). The two durable ones are one SqlJobStore
// (sql_job_store.h) over each database's connection and SQL.
//
// Lifecycle of one job: queued -> running (claimed by a runner, which holds
// a lease it renews with heartbeats) -> succeeded | failed | cancelled |
// expired. A running job whose lease runs out (its runner died) is claimed
// again from the start; after max_attempts claims it fails. A finished job
// is kept ttl_s and then forgotten; when the store is full the oldest
// finished jobs make room, and if none has finished a new job is refused.
//
// A store whose database cannot be reached throws StoreUnavailable from any
// call and names why in unavailable(); nothing is lost meanwhile, and a
// job ends once (finish() is its owner's only, while it runs).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/jobs/response_store.h"
#include "util/error.h"

namespace qvl {

// The store cannot be reached now (its database is down, restarting or cut
// off): the call did nothing. Thrown by every JobStore and ResponseStore
// call; the server answers 503 with Retry-After, the job runner tries again
// later. The message names the store and the cause, for the log.
class StoreUnavailable : public Error {
 public:
  using Error::Error;
};

// A write the store refused because its disk is full (SQLite's SQLITE_FULL):
// the call changed nothing, and the same call may succeed once space is
// freed. Clients get 507 insufficient_storage (server.cpp); the job runner
// keeps a job's end it could not store and stores it again later, as it does
// while the store is unavailable.
class JobStoreFull : public Error {
 public:
  using Error::Error;
};

// Seconds a client is told to wait (Retry-After) while the store is unavailable.
constexpr int kStoreRetryAfterS = 2;

enum class JobState { Queued, Running, Succeeded, Failed, Cancelled, Expired };
const char* job_state_name(JobState state);  // "queued", "running", ...
std::optional<JobState> job_state_named(std::string_view name);
inline bool job_ended(JobState s) { return s != JobState::Queued && s != JobState::Running; }
constexpr JobState kJobStates[] = {JobState::Queued, JobState::Running,   JobState::Succeeded,
                                   JobState::Failed, JobState::Cancelled, JobState::Expired};

struct JobRecord {
  std::string id;       // "job-" + 32 hex digits
  int64_t created = 0;  // Unix seconds (the status object's "created")
  std::string model;
  // The chat body as JSON text; empty for a batch's page (the batch holds
  // it). claim() gives it whole; a durable store's get() gives it as stored,
  // its media cut out (job_media.h): a poll has no use for them.
  std::string body;
  std::string batch;  // a per-page batch's id, or empty
  int page = 0;       // the page (1-based) of a batch's job
  JobState state = JobState::Queued;
  int attempts = 0;               // times claimed (a release does not count)
  std::string owner;              // the runner that holds the lease while running
  int64_t lease_until_ms = 0;     // Unix ms
  bool cancel_requested = false;  // DELETE of a running job: its runner stops it
  int64_t progress_tokens = 0;    // while running, as of the last heartbeat
  std::string progress_text;
  nlohmann::json result;    // succeeded: the chat.completion object
  nlohmann::json error;     // failed | expired: the error object (ApiError's to_json()["error"])
  int64_t finished_ms = 0;  // Unix ms it ended; 0 before
};

// A per-page batch: the plan (page_batch.h) stored once, its pages' jobs
// hold only their page number.
struct BatchRecord {
  std::string id;  // "batch-" + 32 hex digits
  int64_t created = 0;
  std::string model;
  std::string plan;                  // page_batch_plan_text(): the body, where its PDF is, the pages
  std::vector<std::string> job_ids;  // in page order
};

struct JobStoreOptions {
  std::string url;  // "memory" | "sqlite:PATH" | "postgresql://…"; empty: sqlite at state_dir/jobs.db
  std::string state_dir;                 // empty: default_state_dir()
  double ttl_s = 600;                    // a finished job's result is kept this long
  int max_jobs = 256;                    // jobs kept at once, any state
  int64_t max_bytes = int64_t{1} << 30;  // bodies, results and plans kept at once (each media file once)
  double lease_s = 30;                   // a running job's lease; heartbeats renew it every lease_s / 3
  int max_attempts = 3;                  // claims before a job whose runners keep dying fails
};

// What claim() hands a runner.
struct ClaimedJob {
  JobRecord job;
  std::optional<BatchRecord> batch;  // for a batch's page
  bool taken_over = false;           // its previous runner's lease ran out
};

struct JobCounts {
  std::map<JobState, int64_t> jobs;  // every state, zeros included
  int64_t bytes = 0;
  int64_t leases_taken_over = 0;  // by this process since it opened the store
};

class JobStore {
 public:
  virtual ~JobStore() = default;
  virtual std::string name() const = 0;  // "memory" | "sqlite" | "postgresql" (metrics, logs)
  // Whether jobs outlive the process: a runner that stops hands its running
  // jobs back (release) instead of failing them.
  virtual bool durable() const = 0;

  // Adds queued jobs, and the batch they are pages of, all or none. False
  // when they do not fit (max_jobs, max_bytes) even after dropping finished
  // jobs, oldest first.
  virtual bool add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) = 0;
  // The oldest queued job, skipping pages of batches that have `window`
  // jobs running, or a running job whose lease ran out; it becomes running,
  // owned by `owner`, attempts + 1. A job whose lease ran out after
  // max_attempts claims fails instead. nullopt: nothing to run.
  virtual std::optional<ClaimedJob> claim(const std::string& owner, int window) = 0;
  // Renews the lease of a job `owner` runs and records its progress. False
  // when the job is no longer its own or a cancel was asked: stop it.
  virtual bool heartbeat(const std::string& id, const std::string& owner, int64_t tokens, const std::string& text) = 0;
  // Ends a job `owner` runs (state ended). False when it is not its own.
  virtual bool finish(const std::string& id, const std::string& owner, JobState state, const nlohmann::json& result,
                      const nlohmann::json& error) = 0;
  // Hands a job `owner` holds back to the queue, the attempt not counted.
  virtual void release(const std::string& id, const std::string& owner) = 0;
  // A queued job ends cancelled at once; a running one gets
  // cancel_requested (its runner stops it). The job after, or nullopt when
  // unknown or forgotten.
  virtual std::optional<JobRecord> cancel(const std::string& id) = 0;
  virtual std::optional<JobRecord> get(const std::string& id) = 0;
  // The batch while any of its jobs is kept (its plan as stored, as get()'s body).
  virtual std::optional<BatchRecord> batch(const std::string& id) = 0;
  virtual JobCounts counts() = 0;
  // The responses kept for previous_response_id (response_store.h), in the
  // same database as the jobs (the memory store: in this process).
  virtual ResponseStore& responses() = 0;
  // Has the store call `changed`, from a thread of its own, whenever any
  // process adds, cancels, releases or ends a job (a runner may then have
  // work). False when it cannot tell: the runner then asks claim() on every
  // turn of its loop.
  virtual bool watch(std::function<void()> changed) {
    (void)changed;
    return false;
  }
  // Why the store cannot be reached now (its last call, or its change
  // watch, lost the database and it has not been reached since); empty when
  // it can. Never waits on the database: /health reads it.
  virtual std::string unavailable() const { return {}; }
};

// The error of a job whose runners died `attempts` times (claim fails it).
nlohmann::json attempts_exhausted_error(int attempts);

// A new job id ("job-" + 32 hex digits from the OS's random source).
std::string new_job_id();
// Unix milliseconds now.
int64_t unix_ms();

}  // namespace qvl
