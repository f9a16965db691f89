// Async jobs (POST /v1/jobs): a bounded map from unguessable ids to tasks.
// A finished job is kept for `ttl` and then forgotten (404); when the store
// is full the oldest finished job makes room, and if none has finished the
// new job is refused.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/scheduler.h"
#include "server/completion_json.h"

namespace qvl {

struct JobStoreOptions {
  double ttl_s = 600;
  int max_jobs = 256;
};

class JobStore {
 public:
  explicit JobStore(const JobStoreOptions& options) : options_(options) {}

  // A new id ("job-" + 32 hex digits from the OS's random source).
  static std::string new_id();
  // False when the store is full of unfinished jobs.
  bool add(const std::string& id, std::shared_ptr<Task> task, ResponseMeta meta, int64_t created);
  std::shared_ptr<Task> task(const std::string& id);
  // The job's status object, or null when unknown or forgotten.
  nlohmann::json status(const std::string& id);
  size_t size();

 private:
  struct Job {
    std::shared_ptr<Task> task;
    ResponseMeta meta;
    int64_t created = 0;
  };
  void purge();  // under mutex_
  nlohmann::json status_json(const std::string& id, const Job& job) const;

  JobStoreOptions options_;
  std::mutex mutex_;
  std::map<std::string, Job> jobs_;
};

}  // namespace qvl
