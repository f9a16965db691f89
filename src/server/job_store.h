// Async jobs (POST /v1/jobs): a bounded map from unguessable ids to tasks.
// A finished job is kept for `ttl` and then forgotten (404); when the store
// is full the oldest finished job makes room, and if none has finished the
// new job is refused.
//
// A job may be known before its task exists: the pages of a per-page batch
// (page_batch.h) get their ids when the batch is accepted and their tasks
// one by one as the queue admits them. Such a pending job reports "queued"
// until attach() gives it its task, or ends without one (cancelled, or
// failed with the error that kept it from being prepared).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "server/completion_json.h"

namespace qvl {

struct JobStoreOptions {
  double ttl_s = 600;
  int max_jobs = 256;
};

class JobStore {
 public:
  using Clock = std::chrono::steady_clock;

  explicit JobStore(const JobStoreOptions& options) : options_(options) {}

  // A new id ("job-" + 32 hex digits from the OS's random source).
  static std::string new_id();
  // False when the store is full of unfinished jobs.
  bool add(const std::string& id, std::shared_ptr<Task> task, ResponseMeta meta, int64_t created);
  // Jobs without tasks yet, all or none: false when fewer than ids.size()
  // places are free (finished jobs make room as for add). `extra` joins
  // each one's status object ({"batch": …, "page": …}).
  bool add_pending(const std::vector<std::string>& ids, const std::vector<nlohmann::json>& extra,
                   const std::string& model, int64_t created);
  // Gives a pending job its (submitted) task. False when the job ended
  // without one meanwhile (cancelled) or is gone: the caller cancels the task.
  bool attach(const std::string& id, std::shared_ptr<Task> task, ResponseMeta meta);
  // Ends a pending job that has no task: status "cancelled" or "failed"
  // (with `error`, an ApiError's to_json()["error"]). False when it has a
  // task, has ended already, or is gone.
  bool end_pending(const std::string& id, const std::string& status, nlohmann::json error = nullptr);
  // True while the job has neither a task nor an end.
  bool pending(const std::string& id);
  // True while the job is kept (not yet forgotten).
  bool known(const std::string& id);

  std::shared_ptr<Task> task(const std::string& id);
  // The job's status object, or null when unknown or forgotten.
  nlohmann::json status(const std::string& id);
  size_t size();

 private:
  struct Job {
    std::shared_ptr<Task> task;  // null while pending, and for a job that ended without one
    ResponseMeta meta;
    int64_t created = 0;
    nlohmann::json extra;        // merged into the status object
    std::string ended_status;    // a job that ended without a task: "cancelled" | "failed"
    nlohmann::json ended_error;
    Clock::time_point ended_at{};
    Clock::time_point finished_at() const { return task ? task->finished_at() : ended_at; }
  };
  void purge();                   // under mutex_
  bool make_room(size_t places);  // under mutex_
  nlohmann::json status_json(const std::string& id, const Job& job) const;

  JobStoreOptions options_;
  std::mutex mutex_;
  std::map<std::string, Job> jobs_;
};

}  // namespace qvl
