// Internals shared by the server's route files: the state one server holds,
// and helpers for replies. Not part of the server's public interface.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "http/http_message.h"
#include "http/http_router.h"
#include "io/model_task.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/completion_json.h"
#include "server/memory_admission.h"
#include "server/job_runner.h"
#include "server/job_store.h"
#include "server/json_limits.h"
#include "server/metrics.h"
#include "server/page_batch.h"
#include "server/server_options.h"
#include "util/error.h"

namespace qvl {

// What the log line and metrics of one HTTP request need, filled in by the
// handler (and by a stream's content provider) as the request goes.
struct RequestRecord {
  std::string id;
  std::string route;  // pattern, bounded cardinality
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::mutex mutex;  // a stream's provider writes while the logger may read
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();  // tokens, timings, outcome, error
};

struct ServerCore {
  ServerOptions options;
  std::string model_name;
  int64_t started_at = 0;  // Unix seconds: /v1/models' "created"
  HttpRouter router;
  Metrics metrics;
  std::unique_ptr<JobStore> jobs;  // --jobs-db: jobs, batches, stored responses
  ChatLimits chat_limits;
  JsonLimits json_limits;
  ServerMemoryAdmission memory_admission{options.memory};  // image decoding's memory and places, across requests
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<JobRunner>
      job_runner;  // runs stored jobs (routes_jobs.cpp); stops claiming before the scheduler drains
  ModelTask task = ModelTask::Chat;  // what the model serves (Server::attach); other uses are refused (require_task)
  std::mutex retrieval_mutex;         // routes_retrieval.cpp: one embedding or rerank call on the engine at a time
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};

  std::mutex records_mutex;
  std::condition_variable records_cv;
  std::map<const HttpRequest*, std::shared_ptr<RequestRecord>> records;

  ServerCore(const ServerOptions& o, std::string name);

  std::shared_ptr<RequestRecord> record(const HttpRequest& req);
  std::string new_request_id();

  void register_chat_routes();
  void register_job_routes();
  void register_info_routes();
  void register_responses_routes();  // routes_responses.cpp: the Responses API (POST /v1/responses)
  void register_document_routes();   // routes_documents.cpp: POST /v1/qvl/documents/pages
  void register_video_routes();      // routes_videos.cpp: POST /v1/qvl/videos/frames
  void register_retrieval_routes();  // routes_retrieval.cpp: POST /v1/embeddings, /v1/rerank
  // Throws 400 wrong_task saying what this server serves unless it is `wanted`.
  void require_task(ModelTask wanted) const;
  // A GET no route took: the embedded web page's files.
  void serve_page(const HttpRequest& req, HttpResponse& res);

  // The /v1/models entry of the served model, and the ids it answers to
  // (its name and, for a Hugging Face repo id, the part after the owner).
  nlohmann::json model_entry() const;
  bool serves_model(const std::string& id) const;

  // A request body as JSON under the server's limits (json_limits). The parse
  // stops (503) once the client has gone or the server drains, so a large body
  // does not hold a core for nobody.
  nlohmann::ordered_json parse_body(const HttpRequest& req, std::string_view body) const;
  nlohmann::ordered_json parse_body(const HttpRequest& req) const { return parse_body(req, req.body); }
  // Parses and validates a chat body, fetches and decodes its images, checks
  // the prompt fits the context. Throws ApiError.
  ChatRequest prepare_chat(const HttpRequest& req, std::string_view body, int64_t& prompt_tokens,
                           int64_t& image_tokens);
  ChatRequest prepare_chat(const nlohmann::ordered_json& body, int64_t& prompt_tokens, int64_t& image_tokens);
  // prepare_chat's checks after parsing: what the engine must compile, and
  // the prompt's fit. Throws ApiError naming chat fields.
  void check_chat(const ChatRequest& cr, int64_t& prompt_tokens, int64_t& image_tokens);
  // A job's body (a chat body, not streamed) prepared as prepare_chat does,
  // as a task not yet submitted.
  PreparedPage prepare_job(const nlohmann::ordered_json& body);
  // Submits the task or throws 429/503.
  void submit(const std::shared_ptr<Task>& task);
  // A job's status object, with the live progress of one this process runs;
  // null when unknown or forgotten.
  nlohmann::json job_status(const std::string& id);
  // Records the generation in the metrics and the request's log fields.
  void on_task_done(const Task& task, const ResponseMeta& meta, const std::shared_ptr<RequestRecord>& rec);
  // Answers a request the handler refused: the error in the request's log
  // fields, and Retry-After with a 429.
  void refuse(HttpResponse& res, RequestRecord& rec, const ApiError& e);
  // The error a finished-but-unsuccessful task reports.
  ApiError task_error(const Task& task, const std::string& request_id) const;

 private:
  std::mutex id_mutex_;
  std::mt19937_64 id_rng_;
};

void reply_json(HttpResponse& res, int status, const nlohmann::json& body);
void reply_error(HttpResponse& res, const ApiError& e);
// 503 store_unavailable with Retry-After: what a request that needs the job
// store (StoreUnavailable) gets while its database is away. The cause goes
// to the log, not the client.
void reply_store_unavailable(HttpResponse& res);
int64_t unix_now();

}  // namespace qvl
