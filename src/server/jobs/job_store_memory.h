// The "memory" job store: jobs in this process's memory, gone with it (as
// qvl kept them before the durable stores). For tests, and for those who
// ask for it (--jobs-db memory).
#pragma once

#include <map>
#include <mutex>

#include "server/jobs/job_store.h"

namespace qvl {

class MemoryJobStore final : public JobStore {
 public:
  explicit MemoryJobStore(const JobStoreOptions& options) : options_(options) {}

  std::string name() const override { return "memory"; }
  bool durable() const override { return false; }
  bool add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) override;
  std::optional<ClaimedJob> claim(const std::string& owner, int window) override;
  bool heartbeat(const std::string& id, const std::string& owner, int64_t tokens, const std::string& text) override;
  bool finish(const std::string& id, const std::string& owner, JobState state, const nlohmann::json& result,
              const nlohmann::json& error) override;
  void release(const std::string& id, const std::string& owner) override;
  std::optional<JobRecord> cancel(const std::string& id) override;
  std::optional<JobRecord> get(const std::string& id) override;
  std::optional<BatchRecord> batch(const std::string& id) override;
  JobCounts counts() override;
  ResponseStore& responses() override { return responses_; }

 private:
  struct Held {
    JobRecord job;
    uint64_t seq = 0;  // arrival order
    int64_t bytes = 0;
  };
  void purge(int64_t now_ms);                  // under mutex_: finished jobs past the TTL, batches with no job left
  bool make_room(size_t jobs, int64_t bytes);  // under mutex_
  void drop(std::map<std::string, Held>::iterator it);           // under mutex_
  Held* owned(const std::string& id, const std::string& owner);  // under mutex_

  JobStoreOptions options_;
  std::mutex mutex_;
  std::map<std::string, Held> jobs_;
  std::map<std::string, BatchRecord> batches_;
  uint64_t next_seq_ = 0;
  int64_t bytes_ = 0;
  int64_t taken_over_ = 0;
  MemoryResponseStore responses_;
};

}  // namespace qvl
