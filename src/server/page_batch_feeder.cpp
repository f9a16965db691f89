#include "server/page_batch_feeder.h"

#include <algorithm>

#include "server/api_error.h"
#include "util/error.h"

namespace qvl {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// How often the thread looks again when nothing woke it: a queue place that
// another client's task freed sends no signal.
constexpr auto kPollPeriod = 50ms;

json shutting_down_error() {
  return ApiError(503, "shutting_down", "the server shut down before the page's job was queued").to_json()["error"];
}

}  // namespace

void PageBatchFeeder::Signal::wake() {
  {
    std::lock_guard lock(mutex);
    woken = true;
  }
  cv.notify_all();
}

void PageBatchFeeder::Signal::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex);
  cv.wait_for(lock, timeout, [&] { return woken; });
  woken = false;
}

PageBatchFeeder::PageBatchFeeder(JobStore& jobs, PageBatchHooks hooks) : jobs_(jobs), hooks_(std::move(hooks)) {}

PageBatchFeeder::~PageBatchFeeder() { stop(); }

PageBatchFeeder::Accept PageBatchFeeder::accept(const std::shared_ptr<PageBatch>& batch, PreparedPage first) {
  std::lock_guard lock(mutex_);
  if (stopping_) return Accept::Stopping;
  purge();
  std::vector<json> extra;
  for (int page : batch->plan.pages) extra.push_back({{"batch", batch->id}, {"page", page}});
  if (!jobs_.add_pending(batch->job_ids, extra, batch->model, batch->created)) return Accept::NoRoom;
  arm(batch, first);
  batch->waiting = std::move(first);
  batch->waiting_index = 0;
  batch->next = 1;
  batch->in_flight = 1;
  batches_[batch->id] = batch;
  active_.push_back(batch);
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  signal_->wake();
  return Accept::Accepted;
}

std::shared_ptr<PageBatch> PageBatchFeeder::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = batches_.find(id);
  return it == batches_.end() ? nullptr : it->second;
}

void PageBatchFeeder::purge() {
  for (auto it = batches_.begin(); it != batches_.end();) {
    const PageBatch& b = *it->second;
    const bool gone = b.fed && std::all_of(b.job_ids.begin(), b.job_ids.end(),
                                           [&](const std::string& id) { return !jobs_.known(id); });
    if (gone) it = batches_.erase(it);
    else ++it;
  }
}

void PageBatchFeeder::end_unsubmitted(PageBatch& batch, const std::string& status, const json& error) {
  for (size_t i = batch.next; i < batch.job_ids.size(); ++i) jobs_.end_pending(batch.job_ids[i], status, error);
  batch.next = batch.job_ids.size();
  // The page being prepared ends now too: the feeder's attach then fails
  // and it cancels the task, so a DELETE's answer already says cancelled.
  if (batch.preparing) jobs_.end_pending(batch.job_ids[*batch.preparing], status, error);
  if (batch.waiting) {
    jobs_.end_pending(batch.job_ids[batch.waiting_index], status, error);
    batch.waiting.reset();  // its pixels go back to the image budget
    --batch.in_flight;
  }
}

std::vector<std::shared_ptr<Task>> PageBatchFeeder::cancel(PageBatch& batch) {
  std::vector<std::shared_ptr<Task>> tasks;
  {
    std::lock_guard lock(mutex_);
    batch.cancelled = true;
    end_unsubmitted(batch, "cancelled", nullptr);
    tasks = batch.submitted;
  }
  for (const std::shared_ptr<Task>& t : tasks) t->cancel(TaskOutcome::Cancelled);
  signal_->wake();
  return tasks;
}

void PageBatchFeeder::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    for (const std::shared_ptr<PageBatch>& b : active_) end_unsubmitted(*b, "failed", shutting_down_error());
  }
  signal_->wake();
  if (thread_.joinable()) thread_.join();
}

void PageBatchFeeder::arm(const std::shared_ptr<PageBatch>& batch, PreparedPage& page) {
  // Weak: the batch holds its tasks, a task must not hold its batch.
  std::weak_ptr<PageBatch> weak = batch;
  page.task->set_on_done([weak, signal = signal_, finished = hooks_.finished, meta = page.meta](const Task& t) {
    if (finished) finished(t, meta);
    if (auto b = weak.lock()) --b->in_flight;
    signal->wake();
  });
}

void PageBatchFeeder::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    bool worked = false;
    for (size_t n = 0; n < active_.size() && !stopping_ && !worked; ++n) {
      const size_t at = (turn_ + n) % active_.size();
      // A copy, not a reference into active_: step() unlocks, and a batch
      // accepted meanwhile may reallocate the vector.
      const std::shared_ptr<PageBatch> batch = active_[at];
      if (step(lock, batch)) {
        worked = true;
        turn_ = at + 1;  // the next batch goes first next time
      }
    }
    std::erase_if(active_, [](const std::shared_ptr<PageBatch>& b) { return b->fed; });
    if (!worked && !stopping_) {
      lock.unlock();
      signal_->wait(kPollPeriod);
      lock.lock();
    }
  }
}

bool PageBatchFeeder::step(std::unique_lock<std::mutex>& lock, const std::shared_ptr<PageBatch>& batch) {
  PageBatch& b = *batch;
  if (!b.waiting && (b.cancelled || b.next >= b.plan.pages.size())) {
    b.fed = true;
    return false;
  }
  if (b.waiting) {
    if (!hooks_.queue_has_room()) return false;
    PreparedPage page = std::move(*b.waiting);
    b.waiting.reset();
    const size_t index = b.waiting_index;
    lock.unlock();
    const Scheduler::Refusal refusal = hooks_.submit(page.task);
    lock.lock();
    submitted(b, index, std::move(page), refusal);
    return true;
  }
  if (b.in_flight.load() >= kWindow || Clock::now() < b.not_before || !hooks_.queue_has_room()) return false;
  const size_t index = b.next++;
  if (!jobs_.pending(b.job_ids[index])) return true;  // its job was cancelled on its own (DELETE of the page's id)
  ++b.in_flight;
  b.preparing = index;
  lock.unlock();
  std::optional<PreparedPage> page;
  std::optional<ApiError> refused;
  Scheduler::Refusal refusal = Scheduler::Refusal::None;
  try {
    page = hooks_.prepare(page_body(b.plan, b.plan.pages[index]));
    arm(batch, *page);
    refusal = hooks_.submit(page->task);
  } catch (const ApiError& e) {
    refused = e;
  } catch (const std::exception& e) {  // as a handler's 500: the details stay in the server
    refused = ApiError(500, "internal_error", cat("preparing page ", b.plan.pages[index], " failed"));
  }
  lock.lock();
  b.preparing.reset();
  if (page) {
    submitted(b, index, std::move(*page), refusal);
    return true;
  }
  --b.in_flight;
  const std::string& id = b.job_ids[index];
  if (b.cancelled) {
    jobs_.end_pending(id, "cancelled");
  } else if (stopping_) {
    jobs_.end_pending(id, "failed", shutting_down_error());
  } else if (refused->status() == 429 && b.busy_retries < kBusyRetries) {
    ++b.busy_retries;
    b.not_before = Clock::now() + std::chrono::seconds(b.busy_retries);
    b.next = index;  // this page again, after the back-off
  } else {
    jobs_.end_pending(id, "failed", refused->to_json()["error"]);
  }
  return true;
}

void PageBatchFeeder::submitted(PageBatch& b, size_t index, PreparedPage page, Scheduler::Refusal refusal) {
  const std::string& id = b.job_ids[index];
  switch (refusal) {
    case Scheduler::Refusal::None:
      b.busy_retries = 0;
      b.submitted.push_back(page.task);
      // A job cancelled on its own meanwhile, or a batch cancelled while
      // this page was prepared: the task stops at once.
      if (!jobs_.attach(id, page.task, page.meta) || b.cancelled) page.task->cancel(TaskOutcome::Cancelled);
      return;
    case Scheduler::Refusal::QueueFull:  // another client took the place: wait for the next one
      if (b.cancelled || stopping_) break;
      b.waiting = std::move(page);
      b.waiting_index = index;
      return;
    case Scheduler::Refusal::ShuttingDown:
      break;
  }
  --b.in_flight;
  if (b.cancelled) jobs_.end_pending(id, "cancelled");
  else jobs_.end_pending(id, "failed", shutting_down_error());
}

}  // namespace qvl
