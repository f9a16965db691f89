#include "server/jobs/job_runner.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <random>

#include "server/requests/api_error.h"
#include "util/error.h"

namespace qvl {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// How often the thread looks again when nothing woke it: a queue place that
// another client's task freed sends no signal, nor does a job another
// process added to a store that cannot be watched (sqlite shared by two
// processes on one machine).
constexpr auto kPollPeriod = 50ms;

std::string runner_name() {
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  std::random_device rd;
  char tail[16];
  std::snprintf(tail, sizeof tail, "%08x", static_cast<unsigned>(rd()));
  return cat(host, ":", getpid(), ":", tail);
}

json shutting_down_error() {
  return ApiError(503, "shutting_down", "the server shut down before the job finished").to_json()["error"];
}

}  // namespace

void JobRunner::Signal::wake() {
  {
    std::lock_guard lock(mutex);
    woken = true;
  }
  cv.notify_all();
}

void JobRunner::Signal::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex);
  cv.wait_for(lock, timeout, [&] { return woken; });
  woken = false;
}

JobRunner::JobRunner(JobStore& store, JobRunnerHooks hooks, double lease_s)
    : store_(store), hooks_(std::move(hooks)), lease_s_(lease_s), owner_(runner_name()) {
  store_watched_ = store_.watch([signal = signal_, changed = store_changed_] {
    changed->store(true);
    signal->wake();
  });
  thread_ = std::thread([this] { loop(); });
}

JobRunner::~JobRunner() { stop(); }

template <typename F>
auto JobRunner::timed(const char* op, F&& f) {
  const auto t0 = Clock::now();
  auto r = f();
  if (hooks_.store_timed) hooks_.store_timed(op, std::chrono::duration<double>(Clock::now() - t0).count());
  return r;
}

void JobRunner::offer(const std::string& id, PreparedPage page) {
  {
    std::lock_guard lock(mutex_);
    offered_.emplace_back(id, std::move(page));
    if (offered_.size() > kMaxOffered) offered_.pop_front();
  }
  store_changed_->store(true);
  signal_->wake();
}

void JobRunner::wake() {
  store_changed_->store(true);
  signal_->wake();
}

std::optional<LiveProgress> JobRunner::live(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = held_.find(id);
  if (it == held_.end()) return std::nullopt;
  const Held& h = it->second;
  if (!h.submitted || h.page->task->state() == TaskState::Queued) return LiveProgress{};
  return LiveProgress{true, h.page->task->pieces(), h.page->task->text_so_far()};
}

std::shared_ptr<Task> JobRunner::cancel(const std::string& id) {
  std::shared_ptr<Task> task;
  {
    std::lock_guard lock(mutex_);
    auto it = held_.find(id);
    if (it == held_.end()) return nullptr;
    it->second.cancelled = true;
    if (it->second.submitted) task = it->second.page->task;
  }
  if (task) task->cancel(TaskOutcome::Cancelled);
  signal_->wake();
  return task;
}

void JobRunner::set_window(int pages) {
  window_.store(std::max(1, pages));
  signal_->wake();  // a wider window may take more pages now
}

void JobRunner::stop_claiming() {
  std::lock_guard lock(mutex_);
  claiming_ = false;
}

void JobRunner::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    claiming_ = false;
  }
  signal_->wake();
  if (thread_.joinable()) thread_.join();
  store_ends();
  // What is left did not finish here: a durable store gets it back at once
  // (another replica runs it without waiting for the lease to run out); the
  // memory store, stopped after the scheduler drained, fails it.
  std::map<std::string, Held> left;
  {
    std::lock_guard lock(mutex_);
    left.swap(held_);
    offered_.clear();
  }
  for (auto& [id, h] : left) {
    const std::shared_ptr<Task> task = h.submitted ? h.page->task : nullptr;
    if (task && task->done() && task->outcome() != TaskOutcome::Shutdown) {
      end(id, job_end(*task, h.page->meta));  // it finished after store_ends() looked
      continue;
    }
    if (task) task->cancel(TaskOutcome::Shutdown);
    if (store_.durable()) release(id);
    else end(id, {JobState::Failed, nullptr, shutting_down_error()});
  }
  store_pending_ends();
  std::lock_guard lock(mutex_);
  if (!pending_ends_.empty())
    std::cerr << cat("qvl: the job store is unavailable: the ends of ", pending_ends_.size(),
                     " jobs could not be stored; their leases run out and they run again elsewhere\n");
}

void JobRunner::end(const std::string& id, const JobEnd& e) {
  if (stored("finish", [&] { return store_.finish(id, owner_, e.state, e.result, e.error); })) return;
  // The store is unavailable: the end is stored when it is back. Should the
  // lease run out first, another runner takes the job and this end is
  // refused (finish() is the owner's only), so the job still ends once.
  std::lock_guard lock(mutex_);
  pending_ends_[id] = e;
}

void JobRunner::release(const std::string& id) {
  stored("release", [&] { return store_.release(id, owner_), true; });  // failed: its lease runs out instead
}

void JobRunner::store_pending_ends() {
  std::map<std::string, JobEnd> ends;
  {
    std::lock_guard lock(mutex_);
    ends.swap(pending_ends_);
  }
  for (auto it = ends.begin(); it != ends.end(); ++it) {
    const auto& [id, e] = *it;
    if (stored("finish", [&] { return store_.finish(id, owner_, e.state, e.result, e.error); })) continue;
    std::lock_guard lock(mutex_);  // still unavailable: keep this one and the rest for later
    pending_ends_.insert(it, ends.end());
    return;
  }
}

template <typename F>
bool JobRunner::stored(const char* op, F&& f) {
  try {
    timed(op, std::forward<F>(f));
    return true;
  } catch (const StoreUnavailable&) {
    return false;  // the store logs its outages, once each
  } catch (const std::exception& e) {
    const std::string why = cat("qvl: job runner: ", op, " failed: ", e.what());
    std::lock_guard lock(mutex_);
    if (why != last_error_) std::cerr << why << "\n";  // once, not on every turn of the loop
    last_error_ = why;
    return false;
  }
}

void JobRunner::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    store_pending_ends();
    store_ends();
    const bool changed = store_changed_->exchange(false);
    // A cancel through another replica reaches the job's runner at once.
    if (changed && store_watched_) next_heartbeat_ = Clock::now();
    if (Clock::now() >= next_heartbeat_) {
      heartbeats();
      next_heartbeat_ = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(lease_s_ * 1000 / 3));
    }
    lock.lock();
    const bool started = start_waiting(lock);
    const bool scan = Clock::now() >= next_store_scan_;
    if (scan) next_store_scan_ = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(lease_s_ * 1000 / 3));
    const bool ask = !store_watched_ || changed || store_may_have_work_ || scan;
    if (!started && claiming_ && !stopping_ && ask) store_may_have_work_ = claim_and_start(lock);
    lock.unlock();
    signal_->wait(kPollPeriod);
    lock.lock();
  }
}

void JobRunner::store_ends() {
  std::vector<std::string> ids;
  {
    std::lock_guard lock(*done_mutex_);
    ids.swap(*done_);
  }
  for (const std::string& id : ids) {
    std::optional<PreparedPage> page;
    {
      std::lock_guard lock(mutex_);
      auto it = held_.find(id);
      if (it == held_.end() || !it->second.page) continue;
      page = it->second.page;
    }
    const Task& t = *page->task;
    if (t.outcome() == TaskOutcome::Shutdown && store_.durable()) release(id);
    else end(id, job_end(t, page->meta));
    std::lock_guard lock(mutex_);
    held_.erase(id);
  }
}

void JobRunner::heartbeats() {
  struct Beat {
    std::string id;
    std::shared_ptr<Task> task;  // null before it is submitted
  };
  std::vector<Beat> beats;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, h] : held_) beats.push_back({id, h.submitted ? h.page->task : nullptr});
  }
  for (const Beat& b : beats) {
    const int64_t tokens = b.task ? b.task->pieces() : 0;
    const std::string text = b.task ? b.task->text_so_far() : std::string();
    bool mine = true;
    // Unavailable: the job runs on, and the next heartbeat renews its lease
    // if the store is back before the lease runs out.
    if (!stored("heartbeat", [&] { return mine = store_.heartbeat(b.id, owner_, tokens, text); }) || mine) continue;
    // Cancelled through the store (perhaps by another replica), or no
    // longer this runner's: stop it; its end is stored only if still its own.
    if (b.task) b.task->cancel(TaskOutcome::Cancelled);
    std::lock_guard lock(mutex_);
    if (auto it = held_.find(b.id); it != held_.end()) it->second.cancelled = true;
  }
}

bool JobRunner::start_waiting(std::unique_lock<std::mutex>& lock) {
  const auto now = Clock::now();
  for (auto it = held_.begin(); it != held_.end();) {
    Held& h = it->second;
    ++it;  // start() may erase h
    if (h.submitted) continue;
    if (h.cancelled || (h.not_before <= now && hooks_.queue_has_room())) {
      start(lock, h);
      return true;
    }
  }
  return false;
}

bool JobRunner::claim_and_start(std::unique_lock<std::mutex>& lock) {
  while (claiming_ && !stopping_ && hooks_.queue_has_room()) {
    lock.unlock();
    std::optional<ClaimedJob> c;
    const bool asked = stored("claim", [&] { return c = store_.claim(owner_, window_.load()), true; });
    lock.lock();
    if (!asked) return true;  // the store is unavailable: ask again on the next turn (it backs off)
    if (!c) return false;
    const std::string id = c->job.id;
    // Its lease ran out while the store refused our heartbeats (a full
    // disk), and the claim gave it back to us: it is still running (or
    // waiting to be stored) here.
    if (held_.count(id)) continue;
    Held& h = held_[id];
    h.claim = std::move(*c);
    for (auto it = offered_.begin(); it != offered_.end(); ++it)
      if (it->first == id) {
        h.page = std::move(it->second);
        offered_.erase(it);
        break;
      }
    start(lock, h);
  }
  return true;
}

void JobRunner::start(std::unique_lock<std::mutex>& lock, Held& h) {
  const std::string id = h.claim.job.id;
  auto finish_here = [&](const JobEnd& e) {
    lock.unlock();
    end(id, e);
    lock.lock();
    held_.erase(id);
  };
  if (h.cancelled) return finish_here({JobState::Cancelled, nullptr, nullptr});
  if (!h.page) {
    const ClaimedJob claim = h.claim;
    lock.unlock();
    std::optional<PreparedPage> page;
    std::optional<ApiError> refused;
    try {
      const ojson body = claim.batch ? page_body(page_batch_plan_parse(claim.batch->plan), claim.job.page)
                                     : ojson::parse(claim.job.body);
      page = hooks_.prepare(body);
    } catch (const ApiError& e) {
      refused = e;
    } catch (const std::exception&) {  // as a handler's 500: the details go to the log, not the client
      refused = ApiError(500, "internal_error", "preparing the job failed");
    }
    lock.lock();
    if (refused) {
      if (refused->status() == 429 && h.busy_retries < kBusyRetries && !h.cancelled) {
        ++h.busy_retries;
        h.not_before = Clock::now() + std::chrono::seconds(h.busy_retries);
        return;
      }
      return finish_here({h.cancelled ? JobState::Cancelled : JobState::Failed, nullptr,
                          h.cancelled ? json() : refused->to_json()["error"]});
    }
    h.page = std::move(page);
  }
  if (!h.armed) {
    h.armed = true;
    h.page->task->set_on_done([done_mutex = done_mutex_, done = done_, signal = signal_, finished = hooks_.finished,
                               meta = h.page->meta, id](const Task& t) {
      if (finished) finished(t, meta);
      {
        std::lock_guard lock(*done_mutex);
        done->push_back(id);
      }
      signal->wake();
    });
  }
  if (h.cancelled) return finish_here({JobState::Cancelled, nullptr, nullptr});
  if (!hooks_.queue_has_room()) return;  // waits for a place (start_waiting)
  const std::shared_ptr<Task> task = h.page->task;
  // A document's pages are encoded one after another, each joining the
  // decoding batch as soon as it is in (GenerateRequest::flow).
  if (h.claim.batch) task->set_flow(h.claim.batch->id);
  lock.unlock();
  const Scheduler::Refusal refusal = hooks_.submit(task);
  lock.lock();
  switch (refusal) {
    case Scheduler::Refusal::None:
      h.submitted = true;
      if (h.cancelled) task->cancel(TaskOutcome::Cancelled);
      return;
    case Scheduler::Refusal::QueueFull: return;  // another client took the place: wait for the next one
    case Scheduler::Refusal::ShuttingDown:
      if (store_.durable()) {
        lock.unlock();
        release(id);
        lock.lock();
        held_.erase(id);
        return;
      }
      return finish_here({JobState::Failed, nullptr, shutting_down_error()});
  }
}

}  // namespace qvl
