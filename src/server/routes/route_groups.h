// The route groups that generate nothing, each given only what it reads; the
// server (server.cpp) owns them, after the core they point into. The groups
// that generate are ServerCore's (server_core.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "engine/scheduler.h"
#include "http/http_message.h"
#include "http/http_router.h"
#include "server/requests/chat_request.h"
#include "server/jobs/job_store.h"
#include "server/media/memory_admission.h"
#include "server/observability/metrics.h"
#include "server/request_kit.h"
#include "server/server_options.h"

namespace qvl {

// routes_info.cpp: /health, /health/live, /metrics, /v1/models, /v1/qvl/config,
// /tokenize and /detokenize.
struct InfoRoutes {
  const RequestKit& kit;
  const ServerOptions& options;
  const std::string& model_name;
  int64_t started_at = 0;  // Unix seconds: /v1/models' "created"
  const std::atomic<bool>& ready;
  const std::atomic<bool>& draining;
  const std::unique_ptr<JobStore>& jobs;
  const std::unique_ptr<Engine>& engine;        // set once the model is attached (ready)
  const std::unique_ptr<Scheduler>& scheduler;  // likewise
  Metrics& metrics;
  const ChatLimits& chat_limits;

  void register_routes(HttpRouter& router) const;

 private:
  // The /v1/models entry of the served model, and the ids it answers to
  // (its name and, for a Hugging Face repo id, the part after the owner).
  nlohmann::json model_entry() const;
  bool serves_model(const std::string& id) const;
  Gauges gauges() const;
};

// A GET no route took: the embedded web page's files (routes_info.cpp).
void serve_page(const HttpRequest& req, HttpResponse& res);

// What a client asks before it sends media: a clip's frames
// (routes_videos.cpp) and a document's pages (routes_documents.cpp), with
// their token costs.
struct MediaPreviewRoutes {
  const RequestKit& kit;
  const ChatLimits& chat_limits;
  ServerMemoryAdmission& memory_admission;
  const std::unique_ptr<Engine>& engine;  // set once the model is attached

  void register_video_routes(HttpRouter& router) const;
  void register_document_routes(HttpRouter& router) const;
};

}  // namespace qvl
