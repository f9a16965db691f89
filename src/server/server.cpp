#include "server/server.h"

#include <random>
#include <thread>

#include "server/request_log.h"
#include "server/server_core.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {

using json = nlohmann::json;

namespace {

// Route patterns for logs and metrics: raw paths would let clients grow the
// label set without bound.
std::string route_of(const httplib::Request& req) {
  static const char* kRoutes[] = {"/health", "/metrics", "/v1/models", "/v1/chat/completions", "/v1/jobs",
                                  "/v1/responses", "/v1/qvl/config", "/tokenize", "/detokenize"};
  for (const char* r : kRoutes)
    if (req.path == r) return r;
  if (req.path.rfind("/v1/jobs/", 0) == 0) return "/v1/jobs/{id}";
  if (req.path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  if (req.path.rfind("/v1/responses/", 0) == 0) return "/v1/responses/{id}";
  if (req.method == "GET") return "/ (page)";
  return "other";
}

bool open_route(const std::string& route) { return route == "/health"; }

// Compares in time that depends only on the lengths, so response timing does
// not reveal how much of a guessed key was right.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

}  // namespace

void reply_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) { reply_json(res, e.status(), e.to_json()); }

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ServerCore::ServerCore(const ServerOptions& o, std::string name)
    : options(o), model_name(std::move(name)), started_at(unix_now()), jobs(o.jobs), id_rng_(std::random_device{}()) {
  json_limits.max_depth = o.json_max_depth;
  // A data: URI holding the largest image accepted, plus its header.
  json_limits.max_string_bytes = (o.media.max_image_bytes + 2) / 3 * 4 + 256;
  chat_limits.media = o.media;
  chat_limits.decode.max_encoded_bytes = o.media.max_image_bytes;
  chat_limits.repetition_guard = o.repetition_guard;
}

std::string ServerCore::new_request_id() {
  std::lock_guard lock(id_mutex_);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id_rng_()));
  return buf;
}

std::shared_ptr<RequestRecord> ServerCore::record(const httplib::Request& req) {
  std::lock_guard lock(records_mutex);
  auto& r = records[&req];
  if (!r) {  // a request the pre-routing handler never saw (e.g. refused while reading the body)
    r = std::make_shared<RequestRecord>();
    r->id = new_request_id();
    r->route = route_of(req);
  }
  return r;
}

struct Server::Impl {
  ServerCore core;
  std::thread listener;
  std::unique_ptr<RequestLog> log;

  Impl(const ServerOptions& o, std::string name) : core(o, std::move(name)) {
    log = std::make_unique<RequestLog>(o.log_format == "json");
    setup();
  }

  void setup() {
    httplib::Server& h = core.http;
    const ServerOptions& o = core.options;
    const int threads = o.http_threads > 0 ? o.http_threads : o.scheduler.parallel + o.scheduler.queue_size + 8;
    h.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    h.set_payload_max_length(o.max_body_bytes);
    // cpp-httplib's default also sets SO_REUSEPORT, which lets a second
    // server (or another program) bind the same port and take half the
    // connections; a port that is taken must be an error instead.
    h.set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    h.set_keep_alive_timeout(5);
    // Stream chunks are small writes; Nagle plus delayed ACKs would batch
    // them and make a streamed answer arrive in lumps.
    h.set_tcp_nodelay(true);
    h.set_read_timeout(30);
    h.set_write_timeout(30);
    h.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) { return pre_route(req, res); });
    h.set_error_handler([this](const httplib::Request& req, httplib::Response& res) { on_error(req, res); });
    h.set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
      on_exception(req, res, ep);
    });
    h.set_logger([this](const httplib::Request& req, const httplib::Response& res) { on_logged(req, res); });
    core.register_info_routes();
    core.register_chat_routes();
    core.register_job_routes();
    core.register_responses_routes();
    core.register_page_route();
  }

  void cors(const httplib::Request& req, httplib::Response& res) {
    const std::string& allowed = core.options.cors_origin;
    if (allowed.empty()) return;
    const std::string origin = req.get_header_value("Origin");
    if (allowed == "*") res.set_header("Access-Control-Allow-Origin", "*");
    else if (origin == allowed) res.set_header("Access-Control-Allow-Origin", allowed), res.set_header("Vary", "Origin");
    else return;
    res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
    res.set_header("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS");
    res.set_header("Access-Control-Max-Age", "600");
  }

  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res) {
    auto rec = std::make_shared<RequestRecord>();
    rec->id = core.new_request_id();
    rec->route = route_of(req);
    {
      std::lock_guard lock(core.records_mutex);
      core.records[&req] = rec;
    }
    res.set_header("X-Request-Id", rec->id);
    cors(req, res);
    if (req.method == "OPTIONS") {  // CORS preflight, answered before authentication as browsers require
      res.status = core.options.cors_origin.empty() ? 405 : 204;
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!core.options.api_key.empty() && !open_route(rec->route)) {
      const std::string auth = req.get_header_value("Authorization");
      const std::string prefix = "Bearer ";
      const bool ok = auth.size() > prefix.size() && auth.compare(0, prefix.size(), prefix) == 0 &&
                      same_secret(std::string_view(auth).substr(prefix.size()), core.options.api_key);
      if (!ok) {
        res.set_header("WWW-Authenticate", "Bearer");
        reply_error(res, ApiError(401, "invalid_api_key",
                                  "missing or wrong API key: send 'Authorization: Bearer <key>'"));
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    const bool api = rec->route != "/health" && rec->route != "/ (page)" && rec->route != "/metrics";
    if (api && core.draining.load()) {
      reply_error(res, ApiError(503, "shutting_down", "the server is shutting down"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (api && !core.ready.load()) {
      res.set_header("Retry-After", "5");
      reply_error(res, ApiError(503, "loading", "the model is still loading; retry shortly"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }

  void on_error(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_provider_ || res.status == 204) return;  // a handler answered already
    const int s = res.status;
    // cpp-httplib caps form-encoded bodies at 8 KiB whatever the payload
    // limit, and `curl -d` sends that type by default: say what to do.
    if (s == 413 && req.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0)
      return reply_error(res, ApiError(413, "request_too_large",
                                       "form-encoded bodies are limited to 8 KiB; send 'Content-Type: application/json'"));
    // The path as sent (cut short), not its route label: "other" helps nobody.
    ApiError e = s == 404   ? ApiError(404, "not_found", "no route for " + req.method + " " + req.path.substr(0, 200))
                 : s == 405 ? ApiError(405, "method_not_allowed", "method not allowed")
                 : s == 413 ? ApiError(413, "request_too_large",
                                       cat("the request body is over the limit of ", core.options.max_body_bytes,
                                           " bytes (--max-body-bytes)"))
                 : s == 414 ? ApiError(414, "uri_too_long", "the request URI is too long")
                 : s == 400 ? ApiError(400, "bad_request", "malformed HTTP request")
                            : ApiError(s, "error", "the request failed");
    reply_error(res, e);
  }

  void on_exception(const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    auto rec = core.record(req);
    try {
      std::rethrow_exception(ep);
    } catch (const ApiError& e) {
      reply_error(res, e);
    } catch (const std::exception& e) {
      // Details go to the log only: clients get no internals.
      std::lock_guard lock(rec->mutex);
      rec->fields["error"] = e.what();
      reply_error(res, ApiError(500, "internal_error", "internal error (request " + rec->id + ")"));
    } catch (...) {
      reply_error(res, ApiError(500, "internal_error", "internal error (request " + rec->id + ")"));
    }
  }

  void on_logged(const httplib::Request& req, const httplib::Response& res) {
    std::shared_ptr<RequestRecord> rec;
    {
      std::lock_guard lock(core.records_mutex);
      auto it = core.records.find(&req);
      if (it != core.records.end()) {
        rec = it->second;
        core.records.erase(it);
      }
    }
    if (!rec) {
      rec = std::make_shared<RequestRecord>();
      rec->route = route_of(req);
    }
    core.metrics.request(rec->route, res.status);
    log->write(req, res, *rec);
    core.records_cv.notify_all();
  }
};

Server::Server(const ServerOptions& options, std::string model_name)
    : impl_(std::make_unique<Impl>(options, std::move(model_name))) {}

Server::~Server() {
  shutdown();
  wait();
}

int Server::start() {
  ServerCore& c = impl_->core;
  int port = c.options.port;
  if (port == 0) {
    port = c.http.bind_to_any_port(c.options.host);
    if (port <= 0) fail("cannot listen on ", c.options.host, " (no free port)");
  } else if (!c.http.bind_to_port(c.options.host, port)) {
    fail("cannot listen on ", c.options.host, ":", port, " (address in use, or not an address of this machine)");
  }
  impl_->listener = std::thread([&c] { c.http.listen_after_bind(); });
  // httplib's stop() is a no-op until the listener runs: wait for it, so a
  // shutdown() right after start() cannot be lost.
  while (!c.http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

void Server::attach(std::unique_ptr<Engine> engine) {
  ServerCore& c = impl_->core;
  c.chat_limits.vocab_size = static_cast<int64_t>(engine->tokenizer().vocab_size());  // ids that are tokens
  c.engine = std::move(engine);
  c.scheduler = std::make_unique<Scheduler>(*c.engine, c.options.scheduler);
  c.ready.store(true);
}

bool Server::shutdown() {
  ServerCore& c = impl_->core;
  if (c.draining.exchange(true)) return true;
  bool clean = true;
  if (c.scheduler)
    clean = c.scheduler->drain(std::chrono::milliseconds(static_cast<int64_t>(c.options.shutdown_grace_s * 1000)));
  // Streams end shortly after their tasks; stopping the listener earlier
  // would cut them off mid-event.
  {
    std::unique_lock lock(c.records_mutex);
    c.records_cv.wait_for(lock, std::chrono::seconds(5), [&] {
      for (const auto& [req, rec] : c.records)
        if (rec->route != "/health" && rec->route != "/metrics") return false;
      return true;
    });
  }
  c.http.stop();
  return clean;
}

void Server::wait() {
  if (impl_->listener.joinable()) impl_->listener.join();
}

}  // namespace qvl
