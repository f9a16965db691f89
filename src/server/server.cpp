#include "server/server.h"

#include <algorithm>
#include <thread>

#include "http/http_server.h"
#include "server/jobs/job_store_open.h"
#include "server/observability/request_log.h"
#include "server/requests/request_policy.h"
#include "server/routes/route_groups.h"
#include "server/server_core.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {

using json = nlohmann::json;

namespace {

// Every POST route of the API takes a JSON body.
bool takes_json(const HttpRouter& router, const std::string& route) { return router.has("POST", route); }

// Compares in time that depends only on the lengths, so response timing does
// not reveal how much of a guessed key was right.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

}  // namespace

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ServerCore::ServerCore(const ServerOptions& o, std::string name, RequestRecords& records)
    : options(o), model_name(std::move(name)), jobs(open_job_store(o.jobs)), kit(records, json_limits, draining, scheduler) {
  // A data: URL may carry the largest file of any kind (the kind's own cap is checked once its bytes say which).
  json_limits = request_json_limits(o.json_max_depth, std::max({o.media.max_image_bytes, o.media.max_video_bytes,
                                                                o.media.pdf.max_bytes}));
  chat_limits = request_chat_limits(o.media, o.repetition_guard);
}

struct Server::Impl {
  HttpRouter router;
  RequestRecords records{router};
  ServerCore core;
  // The groups that generate nothing, each with what it reads (route_groups.h).
  InfoRoutes info;
  MediaPreviewRoutes media_previews;
  HostPolicy hosts;
  std::unique_ptr<HttpServer> http;
  std::thread listener;
  std::unique_ptr<RequestLog> log;

  Impl(const ServerOptions& o, std::string name)
      : core(o, std::move(name), records),
        info{.kit = core.kit,
             .options = core.options,
             .model_name = core.model_name,
             .started_at = unix_now(),
             .ready = core.ready,
             .draining = core.draining,
             .jobs = core.jobs,
             .engine = core.engine,
             .scheduler = core.scheduler,
             .metrics = core.metrics,
             .chat_limits = core.chat_limits},
        media_previews{.kit = core.kit,
                       .chat_limits = core.chat_limits,
                       .memory_admission = core.memory_admission,
                       .engine = core.engine},
        hosts(o.allowed_hosts, o.host) {
    log = std::make_unique<RequestLog>(o.log_format == "json");
    HttpServerOptions h;
    h.host = o.host;
    h.port = o.port;
    h.workers = o.http_threads > 0 ? o.http_threads : o.scheduler.parallel + o.scheduler.queue_size + 8;
    h.max_connections = o.max_connections;
    h.max_connections_per_address = o.max_connections_per_address;
    h.header_timeout_s = o.header_timeout_s;
    h.body_timeout_s = o.body_timeout_s;
    h.idle_timeout_s = 5;
    h.write_timeout_s = 30;
    h.limits.max_body_bytes = o.max_body_bytes;
    h.max_body_memory = std::max(o.max_body_memory, o.max_body_bytes);  // the largest body always fits
    http = std::make_unique<HttpServer>(
        h, [this](HttpRequest& req, HttpResponse& res) { handle(req, res); },
        [this](int status, const std::string& message) { return refused_early(status, message); },
        [this](const HttpRequest& req, const HttpResponse& res) { on_logged(req, res); });
    info.register_routes(router);
    core.register_chat_routes(router);
    core.register_job_routes(router);
    core.register_responses_routes(router);
    media_previews.register_document_routes(router);
    media_previews.register_video_routes(router);
    core.register_retrieval_routes(router);
    core.register_search_routes(router);
  }

  void cors(const HttpRequest& req, HttpResponse& res) {
    const std::string& allowed = core.options.cors_origin;
    if (allowed.empty()) return;
    const std::string& origin = req.header("Origin");
    if (allowed == "*") res.set_header("Access-Control-Allow-Origin", "*");
    else if (origin == allowed) res.set_header("Access-Control-Allow-Origin", allowed), res.set_header("Vary", "Origin");
    else return;
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Session-Id");
    res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
    res.set_header("Access-Control-Max-Age", "600");
  }

  void handle(HttpRequest& req, HttpResponse& res) {
    const std::shared_ptr<RequestRecord> rec = records.open(req);
    res.set_header("X-Request-Id", rec->id);
    try {
      if (pre_route(req, res, *rec)) return;
      switch (router.dispatch(req, res)) {
        case HttpRouter::Match::Found:
          return;
        case HttpRouter::Match::NoPath:
          if (req.method == "GET" || req.method == "HEAD") return serve_page(req, res);
          [[fallthrough]];
        case HttpRouter::Match::NoMethod:  // 404 as before, the method and path named
          return reply_error(res, ApiError(404, "not_found",
                                           "no route for " + req.method.substr(0, 20) + " " + req.path.substr(0, 200)));
      }
    } catch (const ApiError& e) {
      res.provider = nullptr;
      reply_error(res, e);
    } catch (const StoreUnavailable& e) {
      // Whatever route met it: the database is away, not the request wrong.
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["error"] = e.what();
      }
      res.provider = nullptr;
      reply_store_unavailable(res);
    } catch (const JobStoreFull& e) {
      // Nothing was stored and the server is fine: the client may try again
      // once space is freed.
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["error"] = e.what();
      }
      res.provider = nullptr;
      res.set_header("Retry-After", "30");
      reply_error(res, ApiError(507, "insufficient_storage",
                                "the job store's disk is full: nothing was stored; retry once space is freed "
                                "(the server keeps answering chat requests meanwhile)"));
    } catch (const std::exception& e) {
      // Details go to the log only: clients get no internals.
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["error"] = e.what();
      }
      res.provider = nullptr;
      reply_error(res, ApiError(500, "internal_error", "internal error (request " + rec->id + ")"));
    }
  }

  // The checks every request passes before its route: true when answered.
  bool pre_route(const HttpRequest& req, HttpResponse& res, RequestRecord& rec) {
    const bool health = rec.route == "/health" || rec.route == "/health/live";
    const bool page = rec.route == "/ (page)" && (req.method == "GET" || req.method == "HEAD");
    auto refuse = [&](const ApiError& e) {
      {
        std::lock_guard lock(rec.mutex);
        rec.fields["error"] = e.code();
      }
      reply_error(res, e);
      return true;
    };
    // Health probes address the server by whatever name the platform uses.
    if (!health) {
      if (std::string why = hosts.refusal(req.header("Host")); !why.empty())
        return refuse(ApiError(403, "host_not_allowed", why));
    }
    if (const std::string* origin = req.headers.find("Origin")) {
      if (std::string why = origin_refusal(*origin, req.header("Host"), core.options.cors_origin); !why.empty())
        return refuse(ApiError(403, "origin_not_allowed", why));
    }
    cors(req, res);
    if (req.method == "OPTIONS") {  // CORS preflight, answered before authentication as browsers require
      res.status = core.options.cors_origin.empty() ? 405 : 204;
      return true;
    }
    // The page and its files carry no secrets (the page asks for the key);
    // the API behind them needs it.
    if (!core.options.api_key.empty() && !health && !page) {
      const std::string& auth = req.header("Authorization");
      const std::string prefix = "Bearer ";
      const bool ok = auth.size() > prefix.size() && auth.compare(0, prefix.size(), prefix) == 0 &&
                      same_secret(std::string_view(auth).substr(prefix.size()), core.options.api_key);
      if (!ok) {
        res.set_header("WWW-Authenticate", "Bearer");
        return refuse(ApiError(401, "invalid_api_key", "missing or wrong API key: send 'Authorization: Bearer <key>'"));
      }
    }
    if (req.method == "POST" && takes_json(router, rec.route)) {
      if (std::string why = content_type_refusal(req.header("Content-Type")); !why.empty())
        return refuse(ApiError(415, "unsupported_media_type", why));
    }
    const bool api = !health && rec.route != "/ (page)" && rec.route != "/metrics";
    // A stored job or response is read from the store, which outlives this
    // replica: a poll that reaches it while it drains is still answered.
    const bool stored = rec.route == "/v1/jobs/{id}" || rec.route == "/v1/responses/{id}";
    if (api && !stored && core.draining.load())
      return refuse(ApiError(503, "shutting_down", "the server is shutting down"));
    if (api && !core.ready.load()) {
      res.set_header("Retry-After", "5");
      return refuse(ApiError(503, "loading", "the model is still loading; retry shortly"));
    }
    return false;
  }

  // A request the HTTP layer refused before any route saw it.
  HttpResponse refused_early(int status, const std::string& message) {
    static const std::map<int, const char*> kCodes = {
        {400, "bad_request"},  {408, "request_timeout"},   {413, "request_too_large"},  {414, "uri_too_long"},
        {431, "header_too_large"}, {500, "internal_error"}, {501, "not_implemented"}, {503, "too_many_connections"},
        {505, "http_version_not_supported"}};
    const auto code = kCodes.find(status);
    std::string why = message;
    if (status == 413) why += " (--max-body-bytes)";
    HttpResponse res;
    reply_error(res, ApiError(status, code == kCodes.end() ? "error" : code->second, why));
    core.metrics.request("other", status);
    RequestRecord rec;
    rec.route = "other";
    rec.fields["error"] = message;
    HttpRequest none;
    none.method = "-";
    log->write(none, res, rec);
    return res;
  }

  void on_logged(const HttpRequest& req, const HttpResponse& res) {
    std::shared_ptr<RequestRecord> rec = records.find(req);
    if (!rec) {
      rec = std::make_shared<RequestRecord>();
      rec->route = records.route_of(req);
    }
    core.metrics.request(rec->route, res.status);
    log->write(req, res, *rec);
    records.close(req);
  }
};

Server::Server(const ServerOptions& options, std::string model_name)
    : impl_(std::make_unique<Impl>(options, std::move(model_name))) {}

Server::~Server() {
  shutdown();
  wait();
}

int Server::start() {
  Impl& i = *impl_;
  const int port = i.http->listen();
  i.listener = std::thread([&i] { i.http->run(); });
  return port;
}

MemoryAdmission& Server::memory() { return impl_->core.memory_admission; }

void Server::attach(std::unique_ptr<Engine> engine, ModelTask task, int page_window) {
  ServerCore& c = impl_->core;
  c.task = task;
  c.chat_limits.vocab_size = static_cast<int64_t>(engine->tokenizer().vocab_size());  // ids that are tokens
  c.chat_limits.video_budget = engine->info().video_budget;
  c.engine = std::move(engine);
  c.scheduler = std::make_unique<Scheduler>(*c.engine, c.options.scheduler);
  if (page_window > 0 && c.job_runner) c.job_runner->set_window(page_window);
  c.ready.store(true);
}

void Server::attach_reranker(std::unique_ptr<Engine> reranker) { impl_->core.reranker = std::move(reranker); }

bool Server::shutdown() {
  ServerCore& c = impl_->core;
  if (c.draining.exchange(true)) return true;
  bool clean = true;
  // Stored jobs first: nothing more is claimed. A durable store gets its
  // unfinished jobs back at once, for another replica (or this one after a
  // restart) to run without waiting for their leases to run out; with the
  // memory store they run on while the queue drains and what they ended
  // with is kept.
  if (c.job_runner) c.job_runner->stop_claiming();
  if (c.job_runner && c.jobs->durable()) c.job_runner->stop();
  if (c.scheduler)
    clean = c.scheduler->drain(std::chrono::milliseconds(static_cast<int64_t>(c.options.shutdown_grace_s * 1000)));
  if (c.job_runner) c.job_runner->stop();
  // Streams end shortly after their tasks; stopping the listener earlier
  // would cut them off mid-event.
  impl_->records.wait_until_idle(std::chrono::seconds(5));
  impl_->http->stop();
  return clean;
}

void Server::wait() {
  if (impl_->listener.joinable()) impl_->listener.join();
}

}  // namespace qvl
