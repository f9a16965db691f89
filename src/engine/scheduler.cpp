#include "engine/scheduler.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace qvl {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// How often the watchdog looks for deadlines that passed: well under one
// decode step of the real model, so a timeout is as prompt as a disconnect.
constexpr auto kWatchdogPeriod = std::chrono::milliseconds(20);

}  // namespace

const char* outcome_name(TaskOutcome o) {
  switch (o) {
    case TaskOutcome::Pending: return "pending";
    case TaskOutcome::Succeeded: return "succeeded";
    case TaskOutcome::Failed: return "failed";
    case TaskOutcome::Cancelled: return "cancelled";
    case TaskOutcome::TimedOut: return "timed_out";
    case TaskOutcome::Shutdown: return "shutdown";
  }
  return "?";
}

// ---- Task

Task::Task(GenerateRequest request, bool stream_deltas)
    : request_(std::move(request)), stream_deltas_(stream_deltas), submitted_(Clock::now()) {
  request_.cancel = &cancel_flag_;
}

void Task::cancel(TaskOutcome why) {
  int expected = static_cast<int>(TaskOutcome::Pending);
  cancel_why_.compare_exchange_strong(expected, static_cast<int>(why));  // the first reason wins
  cancel_flag_.store(true);
  cv_.notify_all();
}

TaskState Task::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

TaskOutcome Task::outcome() const {
  std::lock_guard lock(mutex_);
  return outcome_;
}

std::string Task::wait_text(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return text_taken_ < text_.size() || state_ == TaskState::Done; });
  std::string out = text_.substr(text_taken_);
  text_taken_ = text_.size();
  return out;
}

std::vector<TaskDelta> Task::wait_deltas(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, timeout, [&] { return !deltas_.empty() || state_ == TaskState::Done; });
  std::vector<TaskDelta> out;
  out.swap(deltas_);
  return out;
}

bool Task::wait_done(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, timeout, [&] { return state_ == TaskState::Done; });
}

std::string Task::text_so_far() const {
  std::lock_guard lock(mutex_);
  return text_;
}

double Task::queue_ms() const {
  std::lock_guard lock(mutex_);
  if (started_ != Clock::time_point{}) return ms_between(submitted_, started_);
  if (finished_ != Clock::time_point{}) return ms_between(submitted_, finished_);
  return ms_between(submitted_, Clock::now());
}

double Task::total_ms() const {
  std::lock_guard lock(mutex_);
  return ms_between(submitted_, finished_ != Clock::time_point{} ? finished_ : Clock::now());
}

void Task::start() {
  std::lock_guard lock(mutex_);
  state_ = TaskState::Running;
  started_ = Clock::now();
}

void Task::on_text(std::string_view piece) {
  {
    std::lock_guard lock(mutex_);
    text_.append(piece);
  }
  pieces_.fetch_add(1);
  cv_.notify_all();
}

void Task::on_delta(const ChoiceDelta& delta) {
  if (delta.text.empty() && !delta.logprob) return;
  {
    std::lock_guard lock(mutex_);
    TaskDelta& d = deltas_.emplace_back();
    d.choice = delta.choice;
    d.text = delta.text;
    if (delta.logprob) d.logprob = *delta.logprob;
  }
  cv_.notify_all();
}

void Task::finish(TaskOutcome outcome, GenerateResult result, std::string error) {
  {
    std::lock_guard lock(mutex_);
    if (state_ == TaskState::Done) return;
    state_ = TaskState::Done;
    outcome_ = outcome;
    result_ = std::move(result);
    error_ = std::move(error);
    finished_ = Clock::now();
    // The decoded images are not needed any more, and a finished job is
    // kept for its TTL: keep only the result.
    std::vector<Message>().swap(request_.messages);
  }
  if (on_done_) on_done_(*this);
  cv_.notify_all();
}

Task::Clock::time_point Task::finished_at() const {
  std::lock_guard lock(mutex_);
  return finished_;
}

// ---- Scheduler

Scheduler::Scheduler(Engine& engine, const SchedulerOptions& options) : engine_(engine), options_(options) {
  if (options_.parallel < 1) fail("--parallel must be at least 1, got ", options_.parallel);
  if (options_.queue_size < 0) fail("--queue-size must not be negative, got ", options_.queue_size);
  // A slot needs its own KV cache in the engine (EngineParams::slots).
  slots_ = std::min(options_.parallel, engine_.slots());
  workers_.emplace_back([this] { worker_loop(); });
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

Scheduler::~Scheduler() {
  drain(std::chrono::milliseconds(0));
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  watchdog_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  watchdog_.join();
}

Scheduler::Refusal Scheduler::submit(const std::shared_ptr<Task>& task) {
  {
    std::lock_guard lock(mutex_);
    if (!accepting_) return Refusal::ShuttingDown;
    // A task waits in the queue only when every slot is taken.
    const int free_slots = slots_ - static_cast<int>(running_.size());
    if (static_cast<int>(queue_.size()) >= options_.queue_size + std::max(0, free_slots)) return Refusal::QueueFull;
    if (options_.timeout_s > 0)
      task->deadline_ = task->submitted_ + std::chrono::duration_cast<Clock::duration>(
                                               std::chrono::duration<double>(options_.timeout_s));
    queue_.push_back(task);
  }
  work_cv_.notify_one();
  return Refusal::None;
}

// One thread drives every slot: each pass admits queued tasks into free
// slots, then gives every active sequence one step (vision pieces, a prefill
// chunk or a token), so neither a long prefill nor a large image stalls the
// others' decoding, and the compute threads are the engine's one pool.
void Scheduler::worker_loop() {
  struct Active {
    std::shared_ptr<Task> task;
    GenerateCallbacks cb;  // the Run keeps a pointer to it
    Engine::RunPtr run;
    int slot = -1;  // chosen by the engine at begin
  };
  std::vector<std::unique_ptr<Active>> active;
  std::vector<bool> slot_used(slots_, false);

  auto release = [&](size_t i, TaskOutcome outcome, GenerateResult result, std::string error) {
    std::shared_ptr<Task> task = active[i]->task;
    if (active[i]->slot >= 0) slot_used[active[i]->slot] = false;
    active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
    {
      // The slot is free before the client hears the answer, so a client
      // that reads /metrics right after its answer sees it free.
      std::lock_guard lock(mutex_);
      running_.erase(std::find(running_.begin(), running_.end(), task));
      const double ms = task->total_ms();
      recent_task_ms_ = recent_task_ms_ == 0 ? ms : 0.8 * recent_task_ms_ + 0.2 * ms;
    }
    task->finish(outcome, std::move(result), std::move(error));
    idle_cv_.notify_all();
  };
  auto outcome_of = [](Task& t, const GenerateResult& r) {
    // Cancelled after the last token: the answer is complete, keep it.
    if (t.cancel_flag_.load() && r.finish_reason == FinishReason::Cancelled) return static_cast<TaskOutcome>(t.cancel_why_.load());
    return TaskOutcome::Succeeded;
  };

  for (;;) {
    std::vector<Active*> admitted;
    {
      std::unique_lock lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active.empty(); });
      if (stopping_ && queue_.empty() && active.empty()) return;
      while (static_cast<int>(active.size()) < slots_ && !queue_.empty()) {
        auto a = std::make_unique<Active>();
        a->task = queue_.front();
        queue_.pop_front();
        running_.push_back(a->task);
        admitted.push_back(a.get());
        active.push_back(std::move(a));
      }
    }
    for (Active* a : admitted) {
      Task& t = *a->task;
      const size_t i = std::find_if(active.begin(), active.end(), [&](auto& x) { return x.get() == a; }) - active.begin();
      if (t.cancel_flag_.load()) {  // cancelled or expired while queued
        release(i, static_cast<TaskOutcome>(t.cancel_why_.load()), {}, {});
        continue;
      }
      t.start();
      a->cb.on_text = [&t](std::string_view piece) {
        t.on_text(piece);
        return !t.cancel_flag_.load();
      };
      if (t.stream_deltas_)
        a->cb.on_delta = [&t](const ChoiceDelta& d) {
          t.on_delta(d);
          return !t.cancel_flag_.load();
        };
      try {
        // The engine picks among the free slots (Engine::begin): a follow-up
        // question lands where its conversation is cached.
        std::vector<int> free_slots;
        for (int s = 0; s < slots_; ++s)
          if (!slot_used[s]) free_slots.push_back(s);
        a->run = engine_.begin(t.request_, a->cb, free_slots);
        a->slot = engine_.run_slot(*a->run);
        slot_used[a->slot] = true;
      } catch (const std::bad_alloc&) {
        release(i, TaskOutcome::Failed, {}, "out of memory while preparing the prompt");
      } catch (const std::exception& e) {
        release(i, TaskOutcome::Failed, {}, e.what());
      }
    }
    // One step for every active sequence together: those decoding share one
    // pass over the weights (batched decode), the others do vision pieces
    // or a prefill chunk (Engine::step of several runs).
    std::vector<Engine::Run*> runs;
    for (const auto& a : active) runs.push_back(a->run.get());
    std::vector<Engine::StepResult> steps;
    try {
      steps = engine_.step(runs);
    } catch (...) {
      steps.assign(runs.size(), {false, std::current_exception()});
    }
    // Backwards, so release() leaves the indices still to visit in place.
    for (size_t i = active.size(); i-- > 0;) {
      if (steps[i].error) {
        try {
          std::rethrow_exception(steps[i].error);
        } catch (const std::bad_alloc&) {
          release(i, TaskOutcome::Failed, {}, "out of memory while generating");
        } catch (const std::exception& e) {
          release(i, TaskOutcome::Failed, {}, e.what());
        } catch (...) {
          release(i, TaskOutcome::Failed, {}, "unknown error while generating");
        }
        continue;
      }
      if (steps[i].more) continue;
      GenerateResult r = engine_.end(*active[i]->run);
      const TaskOutcome o = outcome_of(*active[i]->task, r);
      release(i, o, std::move(r), {});
    }
  }
}

void Scheduler::watchdog_loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    watchdog_cv_.wait_for(lock, kWatchdogPeriod);
    const Clock::time_point now = Clock::now();
    // Queued tasks that expired or were cancelled leave the queue now, so
    // their place is free for others; they finish without running.
    for (auto it = queue_.begin(); it != queue_.end();) {
      std::shared_ptr<Task> t = *it;
      if (now >= t->deadline_) t->cancel(TaskOutcome::TimedOut);
      if (t->cancel_flag_.load()) {
        it = queue_.erase(it);
        t->finish(static_cast<TaskOutcome>(t->cancel_why_.load()), {}, {});
      } else {
        ++it;
      }
    }
    if (queue_.empty() && running_.empty()) idle_cv_.notify_all();
    for (const std::shared_ptr<Task>& t : running_)
      if (now >= t->deadline_) t->cancel(TaskOutcome::TimedOut);
  }
}

bool Scheduler::drain(std::chrono::milliseconds grace) {
  std::unique_lock lock(mutex_);
  accepting_ = false;
  if (idle_cv_.wait_for(lock, grace, [&] { return queue_.empty() && running_.empty(); })) return true;
  for (const std::shared_ptr<Task>& t : queue_) {
    t->cancel(TaskOutcome::Shutdown);
    t->finish(TaskOutcome::Shutdown, {}, {});
  }
  queue_.clear();
  for (const std::shared_ptr<Task>& t : running_) t->cancel(TaskOutcome::Shutdown);
  // Cancellation takes effect at the next step; a step is short, but a
  // bound keeps a stuck step from holding the process forever.
  return idle_cv_.wait_for(lock, std::chrono::seconds(30), [&] { return running_.empty(); });
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  return {static_cast<int>(queue_.size()), static_cast<int>(running_.size()), slots_, options_.queue_size};
}

int Scheduler::retry_after_s() const {
  std::lock_guard lock(mutex_);
  const double per_slot = recent_task_ms_ > 0 ? recent_task_ms_ : 1000;
  const double wait_ms = per_slot * (static_cast<double>(queue_.size()) / slots_ + 1);
  return std::max(1, static_cast<int>(std::ceil(wait_ms / 1000)));
}

}  // namespace qvl
