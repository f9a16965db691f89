// Everything `qvl serve` can be told beyond the model: network, limits,
// security, scheduling, jobs, logs. The member initialisers are the
// defaults; the command-line options that set them are declared in
// cli/options.cpp (visit_options).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "server/media/memory_admission.h"
#include "server/jobs/job_store.h"
#include "server/media/media.h"

namespace qvl {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;      // empty: no authentication
  std::string cors_origin;  // empty: no CORS headers
  std::string allowed_hosts = "auto";  // Host names served (request_policy.h HostPolicy)
  size_t max_body_bytes = 64u << 20;
  size_t max_body_memory = size_t(1) << 30;  // request bodies held at once (at least max_body_bytes)
  int64_t max_image_pixels = 1 << 20;
  RepetitionGuardOptions repetition_guard;  // default for requests that do not set their own
  int64_t default_max_tokens = 0;  // 0: the model's generation_config, else until the context is full
  int json_max_depth = 32;
  int64_t max_embedding_inputs = 256;  // items of one /v1/embeddings request (413 beyond)
  int64_t max_rerank_documents = 256;  // documents of one /v1/rerank request (413 beyond)
  std::string index_db;                // the search index (routes_search.cpp); empty: sqlite at STATE_DIR/search.db
  std::string rerank_model;  // with --task embed: a reranker loaded beside it for /v1/search "rerank"; empty: none
  MediaOptions media;
  MemoryAdmissionOptions memory;  // decoding's memory budget, places and time (memory_admission.h)
  SchedulerOptions scheduler;
  JobStoreOptions jobs;
  std::string log_format = "text";  // or "json"
  double shutdown_grace_s = 10;
  int http_threads = 0;  // 0: enough for every slot and queue place, plus a few for health and metrics
  // Slow and numerous clients (http/http_server.h): caps and per-request deadlines.
  size_t max_connections = 1024;
  size_t max_connections_per_address = 128;
  double header_timeout_s = 10;  // from a request's first byte to the end of its header
  double body_timeout_s = 30;    // for its body, plus 1 s per 64 KiB
};

}  // namespace qvl
