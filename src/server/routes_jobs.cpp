// Async jobs: POST /v1/jobs takes a chat-completions body and answers 202
// with an id at once; GET /v1/jobs/{id} reports queued | running (tokens so
// far) | succeeded (the completion, exactly /v1/chat/completions' object:
// every choice, tool calls, logprobs) | failed | cancelled | expired; DELETE
// cancels.
#include <chrono>

#include "server/server_core.h"

namespace qvl {

using json = nlohmann::json;

void ServerCore::register_job_routes() {
  router.post("/v1/jobs", [this](HttpRequest& req, HttpResponse& res) {
    auto rec = record(req);
    try {
      int64_t prompt_tokens = 0, image_tokens = 0;
      ChatRequest cr = prepare_chat(req, req.body, prompt_tokens, image_tokens);
      // A job's answer is fetched whole with GET; there is nothing to stream.
      if (cr.stream) bad_request("stream", "a job cannot be streamed: poll GET /v1/jobs/{id}, or stream from /v1/chat/completions");
      ResponseMeta meta{"chatcmpl-" + new_request_id() + new_request_id(), unix_now(),
                        model_name, cr.image_ms, image_tokens, &engine->tokenizer()};
      auto task = std::make_shared<Task>(std::move(cr.generate));
      const std::string id = JobStore::new_id();
      task->set_on_done([this, meta](const Task& t) { on_task_done(t, meta, nullptr); });
      submit(task);
      if (!jobs.add(id, task, meta, meta.created)) {
        task->cancel(TaskOutcome::Cancelled);
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
    json j = jobs.status(req.matches[1]);
    if (j.is_null()) return not_found(res);
    reply_json(res, 200, j);
  });
  router.del(job_path, [this, not_found](HttpRequest& req, HttpResponse& res) {
    auto task = jobs.task(req.matches[1]);
    if (!task) return not_found(res);
    task->cancel(TaskOutcome::Cancelled);
    // A running task stops within one decode step; report its final state.
    task->wait_done(std::chrono::seconds(2));
    reply_json(res, 200, jobs.status(req.matches[1]));
  });
}

}  // namespace qvl
