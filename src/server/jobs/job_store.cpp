#include "server/jobs/job_store.h"

#include <chrono>
#include <random>

#include "server/requests/api_error.h"

namespace qvl {

const char* job_state_name(JobState state) {
  switch (state) {
    case JobState::Queued: return "queued";
    case JobState::Running: return "running";
    case JobState::Succeeded: return "succeeded";
    case JobState::Failed: return "failed";
    case JobState::Cancelled: return "cancelled";
    case JobState::Expired: return "expired";
  }
  return "failed";
}

std::optional<JobState> job_state_named(std::string_view name) {
  for (JobState s : kJobStates)
    if (name == job_state_name(s)) return s;
  return std::nullopt;
}

nlohmann::json attempts_exhausted_error(int attempts) {
  return ApiError(500, "job_attempts_exhausted",
                  "the job was started " + std::to_string(attempts) +
                      " times and each time the server running it stopped before it finished; not tried again")
      .to_json()["error"];
}

std::string new_job_id() {
  // std::random_device reads the kernel's CSPRNG (getrandom) on Linux.
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string id = "job-";
  for (int i = 0; i < 4; ++i) {  // 128 bits
    const uint32_t v = rd();
    for (int k = 0; k < 8; ++k) id += hex[(v >> (4 * k)) & 15];
  }
  return id;
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace qvl
