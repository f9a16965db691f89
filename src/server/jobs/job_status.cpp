#include "server/jobs/job_status.h"

#include "server/requests/api_error.h"

namespace qvl {

using json = nlohmann::json;

json job_status_json(const JobRecord& job, const std::optional<LiveProgress>& live) {
  json j = {{"id", job.id}, {"object", "job"}, {"created", job.created}, {"model", job.model}};
  if (!job.batch.empty()) j["batch"] = job.batch, j["page"] = job.page;
  if (job.state == JobState::Running && live && !live->started) {
    j["status"] = "queued";
    return j;
  }
  j["status"] = job_state_name(job.state);
  if (job.attempts > 1) j["attempts"] = job.attempts;  // run again after its server died
  switch (job.state) {
    case JobState::Running:
      j["progress"] = live ? json{{"tokens", live->tokens}, {"text", live->text}}
                           : json{{"tokens", job.progress_tokens}, {"text", job.progress_text}};
      break;
    case JobState::Succeeded: j["result"] = job.result; break;
    case JobState::Failed:
    case JobState::Expired:
      if (!job.error.is_null()) j["error"] = job.error;
      break;
    default: break;
  }
  return j;
}

JobEnd job_end(const Task& t, const ResponseMeta& meta) {
  switch (t.outcome()) {
    case TaskOutcome::Succeeded: return {JobState::Succeeded, completion_json(t, meta), nullptr};
    case TaskOutcome::Cancelled: return {JobState::Cancelled, nullptr, nullptr};
    case TaskOutcome::TimedOut:
      return {JobState::Expired, nullptr,
              ApiError(504, "timeout", "the job did not finish within the server's timeout (--timeout)")
                  .to_json()["error"]};
    case TaskOutcome::Shutdown:
      return {JobState::Failed, nullptr,
              ApiError(503, "shutting_down", "the server shut down before the job finished").to_json()["error"]};
    default: return {JobState::Failed, nullptr, ApiError(500, "generation_failed", t.error()).to_json()["error"]};
  }
}

}  // namespace qvl
