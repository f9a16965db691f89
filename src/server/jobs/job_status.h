// What a job says: the status object of GET /v1/jobs/{id} built from its
// stored record, and how a finished task becomes a stored end (state,
// result, error).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/scheduler.h"
#include "server/replies/completion_json.h"
#include "server/jobs/job_store.h"

namespace qvl {

// A job's task as its runner sees it now (fresher than the last heartbeat).
struct LiveProgress {
  bool started = false;  // false: claimed, waiting in the scheduler's queue
  int64_t tokens = 0;
  std::string text;
};

// {"id", "object": "job", "created", "model", ["batch", "page"], "status",
// "progress" (running), "result" (succeeded) | "error" (failed, expired)}.
nlohmann::json job_status_json(const JobRecord& job, const std::optional<LiveProgress>& live = std::nullopt);

struct JobEnd {
  JobState state = JobState::Failed;
  nlohmann::json result;
  nlohmann::json error;
};
// The end of a finished task (outcome Shutdown: failed with shutting_down).
JobEnd job_end(const Task& task, const ResponseMeta& meta);

}  // namespace qvl
