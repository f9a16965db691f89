#include "server/server_options.h"

#include <filesystem>

#include "util/error.h"

namespace qvl {

std::vector<Flag> server_flags() {
  return {
      {"host", "ADDR", "address to listen on (0.0.0.0 exposes the server to the network)", "127.0.0.1", "QVL_HOST"},
      {"port", "N", "TCP port", "8080", "QVL_PORT"},
      {"api-key", "KEY", "require 'Authorization: Bearer KEY' on every route but /health", "", "QVL_API_KEY"},
      {"cors-origin", "ORIGIN", "allow cross-origin browser requests from ORIGIN ('*' for any; default: none)"},
      {"parallel", "N", "sequences generated at once (each gets --ctx-size / N tokens of context)", "1", "QVL_PARALLEL"},
      {"queue-size", "N", "requests that may wait for a slot; more get 429", "16", "QVL_QUEUE_SIZE"},
      {"timeout", "SECONDS", "deadline of a request from arrival to its last token (0: none)", "180", "QVL_TIMEOUT"},
      {"max-body-bytes", "N", "largest request body", "67108864"},
      {"max-image-bytes", "N", "largest image file (encoded)", "20971520"},
      {"max-image-pixels", "N", "cap on an image's area after resizing (per-request max_pixels is clamped to it)",
       "1048576"},
      {"default-max-tokens", "N", "completion limit when a request gives none (0: the model's, else the context)", "0"},
      {"repetition-guard", "N",
       "stop an answer whose last N tokens loop (finish_reason \"repetition\"); 0: off; requests may override", "400"},
      {"repetition-guard-repeats", "R", "a loop must repeat at least R times to stop the answer", "3"},
      {"allowed-media-dir", "DIR", "allow image_url file paths inside DIR (default: no local files)"},
      {"allow-remote-images", "", "allow http(s) image URLs (size cap, timeout, public addresses only)"},
      {"allow-private-remote-images", "", "with --allow-remote-images: also loopback, private and link-local hosts"},
      {"remote-timeout", "SECONDS", "time limit for fetching one remote image", "10"},
      {"job-ttl", "SECONDS", "how long a finished async job's result is kept", "600"},
      {"max-jobs", "N", "most async jobs kept at once", "256"},
      {"log-format", "FORMAT", "request log lines on stderr: text or json", "text", "QVL_LOG_FORMAT"},
      {"shutdown-grace", "SECONDS", "on SIGINT/SIGTERM, time given to running requests before they are cancelled",
       "10"},
      {"http-threads", "N", "HTTP worker threads (0: parallel + queue-size + 8)", "0"},
  };
}

ServerOptions server_options(const Args& a) {
  ServerOptions o;
  o.host = a.get("host");
  o.port = static_cast<int>(a.get_int("port", 0, 65535));
  o.api_key = a.get("api-key");
  o.cors_origin = a.get("cors-origin");
  o.scheduler.parallel = static_cast<int>(a.get_int("parallel", 1, 256));
  o.scheduler.queue_size = static_cast<int>(a.get_int("queue-size", 0, 1 << 16));
  o.scheduler.timeout_s = a.get_double("timeout", 0, 1e7);
  o.max_body_bytes = static_cast<size_t>(a.get_int("max-body-bytes", 1024, int64_t{1} << 34));
  o.media.max_image_bytes = static_cast<size_t>(a.get_int("max-image-bytes", 1, int64_t{1} << 32));
  o.max_image_pixels = a.get_int("max-image-pixels", 1024, int64_t{1} << 32);
  o.default_max_tokens = a.get_int("default-max-tokens", 0, 1 << 24);
  o.repetition_guard.window = a.get_int("repetition-guard", 0, 1 << 24);
  o.repetition_guard.min_repeats = static_cast<int>(a.get_int("repetition-guard-repeats", 2, 1000));
  if (a.has("allowed-media-dir")) {
    std::error_code ec;
    if (!std::filesystem::is_directory(a.get("allowed-media-dir"), ec))
      throw UsageError(cat("serve: --allowed-media-dir ", a.get("allowed-media-dir"), " is not a folder"));
    o.media.allowed_media_dir = a.get("allowed-media-dir");
  }
  o.media.allow_remote = a.on("allow-remote-images");
  o.media.allow_private_remote = a.on("allow-private-remote-images");
  o.media.remote_timeout_s = a.get_double("remote-timeout", 0.1, 3600);
  o.jobs.ttl_s = a.get_double("job-ttl", 0, 1e7);
  o.jobs.max_jobs = static_cast<int>(a.get_int("max-jobs", 1, 1 << 20));
  o.log_format = a.get("log-format");
  if (o.log_format != "text" && o.log_format != "json") throw UsageError("serve: --log-format must be text or json");
  o.shutdown_grace_s = a.get_double("shutdown-grace", 0, 3600);
  o.http_threads = static_cast<int>(a.get_int("http-threads", 0, 4096));
  return o;
}

}  // namespace qvl
