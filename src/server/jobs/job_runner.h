// Runs stored jobs (job_store.h) through the scheduler's bounded queue
// without flooding it: one thread claims a job only when the queue has a
// free place, prepares it (parses its stored body, renders a batch's page,
// decodes its images: the work a chat request does on its handler's
// thread), submits it, renews its lease with heartbeats while it runs
// (writing its progress, and stopping it when a cancel was asked through
// any replica) and stores its end.
//
// A batch has at most its window of pages claimed at once (set_window:
// qvl serve gives every parallel sequence a page and one more prepared,
// engine/parallelism.h; kDefaultWindow, one running and the next waiting,
// until then), so its pages decode together while a batch of any length holds
// no more queue places than that, and other clients' requests queue between
// its pages.
//
// A job whose preparation is refused ends "failed" with that error (a 429
// from the image budget is retried a few times first). A job the handler
// prepared while validating it (offer) runs without being prepared again
// when this runner claims it soon enough.
//
// stop_claiming() (server drain) takes no more jobs; stop(), once the
// scheduler has drained, stores what the last tasks ended with. A durable
// store gets its unfinished jobs back (release) to run after a restart; the
// memory store fails them with shutting_down.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/scheduler.h"
#include "server/jobs/job_status.h"
#include "server/jobs/job_store.h"
#include "server/documents/page_batch.h"

namespace qvl {

struct JobRunnerHooks {
  // A job's chat body to a task ready to submit; throws ApiError.
  std::function<PreparedPage(const nlohmann::ordered_json& body)> prepare;
  std::function<Scheduler::Refusal(const std::shared_ptr<Task>&)> submit;
  // Whether a submit now would find a queue place.
  std::function<bool()> queue_has_room;
  // Called when a job's task finishes, on the thread that finishes it (metrics).
  std::function<void(const Task&, const ResponseMeta&)> finished;
  // Called with the seconds each store call took (metrics).
  std::function<void(const char* op, double seconds)> store_timed;
};

class JobRunner {
 public:
  static constexpr int kDefaultWindow = 2;
  static constexpr int kBusyRetries = 3;
  // Prepared jobs kept for offer(): beyond it the oldest is dropped (its
  // pixels freed) and prepared again from its body when it runs.
  static constexpr size_t kMaxOffered = 8;

  JobRunner(JobStore& store, JobRunnerHooks hooks, double lease_s);
  ~JobRunner();  // stop()
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // This runner's name in the store's leases ("<host>:<pid>:<random>").
  const std::string& owner() const { return owner_; }
  // A stored job the handler has just prepared (validated); wakes the thread.
  void offer(const std::string& id, PreparedPage page);
  // Wakes the thread (a job was added or cancelled).
  void wake();
  // The live progress of a job this runner holds; nullopt otherwise.
  std::optional<LiveProgress> live(const std::string& id);
  // Stops a job this runner holds now (DELETE; the store already has
  // cancel_requested). The task to wait for, or null.
  std::shared_ptr<Task> cancel(const std::string& id);
  void stop_claiming();
  void stop();
  // Pages of one batch claimed at once from now on (at least 1).
  void set_window(int pages);

 private:
  struct Signal {
    std::mutex mutex;
    std::condition_variable cv;
    bool woken = false;
    void wake();
    void wait(std::chrono::milliseconds timeout);
  };
  // A claimed job not yet submitted (prepare refused with 429, or the
  // queue place went to another client), or submitted and running.
  struct Held {
    ClaimedJob claim;
    std::optional<PreparedPage> page;
    bool armed = false;      // the task's on_done is set
    bool submitted = false;  // to the scheduler
    int busy_retries = 0;
    std::chrono::steady_clock::time_point not_before{};
    bool cancelled = false;
  };

  void loop();
  void store_ends();  // the tasks that finished since last time
  void heartbeats();  // every lease / 3
  // Held jobs whose back-off has passed, or that were cancelled: true when
  // one was dealt with. Under mutex_ (`lock`), which it unlocks meanwhile.
  bool start_waiting(std::unique_lock<std::mutex>& lock);
  // Claims jobs while the queue has room; false when the store had none.
  bool claim_and_start(std::unique_lock<std::mutex>& lock);
  // Prepares (unless prepared) and submits the job, or leaves it held to
  // try again; ends it when refused or cancelled (erasing h).
  void start(std::unique_lock<std::mutex>& lock, Held& h);
  // Stores a job's end; while the store is unavailable, keeps it to store
  // later (store_pending_ends, every turn of the loop).
  void end(const std::string& id, const JobEnd& e);
  void store_pending_ends();
  // Hands a job back to the store (its lease runs out instead when the store is unavailable).
  void release(const std::string& id);
  template <typename F>
  auto timed(const char* op, F&& f);
  // Runs one store call (timed): false when it failed, the store
  // unavailable or the call refused (logged once). The runner's thread
  // never ends on a store error.
  template <typename F>
  bool stored(const char* op, F&& f);

  JobStore& store_;
  JobRunnerHooks hooks_;
  double lease_s_;
  std::string owner_;
  std::shared_ptr<Signal> signal_ = std::make_shared<Signal>();
  // A store that watches for changes (JobStore::watch) is asked for work
  // only when it changed, when its last claim found some, or every lease / 3
  // (leases that ran out send no signal), not on every turn.
  bool store_watched_ = false;
  std::shared_ptr<std::atomic<bool>> store_changed_ = std::make_shared<std::atomic<bool>>(true);
  bool store_may_have_work_ = true;
  std::chrono::steady_clock::time_point next_store_scan_{};

  std::mutex mutex_;  // held_, offered_ (the thread unlocks it around prepare, submit and store calls)
  std::map<std::string, Held> held_;
  std::deque<std::pair<std::string, PreparedPage>> offered_;
  bool claiming_ = true;
  std::atomic<int> window_{kDefaultWindow};
  bool stopping_ = false;
  std::map<std::string, JobEnd> pending_ends_;  // under mutex_: ends the store could not take yet
  std::string last_error_;                      // under mutex_: the last store error logged

  // Ids of tasks finished on the scheduler's thread, stored by the loop.
  std::shared_ptr<std::mutex> done_mutex_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::string>> done_ = std::make_shared<std::vector<std::string>>();

  std::chrono::steady_clock::time_point next_heartbeat_{};
  std::thread thread_;
};

}  // namespace qvl
