// The generation side of one server, which the route groups that generate
// share (routes_chat.cpp, routes_responses.cpp, routes_jobs.cpp,
// routes_retrieval.cpp): the engine and its scheduler, the limits requests
// are checked against, the job store, and a task's preparation, submission
// and accounting. The groups that only read or preview (route_groups.h) get
// views of their own. Not part of the server's public interface.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "http/http_message.h"
#include "http/http_router.h"
#include "io/model_task.h"
#include "server/requests/api_error.h"
#include "server/requests/chat_request.h"
#include "server/replies/completion_json.h"
#include "server/media/memory_admission.h"
#include "server/jobs/job_runner.h"
#include "server/jobs/job_store.h"
#include "server/requests/json_limits.h"
#include "server/observability/metrics.h"
#include "server/documents/page_batch.h"
#include "search/search_store.h"
#include "server/request_kit.h"
#include "server/server_options.h"
#include "util/error.h"

namespace qvl {

struct ServerCore {
  ServerOptions options;
  std::string model_name;
  Metrics metrics;
  std::unique_ptr<JobStore> jobs;  // --jobs-db: jobs, batches, stored responses
  ChatLimits chat_limits;
  JsonLimits json_limits;
  ServerMemoryAdmission memory_admission{options.memory};  // image decoding's memory and places, across requests
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Engine> reranker;  // --rerank-model (routes_search.cpp), under retrieval_mutex as the engine; or none
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<JobRunner>
      job_runner;  // runs stored jobs (routes_jobs.cpp); stops claiming before the scheduler drains
  ModelTask task = ModelTask::Chat;  // what the model serves (Server::attach); other uses are refused (require_task)
  std::mutex retrieval_mutex;         // routes_retrieval.cpp: one embedding or rerank call on the engine at a time
  std::mutex search_index_mutex;      // routes_search.cpp: the index opened once, at its first use
  std::unique_ptr<SearchStore> search_index;
  std::atomic<bool> ready{false};
  std::atomic<bool> draining{false};
  RequestKit kit;  // over the server's records and the members above

  // `records` (the server's) outlives the core.
  ServerCore(const ServerOptions& o, std::string name, RequestRecords& records);

  // The kit's, under the names the generation routes call them by.
  std::shared_ptr<RequestRecord> record(const HttpRequest& req) const { return kit.record(req); }
  std::string new_request_id() const { return kit.new_request_id(); }
  nlohmann::ordered_json parse_body(const HttpRequest& req, std::string_view body) const { return kit.parse_body(req, body); }
  nlohmann::ordered_json parse_body(const HttpRequest& req) const { return kit.parse_body(req); }
  void refuse(HttpResponse& res, RequestRecord& rec, const ApiError& e) const { kit.refuse(res, rec, e); }

  void register_chat_routes(HttpRouter& router);       // routes_chat.cpp: POST /v1/chat/completions
  void register_job_routes(HttpRouter& router);        // routes_jobs.cpp: /v1/jobs
  void register_responses_routes(HttpRouter& router);  // routes_responses.cpp: the Responses API (/v1/responses)
  void register_retrieval_routes(HttpRouter& router);  // routes_retrieval.cpp: POST /v1/embeddings, /v1/rerank
  void register_search_routes(HttpRouter& router);     // routes_search.cpp: /v1/index, /v1/search
  // Throws 400 wrong_task saying what this server serves unless it is `wanted`.
  void require_task(ModelTask wanted) const;
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
  // The error a finished-but-unsuccessful task reports.
  ApiError task_error(const Task& task, const std::string& request_id) const;
};

int64_t unix_now();

}  // namespace qvl
