// Runs per-page batches (page_batch.h) through the scheduler's bounded queue
// without flooding it: one thread prepares each batch's next page (renders
// it, decodes the body's images, counts the prompt: the work a chat request
// does on its handler's thread) only when the batch has fewer than kWindow
// pages queued or running and the queue has a free place, then submits it.
// So a batch of any length (within --max-pdf-pages) runs to its end holding
// at most kWindow queue places and kWindow pages of pixels, other clients'
// requests queue between its pages, and several batches take turns.
//
// A page whose preparation is refused ends "failed" with that error (a 429
// from the image budget is retried a few times first); the others go on.
// Cancelling a batch ends its unsubmitted pages "cancelled" and cancels its
// submitted tasks. stop() (server drain) ends every unsubmitted page
// "failed" with shutting_down and joins the thread; what was submitted
// drains with the scheduler.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "engine/scheduler.h"
#include "server/job_store.h"
#include "server/page_batch.h"

namespace qvl {

struct PageBatchHooks {
  // A page's chat body to a task ready to submit; throws ApiError.
  std::function<PreparedPage(const nlohmann::ordered_json& body)> prepare;
  std::function<Scheduler::Refusal(const std::shared_ptr<Task>&)> submit;
  // Whether a submit now would find a queue place.
  std::function<bool()> queue_has_room;
  // Called when a page's task finishes, on the thread that finishes it (metrics).
  std::function<void(const Task&, const ResponseMeta&)> finished;
};

class PageBatchFeeder {
 public:
  // Pages of one batch queued or running at once: one running and the next
  // one waiting, so the engine never idles between a batch's pages, while
  // the rest of the queue stays free for others.
  static constexpr int kWindow = 2;
  // A page refused with 429 (the image budget busy past the time limit) is
  // tried again this many times, a second more apart each time.
  static constexpr int kBusyRetries = 3;

  PageBatchFeeder(JobStore& jobs, PageBatchHooks hooks);
  ~PageBatchFeeder();  // stop()
  PageBatchFeeder(const PageBatchFeeder&) = delete;
  PageBatchFeeder& operator=(const PageBatchFeeder&) = delete;

  enum class Accept { Accepted, NoRoom, Stopping };
  // Registers the batch's page jobs (pending) in the store, all or none
  // (NoRoom: --max-jobs), and starts feeding it with `first`, its first
  // page already prepared by the handler (which thereby checked the body).
  Accept accept(const std::shared_ptr<PageBatch>& batch, PreparedPage first);
  // The batch, while any of its page jobs is still kept; null otherwise.
  std::shared_ptr<PageBatch> find(const std::string& id);
  // Ends the pages not yet submitted ("cancelled") and cancels the
  // submitted ones; returns those tasks (to wait for).
  std::vector<std::shared_ptr<Task>> cancel(PageBatch& batch);
  void stop();

 private:
  // Wakes the thread: a page finished, a batch arrived or was cancelled.
  // Shared with the tasks' on_done callbacks, which run on the scheduler's
  // thread, possibly under its lock: so never held while calling out.
  struct Signal {
    std::mutex mutex;
    std::condition_variable cv;
    bool woken = false;
    void wake();
    void wait(std::chrono::milliseconds timeout);
  };

  void loop();
  // One unit of work on `batch` (submit its waiting page, or prepare and
  // submit the next); false when it has nothing to do now. Unlocks
  // `lock` around preparing and submitting.
  bool step(std::unique_lock<std::mutex>& lock, const std::shared_ptr<PageBatch>& batch);
  void submitted(PageBatch& batch, size_t index, PreparedPage page, Scheduler::Refusal refusal);
  // Ends the batch's pages from `next` on, and its waiting one (under mutex_).
  void end_unsubmitted(PageBatch& batch, const std::string& status, const nlohmann::json& error);
  void arm(const std::shared_ptr<PageBatch>& batch, PreparedPage& page);  // on_done: count and wake
  void purge();  // under mutex_: batches whose page jobs are all gone

  JobStore& jobs_;
  PageBatchHooks hooks_;
  std::shared_ptr<Signal> signal_ = std::make_shared<Signal>();
  std::mutex mutex_;  // the batches and their feeder state; held while calling jobs_ and queue_has_room, never submit/prepare
  std::map<std::string, std::shared_ptr<PageBatch>> batches_;
  std::vector<std::shared_ptr<PageBatch>> active_;  // being fed, in arrival order
  size_t turn_ = 0;  // round-robin position in active_
  bool stopping_ = false;
  std::thread thread_;  // started with the first batch
};

}  // namespace qvl
