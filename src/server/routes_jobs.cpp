// Async jobs: POST /v1/jobs takes a chat-completions body and answers 202
// with an id at once; GET /v1/jobs/{id} reports queued | running (tokens so
// far) | succeeded (the completion, exactly /v1/chat/completions' object:
// every choice, tool calls, logprobs) | failed | cancelled | expired; DELETE
// cancels.
//
// With qvl's "per_page": true the body's one PDF runs as a batch of jobs,
// one per page (page_batch.h): 202 with the batch's id and its page jobs'
// ids; GET /v1/jobs/{batch id} reports every page's status and result in
// order; DELETE cancels the pages not finished.
#include <chrono>

#include "server/server_core.h"

namespace qvl {

using json = nlohmann::json;

PreparedPage ServerCore::prepare_job(const nlohmann::ordered_json& body) {
  int64_t prompt_tokens = 0, image_tokens = 0;
  ChatRequest cr = prepare_chat(body, prompt_tokens, image_tokens);
  // A job's answer is fetched whole with GET; there is nothing to stream.
  if (cr.stream) bad_request("stream", "a job cannot be streamed: poll GET /v1/jobs/{id}, or stream from /v1/chat/completions");
  ResponseMeta meta{"chatcmpl-" + new_request_id() + new_request_id(), unix_now(),
                    model_name, cr.image_ms, image_tokens, &engine->tokenizer()};
  return {std::make_shared<Task>(std::move(cr.generate)), std::move(meta)};
}

void ServerCore::register_job_routes() {
  PageBatchHooks hooks;
  hooks.prepare = [this](const nlohmann::ordered_json& body) { return prepare_job(body); };
  hooks.submit = [this](const std::shared_ptr<Task>& task) { return scheduler->submit(task); };
  hooks.queue_has_room = [this] {
    const SchedulerStats s = scheduler->stats();
    return s.queued < s.queue_size + std::max(0, s.parallel - s.running);
  };
  hooks.finished = [this](const Task& t, const ResponseMeta& meta) { on_task_done(t, meta, nullptr); };
  page_batches = std::make_unique<PageBatchFeeder>(jobs, std::move(hooks));

  router.post("/v1/jobs", [this](HttpRequest& req, HttpResponse& res) {
    auto rec = record(req);
    try {
      nlohmann::ordered_json body = parse_body(req);
      if (std::optional<PageBatchPlan> plan = plan_page_batch(body, chat_limits)) {
        auto batch = std::make_shared<PageBatch>();
        batch->id = new_batch_id();
        batch->created = unix_now();
        batch->model = model_name;
        batch->plan = std::move(*plan);
        const size_t pages = batch->plan.pages.size();
        for (size_t i = 0; i < pages; ++i) batch->job_ids.push_back(JobStore::new_id());
        if (pages > static_cast<size_t>(options.jobs.max_jobs))
          throw ApiError(413, "too_many_jobs",
                         cat("a per-page batch of ", pages, " pages needs as many jobs, over the server's limit of ",
                             options.jobs.max_jobs, " (--max-jobs); choose fewer pages"),
                         "per_page");
        // The first page is prepared here: a body the chat parser refuses
        // is the client's 4xx now, not a failure of every page later.
        PreparedPage first = prepare_job(page_body(batch->plan, batch->plan.pages.front()));
        switch (page_batches->accept(batch, std::move(first))) {
          case PageBatchFeeder::Accept::Accepted: break;
          case PageBatchFeeder::Accept::NoRoom:
            throw ApiError(429, "too_many_jobs",
                           cat("the server holds ", options.jobs.max_jobs, " jobs (--max-jobs) and has no room for ",
                               pages, " more until some finish; retry later"));
          case PageBatchFeeder::Accept::Stopping:
            throw ApiError(503, "shutting_down", "the server is shutting down");
        }
        {
          std::lock_guard lock(rec->mutex);
          rec->fields["job"] = batch->id;
          rec->fields["pages"] = pages;
        }
        res.set_header("Location", "/v1/jobs/" + batch->id);
        reply_json(res, 202, batch_accepted_json(*batch));
        return;
      }
      PreparedPage job = prepare_job(body);
      const std::string id = JobStore::new_id();
      job.task->set_on_done([this, meta = job.meta](const Task& t) { on_task_done(t, meta, nullptr); });
      submit(job.task);
      if (!jobs.add(id, job.task, job.meta, job.meta.created)) {
        job.task->cancel(TaskOutcome::Cancelled);
        throw ApiError(429, "too_many_jobs",
                       cat("the server holds ", options.jobs.max_jobs, " unfinished jobs (--max-jobs); retry later"));
      }
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["job"] = id;
      }
      res.set_header("Location", "/v1/jobs/" + id);
      reply_json(res, 202, jobs.status(id));
    } catch (const ApiError& e) {
      refuse(res, *rec, e);
    }
  });

  const std::string job_path = R"(/v1/jobs/([A-Za-z0-9-]{1,64}))";
  auto not_found = [](HttpResponse& res) {
    reply_error(res, ApiError(404, "job_not_found", "no such job (unknown id, or its result expired)"));
  };
  router.get(job_path, [this, not_found](HttpRequest& req, HttpResponse& res) {
    if (std::shared_ptr<PageBatch> batch = page_batches->find(req.matches[1]))
      return reply_json(res, 200, batch_status_json(*batch, jobs));
    json j = jobs.status(req.matches[1]);
    if (j.is_null()) return not_found(res);
    reply_json(res, 200, j);
  });
  router.del(job_path, [this, not_found](HttpRequest& req, HttpResponse& res) {
    const std::string id = req.matches[1];
    if (std::shared_ptr<PageBatch> batch = page_batches->find(id)) {
      // Running pages stop within one decode step; report their final state.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      for (const std::shared_ptr<Task>& t : page_batches->cancel(*batch))
        t->wait_done(std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max(until - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero())));
      return reply_json(res, 200, batch_status_json(*batch, jobs));
    }
    if (auto task = jobs.task(id)) {
      task->cancel(TaskOutcome::Cancelled);
      // A running task stops within one decode step; report its final state.
      task->wait_done(std::chrono::seconds(2));
    } else if (!jobs.end_pending(id, "cancelled") && !jobs.known(id)) {
      return not_found(res);  // a page job not yet queued ends here, before it is prepared
    }
    reply_json(res, 200, jobs.status(id));
  });
}

}  // namespace qvl
