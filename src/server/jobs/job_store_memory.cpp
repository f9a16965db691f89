#include "server/jobs/job_store_memory.h"

namespace qvl {

using json = nlohmann::json;

namespace {

int64_t job_bytes(const JobRecord& job) {
  return static_cast<int64_t>(job.body.size() + job.progress_text.size()) +
         (job.result.is_null() ? 0 : static_cast<int64_t>(job.result.dump().size()));
}

}  // namespace

void MemoryJobStore::drop(std::map<std::string, Held>::iterator it) {
  bytes_ -= it->second.bytes;
  jobs_.erase(it);
}

void MemoryJobStore::purge(int64_t now_ms) {
  const auto ttl_ms = static_cast<int64_t>(options_.ttl_s * 1000);
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const JobRecord& j = it->second.job;
    if (job_ended(j.state) && now_ms - j.finished_ms >= ttl_ms) drop(it++);
    else ++it;
  }
  for (auto it = batches_.begin(); it != batches_.end();) {
    bool any = false;
    for (const std::string& id : it->second.job_ids) any = any || jobs_.count(id) > 0;
    if (any) {
      ++it;
    } else {
      bytes_ -= static_cast<int64_t>(it->second.plan.size());
      it = batches_.erase(it);
    }
  }
}

bool MemoryJobStore::make_room(size_t jobs, int64_t bytes) {
  purge(unix_ms());
  const auto max = static_cast<size_t>(options_.max_jobs);
  if (jobs > max || bytes > options_.max_bytes) return false;
  while (jobs_.size() + jobs > max || bytes_ + bytes > options_.max_bytes) {
    auto oldest = jobs_.end();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it) {
      const JobRecord& j = it->second.job;
      if (!job_ended(j.state)) continue;
      if (oldest == jobs_.end() || j.finished_ms < oldest->second.job.finished_ms) oldest = it;
    }
    if (oldest == jobs_.end()) return false;
    drop(oldest);
  }
  return true;
}

bool MemoryJobStore::add(const std::vector<JobRecord>& jobs, const BatchRecord* batch) {
  std::lock_guard lock(mutex_);
  int64_t bytes = batch ? static_cast<int64_t>(batch->plan.size()) : 0;
  for (const JobRecord& j : jobs) bytes += job_bytes(j);
  if (!make_room(jobs.size(), bytes)) return false;
  for (const JobRecord& j : jobs) {
    Held h{j, next_seq_++, job_bytes(j)};
    h.job.state = JobState::Queued;
    bytes_ += h.bytes;
    jobs_[j.id] = std::move(h);
  }
  if (batch) {
    batches_[batch->id] = *batch;
    bytes_ += static_cast<int64_t>(batch->plan.size());
  }
  return true;
}

std::optional<ClaimedJob> MemoryJobStore::claim(const std::string& owner, int window) {
  std::lock_guard lock(mutex_);
  const int64_t now = unix_ms();
  purge(now);
  std::map<std::string, int> running;  // per batch
  for (const auto& [id, h] : jobs_)
    if (h.job.state == JobState::Running && !h.job.batch.empty()) ++running[h.job.batch];
  Held* best = nullptr;
  bool taken_over = false;
  for (auto& [id, h] : jobs_) {
    JobRecord& j = h.job;
    const bool lapsed = j.state == JobState::Running && j.lease_until_ms < now;
    if (lapsed && j.attempts >= options_.max_attempts) {
      j.state = JobState::Failed;
      j.error = attempts_exhausted_error(j.attempts);
      j.finished_ms = now;
      j.owner.clear();
      continue;
    }
    const bool ready = j.state == JobState::Queued && (j.batch.empty() || running[j.batch] < window);
    if (!lapsed && !ready) continue;
    if (!best || h.seq < best->seq) best = &h, taken_over = lapsed;
  }
  if (!best) return std::nullopt;
  JobRecord& j = best->job;
  j.state = JobState::Running;
  j.owner = owner;
  j.lease_until_ms = now + static_cast<int64_t>(options_.lease_s * 1000);
  j.progress_tokens = 0;
  j.progress_text.clear();
  ++j.attempts;
  if (taken_over) ++taken_over_;
  ClaimedJob c{j, std::nullopt, taken_over};
  if (!j.batch.empty())
    if (auto it = batches_.find(j.batch); it != batches_.end()) c.batch = it->second;
  return c;
}

MemoryJobStore::Held* MemoryJobStore::owned(const std::string& id, const std::string& owner) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.job.state != JobState::Running || it->second.job.owner != owner) return nullptr;
  return &it->second;
}

bool MemoryJobStore::heartbeat(const std::string& id, const std::string& owner, int64_t tokens,
                               const std::string& text) {
  std::lock_guard lock(mutex_);
  Held* h = owned(id, owner);
  if (!h) return false;
  h->job.lease_until_ms = unix_ms() + static_cast<int64_t>(options_.lease_s * 1000);
  h->job.progress_tokens = tokens;
  h->job.progress_text = text;
  return !h->job.cancel_requested;
}

bool MemoryJobStore::finish(const std::string& id, const std::string& owner, JobState state, const json& result,
                            const json& error) {
  std::lock_guard lock(mutex_);
  Held* h = owned(id, owner);
  if (!h) return false;
  JobRecord& j = h->job;
  j.state = state;
  j.result = result;
  j.error = error;
  j.owner.clear();
  j.progress_text.clear();
  j.finished_ms = unix_ms();
  bytes_ -= h->bytes;
  h->bytes = job_bytes(j);
  bytes_ += h->bytes;
  return true;
}

void MemoryJobStore::release(const std::string& id, const std::string& owner) {
  std::lock_guard lock(mutex_);
  if (Held* h = owned(id, owner)) {
    h->job.state = JobState::Queued;
    h->job.owner.clear();
    --h->job.attempts;
  }
}

std::optional<JobRecord> MemoryJobStore::cancel(const std::string& id) {
  std::lock_guard lock(mutex_);
  purge(unix_ms());
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  JobRecord& j = it->second.job;
  if (j.state == JobState::Queued) {
    j.state = JobState::Cancelled;
    j.finished_ms = unix_ms();
  } else if (j.state == JobState::Running) {
    j.cancel_requested = true;
  }
  return j;
}

std::optional<JobRecord> MemoryJobStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  purge(unix_ms());
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return it->second.job;
}

std::optional<BatchRecord> MemoryJobStore::batch(const std::string& id) {
  std::lock_guard lock(mutex_);
  purge(unix_ms());
  auto it = batches_.find(id);
  if (it == batches_.end()) return std::nullopt;
  return it->second;
}

JobCounts MemoryJobStore::counts() {
  std::lock_guard lock(mutex_);
  purge(unix_ms());
  JobCounts c;
  for (JobState s : kJobStates) c.jobs[s] = 0;
  for (const auto& [id, h] : jobs_) ++c.jobs[h.job.state];
  c.bytes = bytes_;
  c.leases_taken_over = taken_over_;
  return c;
}

}  // namespace qvl
