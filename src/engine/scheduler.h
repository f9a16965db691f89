// The scheduler between request handlers and the engine: a bounded queue,
// `parallel` slots, a deadline per task, cancellation, graceful drain.
//
// Handlers build a GenerateRequest on their own thread (images decoded,
// validated), submit() it and then wait on the Task: text arrives as it is
// decided (choice 0's text for job progress; with stream_deltas, every
// choice's raw pieces and logprobs for streams), then the outcome. Nothing here knows
// about HTTP; the server maps outcomes to statuses.
//
// One thread drives the engine step by step (Engine::begin/step/end): each
// running task has its own slot (KV cache) and gets one step per round, all
// in one Engine::step call: the decoding tasks decode together (one pass over
// the weights for all), and a long prefill or a large image's vision encode
// is cut into short pieces between the others' tokens. All compute runs on
// the engine's single thread pool.
//
// Cancellation is cooperative: a task's flag is read by the engine before
// every step, so a cancelled or timed-out task leaves its slot within one
// step. A queued task that is cancelled leaves the queue at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace qvl {

struct SchedulerOptions {
  int parallel = 1;           // sequences generated at once (the engine needs as many slots)
  int queue_size = 16;        // tasks waiting for a slot; beyond it submit() refuses
  double timeout_s = 180;     // from submission to the last token; 0: none
};

enum class TaskState { Queued, Running, Done };

// How a task ended. Cancelled: the client went away or asked; TimedOut: the
// deadline passed (queued or running); Shutdown: the server stopped first.
enum class TaskOutcome { Pending, Succeeded, Failed, Cancelled, TimedOut, Shutdown };
const char* outcome_name(TaskOutcome o);

// What one decided token added to one choice (Engine's ChoiceDelta, copied
// off the engine's thread): the raw text (tool-call markup included) and,
// when logprobs were asked for, the token's entry.
struct TaskDelta {
  int choice = 0;
  std::string text;
  std::optional<TokenLogprob> logprob;
};

class Task {
 public:
  using Clock = std::chrono::steady_clock;

  // stream_deltas: keep every choice's deltas for wait_deltas() (streams);
  // without it only choice 0's text is kept (wait_text, text_so_far).
  explicit Task(GenerateRequest request, bool stream_deltas = false);

  // Asks the task to stop (a queued task never starts). Safe from any thread.
  void cancel(TaskOutcome why = TaskOutcome::Cancelled);

  TaskState state() const;
  TaskOutcome outcome() const;
  // Waits until the task is done or new text arrived, at most `timeout`.
  // Returns the text decided since the previous call (for streams).
  std::string wait_text(std::chrono::milliseconds timeout);
  // The same for every choice: the deltas decided since the previous call,
  // in order (a task made with stream_deltas only).
  std::vector<TaskDelta> wait_deltas(std::chrono::milliseconds timeout);
  bool wait_done(std::chrono::milliseconds timeout);
  bool done() const { return state() == TaskState::Done; }

  // Valid once done.
  const GenerateResult& result() const { return result_; }
  const std::string& error() const { return error_; }  // for Failed

  // Progress while running (for job status).
  int64_t pieces() const { return pieces_.load(); }
  std::string text_so_far() const;

  // Timestamps (submitted is set by the constructor).
  Clock::time_point submitted() const { return submitted_; }
  double queue_ms() const;   // submitted -> started (or -> done if it never ran)
  double total_ms() const;   // submitted -> done

  Clock::time_point finished_at() const;  // Clock::time_point{} until done
  // The longest wait between two of this task's tokens during which another
  // task's image was encoded or its prompt prefilled (the steps that
  // interleave those pieces with this task's decoding); 0 when that never
  // happened. What cutting encodes into pieces is for: a stream keeps coming
  // while a page goes in beside it.
  double longest_gap_while_encoding_ms() const { return longest_gap_while_encoding_ms_.load(); }
  const GenerateRequest& request() const { return request_; }

  // The flow the task's request is encoded in (GenerateRequest::flow: a
  // document job's pages, one at a time). Set before submit().
  void set_flow(std::string flow) { request_.flow = std::move(flow); }

  // Called once on the thread that finishes the task (metrics, logs). Set
  // before submit().
  void set_on_done(std::function<void(const Task&)> f) { on_done_ = std::move(f); }

 private:
  friend class Scheduler;
  void start();
  void on_text(std::string_view piece);
  void on_delta(const ChoiceDelta& delta);
  void finish(TaskOutcome outcome, GenerateResult result, std::string error);

  GenerateRequest request_;
  const bool stream_deltas_;
  std::atomic<bool> cancel_flag_{false};
  std::atomic<int> cancel_why_{static_cast<int>(TaskOutcome::Pending)};
  std::atomic<int64_t> pieces_{0};
  std::atomic<double> longest_gap_while_encoding_ms_{0};
  Clock::time_point submitted_, started_{}, finished_{};
  Clock::time_point deadline_{Clock::time_point::max()};

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  TaskState state_ = TaskState::Queued;
  TaskOutcome outcome_ = TaskOutcome::Pending;
  std::string text_;        // everything decided so far
  size_t text_taken_ = 0;   // how much wait_text() has returned
  std::vector<TaskDelta> deltas_;  // since the last wait_deltas()
  GenerateResult result_;
  std::string error_;
  std::function<void(const Task&)> on_done_;
};

struct SchedulerStats {
  int queued = 0;
  int running = 0;
  int parallel = 0;
  int queue_size = 0;
};

class Scheduler {
 public:
  enum class Refusal { None, QueueFull, ShuttingDown };

  Scheduler(Engine& engine, const SchedulerOptions& options);
  ~Scheduler();  // cancels what is left and joins its threads
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues the task, or says why not (the task is then untouched).
  Refusal submit(const std::shared_ptr<Task>& task);

  // Stops accepting, lets queued and running work finish for up to `grace`,
  // then cancels the rest (outcome Shutdown) and waits (bounded) for the
  // slots to empty. False when a slot did not stop in time.
  bool drain(std::chrono::milliseconds grace);

  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return options_; }
  // Seconds a refused client should wait before retrying: a rough estimate
  // from recent task durations, at least 1.
  int retry_after_s() const;

 private:
  using Clock = Task::Clock;
  // A task the worker has taken from the queue: its engine Run and the slot
  // (KV cache) that run holds. Heap-held so the callbacks keep their address.
  struct ActiveRun {
    std::shared_ptr<Task> task;
    GenerateCallbacks callbacks;  // the Run keeps a pointer to it
    Engine::RunPtr run;           // null until begin() succeeded
    int slot = -1;                // chosen by the engine at begin; -1 before
    // Token gaps (Task::longest_gap_while_encoding_ms): the answer's tokens
    // at the last one, when it came, and whether another run encoded since.
    int64_t tokens = 0;
    Clock::time_point last_token{};
    bool others_encoded = false;
  };

  void worker_loop();
  bool wait_for_work();
  void admit();
  bool begin_run(size_t index);
  void step();
  void note_token_gaps(bool encoding);
  void retire();
  void release(size_t index, TaskOutcome outcome, GenerateResult result, std::string error);
  void watchdog_loop();

  Engine& engine_;
  SchedulerOptions options_;
  int slots_;  // sequences in flight at once: min(parallel, the engine's slots)
  mutable std::mutex mutex_;
  std::condition_variable work_cv_, idle_cv_, watchdog_cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  std::vector<std::shared_ptr<Task>> running_;
  bool accepting_ = true;
  bool stopping_ = false;
  double recent_task_ms_ = 0;  // exponential moving average
  std::vector<std::thread> workers_;  // one thread: it steps every slot in turn

  // The worker thread's own state (not guarded by mutex_; only the wait
  // predicate reads active_, and it runs on the worker thread). The vectors
  // are sized once for `slots_` so a step allocates nothing.
  std::vector<std::unique_ptr<ActiveRun>> active_;  // [<= slots_] in begin order
  std::vector<bool> slot_in_use_;                   // [slots_]
  std::vector<int> free_slots_;                     // [<= slots_] scratch for Engine::begin
  std::vector<Engine::Run*> step_runs_;             // [active_.size()] active_[i]->run
  std::vector<Engine::StepResult> step_results_;    // [active_.size()] what step i returned
  std::thread watchdog_;
};

}  // namespace qvl
