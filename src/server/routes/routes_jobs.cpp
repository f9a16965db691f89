// Async jobs: POST /v1/jobs takes a chat-completions body, checks it as a
// chat request is checked, stores it (job_store.h) and answers 202 with an
// id at once; GET /v1/jobs/{id} reports queued | running (tokens so far) |
// succeeded (the completion, exactly /v1/chat/completions' object: every
// choice, tool calls, logprobs) | failed | cancelled | expired; DELETE
// cancels. The job runner (job_runner.h) claims stored jobs and runs them.
//
// With qvl's "per_page": true the body's one PDF runs as a batch of jobs,
// one per page (page_batch.h): 202 with the batch's id and its page jobs'
// ids; GET /v1/jobs/{batch id} reports every page's status and result in
// order; DELETE cancels the pages not finished.
#include <chrono>
#include <thread>

#include "server/server_core.h"

namespace qvl {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

namespace {

ApiError store_full(const JobStoreOptions& o, size_t jobs) {
  return ApiError(429, "too_many_jobs",
                  cat("the job store is full: it holds at most ", o.max_jobs, " jobs (--max-jobs) and ", o.max_bytes,
                      " bytes of bodies and results (--max-job-bytes), and has no room for ", jobs,
                      jobs == 1 ? " more job" : " more jobs", " until some finish; retry later"));
}

}  // namespace

PreparedPage ServerCore::prepare_job(const ojson& body) {
  int64_t prompt_tokens = 0, image_tokens = 0;
  ChatRequest cr = prepare_chat(body, prompt_tokens, image_tokens);
  // A job's answer is fetched whole with GET; there is nothing to stream.
  if (cr.stream)
    bad_request("stream", "a job cannot be streamed: poll GET /v1/jobs/{id}, or stream from /v1/chat/completions");
  ResponseMeta meta{"chatcmpl-" + new_request_id() + new_request_id(),
                    unix_now(),
                    model_name,
                    cr.media_ms,
                    image_tokens,
                    &engine->tokenizer()};
  return {std::make_shared<Task>(std::move(cr.generate)), std::move(meta)};
}

json ServerCore::job_status(const std::string& id) {
  std::optional<JobRecord> job = jobs->get(id);
  if (!job) return nullptr;
  return job_status_json(*job, job_runner->live(id));
}

void ServerCore::register_job_routes(HttpRouter& router) {
  JobRunnerHooks hooks;
  hooks.prepare = [this](const ojson& body) { return prepare_job(body); };
  hooks.submit = [this](const std::shared_ptr<Task>& task) { return scheduler->submit(task); };
  hooks.queue_has_room = [this] {
    if (!scheduler) return false;
    const SchedulerStats s = scheduler->stats();
    return s.queued < s.queue_size + std::max(0, s.parallel - s.running);
  };
  hooks.finished = [this](const Task& t, const ResponseMeta& meta) { on_task_done(t, meta, nullptr); };
  hooks.store_timed = [this](const char* op, double seconds) { metrics.store_call(op, seconds); };
  job_runner = std::make_unique<JobRunner>(*jobs, std::move(hooks), options.jobs.lease_s);

  router.post("/v1/jobs", [this](HttpRequest& req, HttpResponse& res) {
    auto rec = record(req);
    // Refused before its media are decoded: the job could not be stored (503, handle()).
    if (std::string why = jobs->unavailable(); !why.empty()) throw StoreUnavailable(why);
    try {
      ojson body = parse_body(req);
      if (std::optional<PageBatchPlan> plan = plan_page_batch(body, chat_limits)) {
        const size_t pages = plan->pages.size();
        if (pages > static_cast<size_t>(options.jobs.max_jobs))
          throw ApiError(413, "too_many_jobs",
                         cat("a per-page batch of ", pages, " pages needs as many jobs, over the server's limit of ",
                             options.jobs.max_jobs, " (--max-jobs); choose fewer pages"),
                         "per_page");
        // The first page is prepared here: a body the chat parser refuses
        // is the client's 4xx now, not a failure of every page later.
        PreparedPage first = prepare_job(page_body(*plan, plan->pages.front()));
        if (draining.load()) throw ApiError(503, "shutting_down", "the server is shutting down");
        BatchRecord batch{new_batch_id(), unix_now(), model_name, page_batch_plan_text(*plan), {}};
        std::vector<JobRecord> page_jobs;
        for (int page : plan->pages) {
          JobRecord j;
          j.id = new_job_id();
          j.created = batch.created;
          j.model = model_name;
          j.batch = batch.id;
          j.page = page;
          batch.job_ids.push_back(j.id);
          page_jobs.push_back(std::move(j));
        }
        if (!jobs->add(page_jobs, &batch)) throw store_full(options.jobs, pages);
        job_runner->offer(page_jobs.front().id, std::move(first));
        {
          std::lock_guard lock(rec->mutex);
          rec->fields["job"] = batch.id;
          rec->fields["pages"] = pages;
        }
        res.set_header("Location", "/v1/jobs/" + batch.id);
        reply_json(res, 202, batch_accepted_json(batch, plan->pages));
        return;
      }
      // Checked (and its images decoded) as a chat request is, then stored.
      PreparedPage prepared = prepare_job(body);
      if (draining.load()) throw ApiError(503, "shutting_down", "the server is shutting down");
      JobRecord job;
      job.id = new_job_id();
      job.created = prepared.meta.created;
      job.model = model_name;
      job.body = body.dump();
      if (!jobs->add({job}, nullptr)) throw store_full(options.jobs, 1);
      job_runner->offer(job.id, std::move(prepared));
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["job"] = job.id;
      }
      res.set_header("Location", "/v1/jobs/" + job.id);
      reply_json(res, 202, job_status_json(job));
    } catch (const ApiError& e) {
      refuse(res, *rec, e);
    }
  });

  const std::string job_path = R"(/v1/jobs/([A-Za-z0-9-]{1,64}))";
  auto not_found = [](HttpResponse& res) {
    reply_error(res, ApiError(404, "job_not_found", "no such job (unknown id, or its result expired)"));
  };
  auto batch_status = [this](const BatchRecord& batch) {
    return batch_status_json(batch, page_batch_plan_parse(batch.plan).pages,
                             [this](const std::string& id) { return job_status(id); });
  };
  // Cancels one job: a queued one ends now, a running one stops within one
  // decode step here or within a heartbeat on another replica. The job
  // after, or nullopt when unknown.
  auto cancel_job = [this](const std::string& id, std::chrono::steady_clock::time_point until) {
    std::optional<JobRecord> job = jobs->cancel(id);
    if (!job || job_ended(job->state)) return job;
    if (std::shared_ptr<Task> task = job_runner->cancel(id))
      task->wait_done(std::chrono::duration_cast<std::chrono::milliseconds>(
          std::max(until - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero())));
    while (std::chrono::steady_clock::now() < until) {  // the runner stores the end
      job = jobs->get(id);
      if (!job || job_ended(job->state)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return job;
  };
  router.get("/v1/jobs/{id}", job_path, [this, not_found, batch_status](HttpRequest& req, HttpResponse& res) {
    if (std::optional<BatchRecord> batch = jobs->batch(req.matches[1]))
      return reply_json(res, 200, batch_status(*batch));
    json j = job_status(req.matches[1]);
    if (j.is_null()) return not_found(res);
    reply_json(res, 200, j);
  });
  router.del("/v1/jobs/{id}", job_path, [this, not_found, batch_status, cancel_job](HttpRequest& req, HttpResponse& res) {
    const std::string id = req.matches[1];
    // Running jobs stop within one decode step; the answer reports their final state.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    if (std::optional<BatchRecord> batch = jobs->batch(id)) {
      for (const std::string& page : batch->job_ids) jobs->cancel(page);  // the queued ones first, so none starts
      for (const std::string& page : batch->job_ids) cancel_job(page, until);
      return reply_json(res, 200, batch_status(*batch));
    }
    if (!cancel_job(id, until)) return not_found(res);
    reply_json(res, 200, job_status(id));
  });
}

}  // namespace qvl
