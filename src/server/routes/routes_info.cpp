// Everything that is not a generation: health, model list, the page's config,
// metrics, tokenize/detokenize, and the embedded web page.
#include "server/requests/request_fields.h"
#include "server/routes/route_groups.h"
#include "server/web_assets.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

using json = nlohmann::json;

namespace {

// The page's Content-Security-Policy: only its own scripts, styles and API;
// images also from data:/blob: (previews of attachments).
constexpr const char* kPageCsp =
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

}  // namespace

// OpenAI's model object plus what clients read to know what the model takes
// (OpenRouter's architecture and supported_parameters, context_length).
json InfoRoutes::model_entry() const {
  json params = json::array();
  for (std::string_view f : chat_fields()) params.push_back(std::string(f));
  return {{"id", model_name},
          {"object", "model"},
          {"created", started_at},
          {"owned_by", "qvl"},
          {"context_length", engine ? engine->slot_ctx() : 0},
          {"architecture",
           {{"modality", "text+image+video->text"},
            {"input_modalities", {"text", "image", "video"}},
            {"output_modalities", {"text"}},
            {"tokenizer", "Qwen3"},
            {"instruct_type", "chatml"}}},
          {"supported_parameters", std::move(params)}};
}

bool InfoRoutes::serves_model(const std::string& id) const {
  if (id == model_name) return true;
  const size_t slash = model_name.rfind('/');
  return slash != std::string::npos && id == model_name.substr(slash + 1);
}

// What /metrics reports of the moment: readiness, the queue and slots, the
// job store, the image cache and the loaded model.
Gauges InfoRoutes::gauges() const {
  Gauges g;
  g.ready = ready.load() && !draining.load();
  if (scheduler) {
    const SchedulerStats s = scheduler->stats();
    g.queue_depth = s.queued;
    g.queue_capacity = s.queue_size;
    g.slots_busy = s.running;
    g.slots_total = s.parallel;
  }
  g.job_store = jobs->name();
  try {
    const JobCounts counts = jobs->counts();
    for (const auto& [state, n] : counts.jobs) {
      g.jobs_by_state[job_state_name(state)] = n;
      g.jobs_stored += static_cast<int>(n);
    }
    g.job_store_bytes = counts.bytes;
    g.job_leases_taken_over = counts.leases_taken_over;
  } catch (const StoreUnavailable&) {
    g.job_store_up = false;  // the process's own figures are still worth scraping
  }
  if (ready.load()) {  // set after the engine is attached (release/acquire)
    const ImageCacheStats c = engine->image_cache_stats();
    g.image_cache_hits = c.hits;
    g.image_cache_misses = c.misses;
    g.image_cache_evictions = c.evictions;
    g.image_cache_bytes = c.bytes;
    g.image_cache_entries = c.entries;
    g.image_cache_capacity = c.capacity;
    const EngineInfo& info = engine->info();
    g.model_loaded = true;
    g.weights = weight_format_name(info.weights);
    g.kv_type = kv_type_name(info.kv_type);
    g.fast_matmul = info.fast_matmul;
    g.threads = info.threads;
    g.context_tokens = info.ctx_size;
    g.kv_cache_bytes = info.kv_cache_bytes;
    g.weights_bytes = info.weights_bytes;
  }
  return g;
}

void InfoRoutes::register_routes(HttpRouter& router) const {
  router.get("/health", [this](HttpRequest&, HttpResponse& res) {
    if (draining.load()) return reply_json(res, 503, {{"status", "shutting_down"}});
    if (!ready.load()) {
      res.set_header("Retry-After", "2");
      return reply_json(res, 503, {{"status", "loading"}});
    }
    // Never waits on the database: the store says what its last call, or
    // its change watch, met. Why goes to the log (it names the server).
    if (!jobs->unavailable().empty()) {
      res.set_header("Retry-After", std::to_string(kStoreRetryAfterS));
      return reply_json(res, 503, {{"status", "store_unavailable"}, {"store", jobs->name()}});
    }
    reply_json(res, 200, {{"status", "ok"}});
  });
  // Liveness: the process answers. Unlike /health it stays 200 while the
  // store's database is away, so an orchestrator does not restart every
  // replica (and cut their streams) for an outage a restart cannot fix.
  router.get("/health/live", [](HttpRequest&, HttpResponse& res) { reply_json(res, 200, {{"status", "alive"}}); });

  router.get("/v1/models", [this](HttpRequest&, HttpResponse& res) {
    reply_json(res, 200, {{"object", "list"}, {"data", json::array({model_entry()})}});
  });
  // A repo id has a slash ("Qwen/Qwen3-VL-2B-Instruct"), so the id is the rest of the path.
  router.get("/v1/models/{id}", R"(/v1/models/(.+))", [this](HttpRequest& req, HttpResponse& res) {
    const std::string id = req.matches[1];
    if (!serves_model(id))
      return reply_error(res, ApiError(404, "model_not_found",
                                       cat("the model '", id.substr(0, 200), "' does not exist; this server serves '",
                                           model_name, "'"),
                                       "model"));
    reply_json(res, 200, model_entry());
  });

  router.get("/v1/qvl/config", [this](HttpRequest&, HttpResponse& res) {
    const EngineInfo& info = engine->info();
    reply_json(res, 200,
               {{"model", model_name},
                {"patch_size", info.patch_size},
                {"merge_size", info.merge_size},
                {"min_pixels", info.min_pixels},
                {"max_pixels", info.max_pixels},
                {"max_image_bytes", options.media.max_image_bytes},
                {"max_video_bytes", options.media.max_video_bytes},
                {"max_body_bytes", options.max_body_bytes},
                {"context_size", info.slot_ctx},
                {"kv_type", kv_type_name(info.kv_type)},
                {"matmul_precision", info.fast_matmul ? "fast" : "exact"},  // in effect (--precision)
                {"thinking", info.thinking},  // a Thinking model: answers carry reasoning_content
                {"default_max_tokens", info.default_max_tokens},
                {"repetition_guard", options.repetition_guard.window},
                {"repetition_guard_repeats", options.repetition_guard.min_repeats},
                {"parallel", scheduler->stats().parallel},
                {"queue_size", options.scheduler.queue_size},
                {"timeout_s", options.scheduler.timeout_s}});
  });

  router.get("/metrics", [this](HttpRequest&, HttpResponse& res) {
    res.set_content(metrics.render(gauges()), "text/plain; version=0.0.4; charset=utf-8");
  });

  // llama.cpp's shapes: {"content": text} -> {"tokens": [...]}, and back.
  router.post("/tokenize", [this](HttpRequest& req, HttpResponse& res) {
    try {
      const auto body = kit.parse_body(req);
      const std::string& text = RequestField(body).object().string("content");
      if (static_cast<int64_t>(text.size()) > chat_limits.max_text_bytes)
        bad_request("content", cat("'content' is over the limit of ", chat_limits.max_text_bytes, " bytes"),
                    "string_too_long");
      reply_json(res, 200, {{"tokens", engine->tokenizer().encode(text)}});
    } catch (const ApiError& e) {
      reply_error(res, e);
    }
  });
  router.post("/detokenize", [this](HttpRequest& req, HttpResponse& res) {
    try {
      const auto body = kit.parse_body(req);
      const RequestField tokens = RequestField(body).object().at("tokens");
      std::vector<int32_t> ids;
      const int64_t vocab = static_cast<int64_t>(engine->tokenizer().vocab_size());
      for (size_t k = 0; k < tokens.array().size(); ++k) ids.push_back(static_cast<int32_t>(tokens[k].integer(0, vocab - 1)));
      reply_json(res, 200, {{"content", engine->tokenizer().decode(ids)}});
    } catch (const ApiError& e) {
      reply_error(res, e);
    }
  });
}

// The page, from the embedded assets only: nothing on disk is reachable.
void serve_page(const HttpRequest& req, HttpResponse& res) {
  const WebAsset* a = find_web_asset(req.path);
  if (!a) return reply_error(res, ApiError(404, "not_found", "no route for GET " + req.path.substr(0, 200)));
  res.set_header("Content-Security-Policy", kPageCsp);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::string(a->data), a->mime);
}

}  // namespace qvl
