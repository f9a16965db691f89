// What every route handler uses around its own work: the request's record
// (its log line and metrics), new ids, the JSON body under the server's
// limits, and its answers (a JSON reply, an error, a refusal). RequestKit
// holds references only; the server owns what they name.
#pragma once

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/scheduler.h"
#include "http/http_message.h"
#include "server/requests/api_error.h"
#include "server/requests/json_limits.h"
#include "server/observability/request_records.h"

namespace qvl {

class RequestKit {
 public:
  // `scheduler` is set once the model is attached; until then no request is
  // refused with 429.
  RequestKit(RequestRecords& records, const JsonLimits& json_limits, const std::atomic<bool>& draining,
             const std::unique_ptr<Scheduler>& scheduler)
      : records_(records), json_limits_(json_limits), draining_(draining), scheduler_(scheduler) {}

  std::shared_ptr<RequestRecord> record(const HttpRequest& req) const { return records_.of(req); }
  std::string new_request_id() const { return records_.new_id(); }
  // A request body as JSON under the server's limits (json_limits). The parse
  // stops (503) once the client has gone or the server drains, so a large body
  // does not hold a core for nobody.
  nlohmann::ordered_json parse_body(const HttpRequest& req, std::string_view body) const;
  nlohmann::ordered_json parse_body(const HttpRequest& req) const { return parse_body(req, req.body); }
  // Answers a request the handler refused: the error in the request's log
  // fields, and Retry-After with a 429.
  void refuse(HttpResponse& res, RequestRecord& rec, const ApiError& e) const;

 private:
  RequestRecords& records_;
  const JsonLimits& json_limits_;
  const std::atomic<bool>& draining_;
  const std::unique_ptr<Scheduler>& scheduler_;
};

void reply_json(HttpResponse& res, int status, const nlohmann::json& body);
void reply_error(HttpResponse& res, const ApiError& e);
// 503 store_unavailable with Retry-After: what a request that needs the job
// store (StoreUnavailable) gets while its database is away. The cause goes
// to the log, not the client.
void reply_store_unavailable(HttpResponse& res);

}  // namespace qvl
