#include "server/job_store.h"

#include <random>

#include "server/api_error.h"

namespace qvl {

using json = nlohmann::json;

std::string JobStore::new_id() {
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

void JobStore::purge() {
  const auto now = Clock::now();
  const auto ttl = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options_.ttl_s));
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const auto fin = it->second.finished_at();
    if (fin != Clock::time_point{} && now - fin >= ttl) it = jobs_.erase(it);
    else ++it;
  }
}

bool JobStore::make_room(size_t places) {
  purge();
  const size_t max = static_cast<size_t>(options_.max_jobs);
  if (places > max) return false;
  while (jobs_.size() + places > max) {
    auto oldest = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      const auto fin = it->second.finished_at();
      if (fin == Clock::time_point{}) continue;
      if (oldest == jobs_.end() || fin < oldest->second.finished_at()) oldest = it;
    }
    if (oldest == jobs_.end()) return false;
    jobs_.erase(oldest);
  }
  return true;
}

bool JobStore::add(const std::string& id, std::shared_ptr<Task> task, ResponseMeta meta, int64_t created) {
  std::lock_guard lock(mutex_);
  if (!make_room(1)) return false;
  jobs_[id] = Job{std::move(task), std::move(meta), created};
  return true;
}

bool JobStore::add_pending(const std::vector<std::string>& ids, const std::vector<json>& extra,
                           const std::string& model, int64_t created) {
  std::lock_guard lock(mutex_);
  if (!make_room(ids.size())) return false;
  for (size_t i = 0; i < ids.size(); ++i) {
    Job job;
    job.meta.model = model;
    job.created = created;
    if (i < extra.size()) job.extra = extra[i];
    jobs_[ids[i]] = std::move(job);
  }
  return true;
}

bool JobStore::attach(const std::string& id, std::shared_ptr<Task> task, ResponseMeta meta) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.task || !it->second.ended_status.empty()) return false;
  meta.model = it->second.meta.model;
  it->second.task = std::move(task);
  it->second.meta = std::move(meta);
  return true;
}

bool JobStore::end_pending(const std::string& id, const std::string& status, json error) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.task || !it->second.ended_status.empty()) return false;
  it->second.ended_status = status;
  it->second.ended_error = std::move(error);
  it->second.ended_at = Clock::now();
  return true;
}

bool JobStore::pending(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(id);
  return it != jobs_.end() && !it->second.task && it->second.ended_status.empty();
}

bool JobStore::known(const std::string& id) {
  std::lock_guard lock(mutex_);
  purge();
  return jobs_.count(id) > 0;
}

std::shared_ptr<Task> JobStore::task(const std::string& id) {
  std::lock_guard lock(mutex_);
  purge();
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.task;
}

size_t JobStore::size() {
  std::lock_guard lock(mutex_);
  purge();
  return jobs_.size();
}

json JobStore::status(const std::string& id) {
  std::lock_guard lock(mutex_);
  purge();
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return nullptr;
  return status_json(id, it->second);
}

json JobStore::status_json(const std::string& id, const Job& job) const {
  json j = {{"id", id}, {"object", "job"}, {"created", job.created}, {"model", job.meta.model}};
  if (job.extra.is_object()) j.update(job.extra);
  if (!job.task) {
    j["status"] = job.ended_status.empty() ? "queued" : job.ended_status;
    if (!job.ended_error.is_null()) j["error"] = job.ended_error;
    return j;
  }
  const Task& t = *job.task;
  switch (t.state()) {
    case TaskState::Queued:
      j["status"] = "queued";
      return j;
    case TaskState::Running:
      j["status"] = "running";
      j["progress"] = {{"tokens", t.pieces()}, {"text", t.text_so_far()}};
      return j;
    case TaskState::Done:
      break;
  }
  switch (t.outcome()) {
    case TaskOutcome::Succeeded:
      j["status"] = "succeeded";
      j["result"] = completion_json(t, job.meta);
      break;
    case TaskOutcome::Cancelled:
      j["status"] = "cancelled";
      break;
    case TaskOutcome::TimedOut:
      j["status"] = "expired";
      j["error"] = ApiError(504, "timeout", "the job did not finish within the server's timeout (--timeout)").to_json()["error"];
      break;
    case TaskOutcome::Shutdown:
      j["status"] = "failed";
      j["error"] = ApiError(503, "shutting_down", "the server shut down before the job finished").to_json()["error"];
      break;
    default:
      j["status"] = "failed";
      j["error"] = ApiError(500, "generation_failed", t.error()).to_json()["error"];
      break;
  }
  return j;
}

}  // namespace qvl
