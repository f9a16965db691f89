#include "server/request_kit.h"

#include "server/jobs/job_store.h"
#include "server/replies/completion_json.h"

namespace qvl {

nlohmann::ordered_json RequestKit::parse_body(const HttpRequest& req, std::string_view body) const {
  return parse_json_body(body, json_limits_, [this, &req] { return req.gone() || draining_.load(); });
}

void RequestKit::refuse(HttpResponse& res, RequestRecord& rec, const ApiError& e) const {
  if (e.status() == 429) res.set_header("Retry-After", std::to_string(scheduler_->retry_after_s()));
  {
    std::lock_guard lock(rec.mutex);
    rec.fields["error"] = e.code();
  }
  reply_error(res, e);
}

void reply_json(HttpResponse& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void reply_error(HttpResponse& res, const ApiError& e) { reply_json(res, e.status(), e.to_json()); }

void reply_store_unavailable(HttpResponse& res) {
  res.set_header("Retry-After", std::to_string(kStoreRetryAfterS));
  reply_error(res, ApiError(503, "store_unavailable",
                            "the job store's database cannot be reached right now (jobs and stored responses wait "
                            "for it); retry shortly. Chat completions are still served"));
}

}  // namespace qvl
