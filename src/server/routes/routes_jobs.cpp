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

void reply_job_not_found(HttpResponse& res) {
  reply_error(res, ApiError(404, "job_not_found", "no such job (unknown id, or its result expired)"));
}

// The job routes' handlers, over the core that holds the store and the runner.
class JobRoutes {
 public:
  explicit JobRoutes(ServerCore& core) : core_(core) {}

  // POST /v1/jobs: a chat body checked, stored as one job or as a per-page
  // batch, and answered 202 at once.
  void submit(HttpRequest& req, HttpResponse& res) const;
  // GET /v1/jobs/{id}: a job's status, or a batch's with every page's.
  void status(HttpRequest& req, HttpResponse& res) const;
  // DELETE /v1/jobs/{id}: the job cancelled, or a batch's pages not finished.
  void cancel(HttpRequest& req, HttpResponse& res) const;

 private:
  void submit_batch(const PageBatchPlan& plan, RequestRecord& rec, HttpResponse& res) const;
  void submit_job(const ojson& body, RequestRecord& rec, HttpResponse& res) const;
  json batch_status(const BatchRecord& batch) const;
  std::optional<JobRecord> cancel_job(const std::string& id, std::chrono::steady_clock::time_point until) const;

  ServerCore& core_;
};

void JobRoutes::submit(HttpRequest& req, HttpResponse& res) const {
  auto rec = core_.record(req);
  // Refused before its media are decoded: the job could not be stored (503, handle()).
  if (std::string why = core_.jobs->unavailable(); !why.empty()) throw StoreUnavailable(why);
  try {
    ojson body = core_.parse_body(req);
    if (std::optional<PageBatchPlan> plan = plan_page_batch(body, core_.chat_limits)) {
      submit_batch(*plan, *rec, res);
      return;
    }
    submit_job(body, *rec, res);
  } catch (const ApiError& e) {
    core_.refuse(res, *rec, e);
  }
}

// One job per chosen page of the body's PDF, stored together with their batch.
void JobRoutes::submit_batch(const PageBatchPlan& plan, RequestRecord& rec, HttpResponse& res) const {
  const size_t pages = plan.pages.size();
  if (pages > static_cast<size_t>(core_.options.jobs.max_jobs))
    throw ApiError(413, "too_many_jobs",
                   cat("a per-page batch of ", pages, " pages needs as many jobs, over the server's limit of ",
                       core_.options.jobs.max_jobs, " (--max-jobs); choose fewer pages"),
                   "per_page");
  // The first page is prepared here: a body the chat parser refuses
  // is the client's 4xx now, not a failure of every page later.
  PreparedPage first = core_.prepare_job(page_body(plan, plan.pages.front()));
  if (core_.draining.load()) throw ApiError(503, "shutting_down", "the server is shutting down");
  BatchRecord batch{new_batch_id(), unix_now(), core_.model_name, page_batch_plan_text(plan), {}};
  std::vector<JobRecord> page_jobs;
  for (int page : plan.pages) {
    JobRecord j;
    j.id = new_job_id();
    j.created = batch.created;
    j.model = core_.model_name;
    j.batch = batch.id;
    j.page = page;
    batch.job_ids.push_back(j.id);
    page_jobs.push_back(std::move(j));
  }
  if (!core_.jobs->add(page_jobs, &batch)) throw store_full(core_.options.jobs, pages);
  core_.job_runner->offer(page_jobs.front().id, std::move(first));
  {
    std::lock_guard lock(rec.mutex);
    rec.fields["job"] = batch.id;
    rec.fields["pages"] = pages;
  }
  res.set_header("Location", "/v1/jobs/" + batch.id);
  reply_json(res, 202, batch_accepted_json(batch, plan.pages));
}

// One job: checked (and its images decoded) as a chat request is, then stored.
void JobRoutes::submit_job(const ojson& body, RequestRecord& rec, HttpResponse& res) const {
  PreparedPage prepared = core_.prepare_job(body);
  if (core_.draining.load()) throw ApiError(503, "shutting_down", "the server is shutting down");
  JobRecord job;
  job.id = new_job_id();
  job.created = prepared.meta.created;
  job.model = core_.model_name;
  job.body = body.dump();
  if (!core_.jobs->add({job}, nullptr)) throw store_full(core_.options.jobs, 1);
  core_.job_runner->offer(job.id, std::move(prepared));
  {
    std::lock_guard lock(rec.mutex);
    rec.fields["job"] = job.id;
  }
  res.set_header("Location", "/v1/jobs/" + job.id);
  reply_json(res, 202, job_status_json(job));
}

json JobRoutes::batch_status(const BatchRecord& batch) const {
  return batch_status_json(batch, page_batch_plan_parse(batch.plan).pages,
                           [this](const std::string& id) { return core_.job_status(id); });
}

// Cancels one job: a queued one ends now, a running one stops within one
// decode step here or within a heartbeat on another replica. The job
// after, or nullopt when unknown.
std::optional<JobRecord> JobRoutes::cancel_job(const std::string& id,
                                               std::chrono::steady_clock::time_point until) const {
  std::optional<JobRecord> job = core_.jobs->cancel(id);
  if (!job || job_ended(job->state)) return job;
  if (std::shared_ptr<Task> task = core_.job_runner->cancel(id))
    task->wait_done(std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(until - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero())));
  while (std::chrono::steady_clock::now() < until) {  // the runner stores the end
    job = core_.jobs->get(id);
    if (!job || job_ended(job->state)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return job;
}

void JobRoutes::status(HttpRequest& req, HttpResponse& res) const {
  if (std::optional<BatchRecord> batch = core_.jobs->batch(req.matches[1]))
    return reply_json(res, 200, batch_status(*batch));
  json j = core_.job_status(req.matches[1]);
  if (j.is_null()) return reply_job_not_found(res);
  reply_json(res, 200, j);
}

void JobRoutes::cancel(HttpRequest& req, HttpResponse& res) const {
  const std::string id = req.matches[1];
  // Running jobs stop within one decode step; the answer reports their final state.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  if (std::optional<BatchRecord> batch = core_.jobs->batch(id)) {
    for (const std::string& page : batch->job_ids) core_.jobs->cancel(page);  // the queued ones first, so none starts
    for (const std::string& page : batch->job_ids) cancel_job(page, until);
    return reply_json(res, 200, batch_status(*batch));
  }
  if (!cancel_job(id, until)) return reply_job_not_found(res);
  reply_json(res, 200, core_.job_status(id));
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

  const JobRoutes routes(*this);
  router.post("/v1/jobs", [routes](HttpRequest& req, HttpResponse& res) { routes.submit(req, res); });
  const std::string job_path = R"(/v1/jobs/([A-Za-z0-9-]{1,64}))";
  router.get("/v1/jobs/{id}", job_path, [routes](HttpRequest& req, HttpResponse& res) { routes.status(req, res); });
  router.del("/v1/jobs/{id}", job_path, [routes](HttpRequest& req, HttpResponse& res) { routes.cancel(req, res); });
}

}  // namespace qvl
