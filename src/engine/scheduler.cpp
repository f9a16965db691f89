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

// What a task that failed in Engine::step is told.
std::string step_error_message(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::bad_alloc&) {
    return "out of memory while generating";
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error while generating";
  }
}

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
  running_.reserve(slots_);
  active_.reserve(slots_);
  slot_in_use_.assign(slots_, false);
  free_slots_.reserve(slots_);
  step_runs_.reserve(slots_);
  step_results_.reserve(slots_);
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
  while (wait_for_work()) {
    admit();
    step();
    retire();
  }
}

// Sleeps until there is a queued task or a running one; false once the
// scheduler is stopping and nothing is left, which ends the worker.
bool Scheduler::wait_for_work() {
  std::unique_lock lock(mutex_);
  work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !active_.empty(); });
  return !(stopping_ && queue_.empty() && active_.empty());
}

// Takes queued tasks into the free slots and begins their runs, so a new
// request starts at the next step rather than after the others finish. A task
// cancelled or expired while it waited, or whose prompt cannot be prepared,
// is answered here at once and never takes a step.
void Scheduler::admit() {
  const size_t first_admitted = active_.size();
  {
    std::lock_guard lock(mutex_);
    while (static_cast<int>(active_.size()) < slots_ && !queue_.empty()) {
      auto admitted = std::make_unique<ActiveRun>();
      admitted->task = queue_.front();
      queue_.pop_front();
      running_.push_back(admitted->task);
      active_.push_back(std::move(admitted));
    }
  }
  // A task that does not begin is released, which moves the next one to `i`.
  for (size_t i = first_admitted; i < active_.size();)
    if (begin_run(i)) ++i;
}

namespace {

void drop_images(std::vector<Message>& messages) {
  for (Message& m : messages)
    for (MessagePart& part : m.parts) part.image.reset();
}

}  // namespace

// Begins active_[index]'s run on a free slot; false when the task was
// released instead (cancelled while queued, or begin failed).
bool Scheduler::begin_run(size_t index) {
  ActiveRun& admitted = *active_[index];
  Task& task = *admitted.task;
  if (task.cancel_flag_.load()) {  // cancelled or expired while queued
    release(index, static_cast<TaskOutcome>(task.cancel_why_.load()), {}, {});
    return false;
  }
  task.start();
  admitted.callbacks.on_text = [&task](std::string_view piece) {
    task.on_text(piece);
    return !task.cancel_flag_.load();
  };
  if (task.stream_deltas_)
    admitted.callbacks.on_delta = [&task](const ChoiceDelta& delta) {
      task.on_delta(delta);
      return !task.cancel_flag_.load();
    };
  try {
    // The engine picks among the free slots (Engine::begin): a follow-up
    // question lands where its conversation is cached.
    free_slots_.clear();
    for (int s = 0; s < slots_; ++s)
      if (!slot_in_use_[s]) free_slots_.push_back(s);
    admitted.run = engine_.begin(task.request_, admitted.callbacks, free_slots_);
    // The run's prompt holds the images now and drops each once it is
    // preprocessed (VisionStage); the request's own references would keep
    // the decoded pixels (and the server's image budget) for the whole answer.
    drop_images(task.request_.messages);
    admitted.slot = engine_.run_slot(*admitted.run);
    slot_in_use_[admitted.slot] = true;
    return true;
  } catch (const std::bad_alloc&) {
    release(index, TaskOutcome::Failed, {}, "out of memory while preparing the prompt");
  } catch (const std::exception& e) {
    release(index, TaskOutcome::Failed, {}, e.what());
  }
  return false;
}

// One step for every active sequence together: those decoding share one pass
// over the weights (batched decode), the others do vision pieces or a prefill
// chunk (Engine::step of several runs). Deadlines and cancellation need
// nothing here: the watchdog turns a passed deadline into the task's cancel
// flag, and the engine reads that flag before each run's step, so such a run
// comes back finished (FinishReason::Cancelled) for retire() to end.
void Scheduler::step() {
  step_runs_.clear();
  bool encoding = false;  // some run encodes an image or prefills in this step
  for (const auto& active : active_) {
    step_runs_.push_back(active->run.get());
    const Engine::RunStage stage = engine_.run_stage(*active->run);
    encoding |= stage == Engine::RunStage::Vision || stage == Engine::RunStage::Prefill;
  }
  step_results_.resize(step_runs_.size());
  try {
    engine_.step(step_runs_, step_results_);
  } catch (...) {  // the call itself failed: every run shares its error
    step_results_.assign(step_runs_.size(), {false, std::current_exception()});
  }
  note_token_gaps(encoding);
}

// After a step: each decoding run that got a token since its last one
// measures the wait, and keeps it when another run encoded meanwhile.
void Scheduler::note_token_gaps(bool encoding) {
  const Clock::time_point now = Clock::now();
  for (const auto& active : active_) {
    ActiveRun& a = *active;
    const int64_t tokens = engine_.run_tokens(*a.run);
    if (tokens == a.tokens) {
      // No token: an encoding run beside it still counts for the next gap,
      // but its own encode (before its first token) does not.
      a.others_encoded |= encoding && tokens > 0;
      continue;
    }
    if (a.tokens > 0 && (a.others_encoded || encoding)) {
      const double gap = ms_between(a.last_token, now);
      Task& task = *a.task;
      if (gap > task.longest_gap_while_encoding_ms_.load()) task.longest_gap_while_encoding_ms_.store(gap);
    }
    a.tokens = tokens;
    a.last_token = now;
    a.others_encoded = false;
  }
}

// Ends the runs that step() finished or that failed, and answers their tasks,
// so a slot is free for the next admit() as soon as its answer is complete.
// Backwards, so release() leaves the indices still to visit in place.
void Scheduler::retire() {
  for (size_t i = active_.size(); i-- > 0;) {
    const Engine::StepResult& stepped = step_results_[i];
    if (stepped.error) {
      release(i, TaskOutcome::Failed, {}, step_error_message(stepped.error));
      continue;
    }
    if (stepped.more) continue;
    GenerateResult result = engine_.end(*active_[i]->run);
    const Task& task = *active_[i]->task;
    // A cancel that came after the last token leaves a complete answer: kept.
    const bool cut_short = task.cancel_flag_.load() && result.finish_reason == FinishReason::Cancelled;
    const TaskOutcome outcome = cut_short ? static_cast<TaskOutcome>(task.cancel_why_.load()) : TaskOutcome::Succeeded;
    release(i, outcome, std::move(result), {});
  }
}

// Frees active_[index]'s slot, drops its run and tells its task how it ended.
void Scheduler::release(size_t index, TaskOutcome outcome, GenerateResult result, std::string error) {
  std::shared_ptr<Task> task = active_[index]->task;
  if (active_[index]->slot >= 0) slot_in_use_[active_[index]->slot] = false;
  active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(index));
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
