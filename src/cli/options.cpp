#include "cli/options.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "io/model_config.h"
#include "util/error.h"

namespace qvl::cli {

void visit_options(ModelSourceOptions& o, Args& v) {
  v(o.revision, "revision", "REV", "branch, tag or commit of a hub model");
  v(o.offline, "offline", "never use the network: only models already in the cache").env("HF_HUB_OFFLINE");
  v(o.hf_token, "hf-token", "TOKEN", "Hugging Face access token for gated or private repos").env("HF_TOKEN");
  v(o.source, "source", "NAME", "hub to download from (hf and ms are short for the two)")
      .choices({"huggingface", "modelscope", "hf", "ms"});
  v(o.endpoint, "endpoint", "URL", "hub address")
      .unset(
          "$HF_ENDPOINT or https://huggingface.co; $MODELSCOPE_ENDPOINT or https://www.modelscope.cn with "
          "--source modelscope");
}

void visit_task(std::optional<ModelTask>& task, Args& v) {
  v(task, "task", "TASK",
    "what the model is used for: chat (generation), embed (Qwen3-VL-Embedding: /v1/embeddings) or rerank "
    "(Qwen3-VL-Reranker: /v1/rerank); the checkpoints' config.json does not say which")
      .choices({ModelTask::Chat, ModelTask::Embed, ModelTask::Rerank}, task_name)
      .unset("what the folder ships (scripts/qwen3_vl_embedding.py or scripts/qwen3_vl_reranker.py), else chat")
      .env("QVL_TASK");
}

void visit_options(ModelChoice& m, Args& v) {
  v(m.model, "model", "DIR|REPO", "model folder or Hugging Face repo id").env("QVL_MODEL");
  visit_options(m.source, v);
}

void visit_options(EngineParams& p, Args& v) {
  v(p.weights, "weights", "FORMAT",
    "weight format in memory: bf16 (as stored, zero-copy), f32, q8 or q4; an FP8 checkpoint is dequantized "
    "exactly into it")
      .choices({WeightFormat::BF16, WeightFormat::F32, WeightFormat::Q8, WeightFormat::Q4}, weight_format_name)
      .unset("bf16 if the checkpoint takes at most half the memory (an FP8 one starts at q8), else q8 if that does, else q4")
      .env("QVL_WEIGHTS");
  v(p.no_weight_cache, "no-weight-cache", "q8/q4: quantize at load without reading or writing the weight cache")
      .env("QVL_NO_WEIGHT_CACHE");
  visit_options(p.weight_cache, v);
  v(p.precision, "precision", "MODE",
    "prefill and vision matmuls with bf16 weights: exact (f32 activations) or fast (activations rounded to bf16, "
    "AVX512-BF16, AMX or Arm BF16, ~2x faster, ~0.15% error per product); and prefill and vision attention: exact (f32) or "
    "fast (int8 or bf16 products on AMX or AVX512-VNNI/BF16, f32 softmax); no effect on f32 weights, and on bf16 "
    "matmuls none on a CPU without AMX whose bf16 dot product is not faster than its f32 FMA (then exact is the "
    "faster)")
      .choices({MatmulPrecision::Exact, MatmulPrecision::Fast}, matmul_precision_name)
      .unset("exact, with fast attention beside q8/q4 weights")
      .env("QVL_PRECISION");
  v(p.threads, "threads", "N", "compute threads (0: physical cores)").range(0, 1024).env("QVL_THREADS");
  v(p.ctx_size, "ctx-size", "N",
    "context (KV cache) size in tokens, shared by serve's parallel sequences (serve without it: 8192 per sequence)")
      .range(16, 1 << 24)
      .env("QVL_CTX_SIZE");
  v(p.kv_type, "kv-type", "TYPE", "KV cache element type: f32 (exact) or f16 (half the memory and decode reads)")
      .choices({KvType::F32, KvType::F16}, kv_type_name)
      .unset("f16 with q8/q4 weights, else f32")
      .env("QVL_KV_TYPE");
  v(p.batch, "batch", "N", "prefill chunk in tokens").range(1, 1 << 16);
  v(p.min_pixels, "min-pixels", "N", "smallest image area after resizing")
      .range(1, int64_t{1} << 40)
      .unset("the model's");
  v(p.max_pixels, "max-pixels", "N", "largest image area after resizing")
      .range(1, int64_t{1} << 40)
      .unset("the model's");
  v(p.max_video_tokens, "max-video-tokens", "N",
    "prompt tokens one video may take, timestamps included: fewer and smaller frames are sampled to fit (a "
    "request's own limits may only lower it); 0: the model's own limits, ~12k tokens for a minute of video")
      .range(0, 1 << 24)
      // From kMinGroupVisionTokens + kMaxGroupTextTokens up, one temporal
      // group of any clip fits, so no clip is refused for the budget.
      .check([](const int64_t& n) {
        return n == 0 || n >= kMinGroupVisionTokens + kMaxGroupTextTokens
                   ? std::string()
                   : cat("must be 0 (off) or at least ", kMinGroupVisionTokens + kMaxGroupTextTokens);
      })
      .env("QVL_MAX_VIDEO_TOKENS");
  v(p.image_cache_bytes, "image-cache-mb", "MB",
    "memory for cached image embeddings (a repeated image skips the vision encoder; 0: off)")
      .range(0, 1 << 20)
      .unit(1 << 20)
      .env("QVL_IMAGE_CACHE_MB");
  v(p.no_jump_forward, "no-jump-forward",
    "give each token a constraint forces (its grammar's only continuation) a decode step of its own instead of "
    "feeding it with the token before it; the same answers, only slower (to compare)")
      .env("QVL_NO_JUMP_FORWARD");
}

void visit_options(WeightCacheOptions& c, Args& v) {
  v(c.dir, "weight-cache", "DIR", "folder of the q8/q4 weight cache (qvl quantize, docs/weight-cache.md)")
      .unset("$QVL_WEIGHT_CACHE, else qvl-weights beside the Hugging Face cache");
  v(c.max_bytes, "weight-cache-max-gb", "GB",
    "size bound of the weight cache folder (least recently used files removed past it)")
      .range(1, 1 << 20)
      .unit(1 << 30)
      .env("QVL_WEIGHT_CACHE_MAX_GB");
}

void visit_options(RepetitionGuardOptions& g, Args& v) {
  v(g.window, "repetition-guard", "N", "stop an answer whose last N tokens loop (finish_reason \"repetition\"; 0: off)")
      .range(0, 1 << 24);
  v(g.min_repeats, "repetition-guard-repeats", "R", "a loop must repeat at least R times to stop the answer")
      .range(2, 1000);
}

void visit_options(GenerateRequest& r, Args& v) {
  SamplingParams& s = r.sampling;
  v(r.max_tokens, "max-tokens", "N", "most tokens to generate")
      .range(1, 1 << 24)
      .unset("the model's generation_config, else until the context is full");
  v(s.temperature, "temperature", "T", "sampling temperature; 0 = greedy")
      .range(0, 100)
      .unset("the model's generation_config");
  v(s.top_k, "top-k", "K", "sample among the K most likely tokens (0: off)").range(0, 1 << 30).unset("the model's");
  v(s.top_p, "top-p", "P", "nucleus sampling: smallest set with probability >= P").range(1e-9, 1).unset("the model's");
  v(s.min_p, "min-p", "P", "drop tokens less likely than P x the most likely").range(0, 1).unset("the model's");
  v(s.repetition_penalty, "repetition-penalty", "R", "divide logits of tokens already seen (1: off)")
      .range(1e-3, 100)
      .unset("the model's");
  v(s.presence_penalty, "presence-penalty", "X", "subtract X from logits of generated tokens")
      .range(-100, 100)
      .unset("0");
  v(s.frequency_penalty, "frequency-penalty", "X", "subtract X x count from logits of generated tokens")
      .range(-100, 100)
      .unset("0");
  v(s.seed, "seed", "N", "random seed (reproducible sampling)").range(0, INT64_MAX).unset("random");
  v(r.stop, "stop", "TEXT", "stop when the answer contains TEXT");
  v(r.ignore_eos, "ignore-eos", "keep generating past the end-of-sequence token");
  visit_options(r.repetition_guard, v);
}

void visit_options(PromptOptions& p, Args& v) {
  v(p.images, "image", "FILE", "an image (JPEG, PNG, WebP, BMP, GIF) or a PDF (its pages) for the first message");
  v(p.videos, "video", "FILE",
    "a video (MP4/MOV, WebM/MKV, AVI, GIF) for the first message; with --image, media enter in the order given");
  // The ranges of media/video_options.h, which PromptOptions::video_options checks again.
  v(p.video_fps, "video-fps", "X", "frames sampled per second of each --video").range(kMinVideoFps, kMaxVideoFps);
  v(p.video_max_frames, "video-max-frames", "N", "at most N frames sampled from each --video")
      .range(1, static_cast<int>(kMaxVideoFrames));
  v(p.system, "system", "TEXT", "a system message");
}

void visit_options(PdfRenderRequest& r, Args& v) {
  v(r.pages, "pages", "LIST", "pages of each PDF --image, in the order given, like 1-3,7 or 5- (no page twice)")
      .unset("every page, at most " + std::to_string(PdfLimits{}.max_pages));
  v(r.dpi, "dpi", "DPI", "resolution PDF pages are rendered at (a page too large for 4096 x 4096 px at it gets a lower one)")
      .range(PdfLimits{}.min_dpi, PdfLimits{}.max_dpi);
}

void visit_memory_budget(MemoryAdmissionOptions& o, Args& v) {
  v(o.memory_budget_bytes, "memory-budget", "BYTES",
    "memory for decoded media (pixels until preprocessed, decoder buffers) and the KV caches together; the KV "
    "caches of --ctx-size are reserved from it at start (too small a budget is an error then), and media that "
    "cannot fit beside them is refused (serve: 413, or 429 when it must wait past --image-time-limit)")
      .range(1 << 20, int64_t{1} << 40)
      .unset("the KV caches plus 1 GiB for media")
      .env("QVL_MEMORY_BUDGET");
}

MemoryAdmissionOptions cli_memory(MemoryAdmissionOptions o) {
  o.time_limit_s = 0;
  return o;
}

void fail_over_budget(const std::string& what, const MediaRefusal& e) {
  fail(what, ": ", e.what(), "; send a smaller one, or raise --memory-budget");
}

void visit_options(ServerOptions& o, Args& v) {
  v(o.host, "host", "ADDR", "address to listen on (0.0.0.0 exposes the server to the network)").env("QVL_HOST");
  v(o.port, "port", "N", "TCP port (0: any free one)").range(0, 65535).env("QVL_PORT");
  v(o.api_key, "api-key", "KEY", "require 'Authorization: Bearer KEY' on the API (not on /health or the web page)")
      .unset("none")
      .env("QVL_API_KEY");
  v(o.cors_origin, "cors-origin", "ORIGIN", "allow cross-origin browser requests from ORIGIN ('*' for any)")
      .unset("none");
  v(o.allowed_hosts, "allowed-hosts", "LIST",
    "Host names served, comma-separated ('.example.com' with subdomains; '*': any; 'auto': loopback names when "
    "bound to loopback, else any)")
      .env("QVL_ALLOWED_HOSTS");
  v(o.scheduler.parallel, "parallel", "N",
    "sequences generated at once, decoding together (each gets --ctx-size / N tokens of context; --ctx-size unset: "
    "8192 each)")
      .range(1, 256)
      .unset("from memory and cores: 4 per core, at most 8, as many as memory holds at 8192 tokens each")
      .env("QVL_PARALLEL");
  v(o.scheduler.queue_size, "queue-size", "N", "requests that may wait for a slot; more get 429")
      .range(0, 1 << 16)
      .env("QVL_QUEUE_SIZE");
  v(o.scheduler.timeout_s, "timeout", "SECONDS", "deadline of a request from arrival to its last token (0: none)")
      .range(0, 1e7)
      .env("QVL_TIMEOUT");
  v(o.max_body_bytes, "max-body-bytes", "N", "largest request body").range(1024, int64_t{1} << 34);
  v(o.max_body_memory, "max-body-memory", "N",
    "request body bytes held at once across connections (at least --max-body-bytes); the request that would pass "
    "it gets 503")
      .range(1 << 20, int64_t{1} << 40);
  v(o.media.max_image_bytes, "max-image-bytes", "N", "largest image file (encoded)").range(1, int64_t{1} << 32);
  v(o.media.pdf.max_bytes, "max-pdf-bytes", "N",
    "largest PDF file (encoded), in a file part or an image_url alike (qvl run and the C API cap one the same)")
      .range(1, int64_t{1} << 32);
  v(o.max_embedding_inputs, "max-embedding-inputs", "N", "inputs of one /v1/embeddings request; more get 413")
      .range(1, 1 << 20);
  v(o.max_rerank_documents, "max-rerank-documents", "N", "documents of one /v1/rerank request; more get 413")
      .range(1, 1 << 20);
  v(o.index_db, "index-db", "URL",
    "with --task embed: the search index of /v1/index and /v1/search, a SQLite file (sqlite:PATH) or "
    "postgresql://USER@HOST/DB with pgvector")
      .unset("sqlite:STATE_DIR/search.db")
      .env("QVL_INDEX_DB");
  v(o.rerank_model, "rerank-model", "DIR",
    "with --task embed: a Qwen3-VL-Reranker model folder or repo id loaded beside the embedding model, so "
    "POST /v1/search can rescore its best pages (\"rerank\": K)")
      .unset("none: /v1/search refuses rerank")
      .env("QVL_RERANK_MODEL");
  v(o.max_image_pixels, "max-image-pixels", "N",
    "cap on an image's area after resizing (per-request max_pixels is clamped to it)")
      .range(1024, int64_t{1} << 32);
  visit_memory_budget(o.memory, v);
  v(o.memory.max_decodes, "max-image-decodes", "N", "images decoded at once across requests").range(1, 256);
  v(o.memory.time_limit_s, "image-time-limit", "SECONDS",
    "time for one request's image fetching, admission and decoding (0: none)")
      .range(0, 3600);
  v(o.media.pdf.max_pages, "max-pdf-pages", "N",
    "PDF pages rendered per request (file parts and PDF image_urls; each page also counts as an image)")
      .range(1, 1024);
  v(o.media.pdf.max_total_pixels, "max-pdf-pixels", "N",
    "rendered PDF pixels per request (all pages together; a page over 4096 x 4096 px is rendered at a lower dpi)")
      .range(1 << 20, int64_t{1} << 32);
  v(o.default_max_tokens, "default-max-tokens", "N",
    "completion limit when a request gives none (0: the model's, else the context)")
      .range(0, 1 << 24);
  visit_options(o.repetition_guard, v);
  v(o.media.allowed_media_dir, "allowed-media-dir", "DIR", "allow image_url file paths inside DIR")
      .unset("no local files")
      .check([](const std::string& dir) {
        std::error_code ec;
        return std::filesystem::is_directory(dir, ec) ? "" : "is not a folder";
      });
  v(o.media.allow_remote, "allow-remote-images", "allow http(s) image URLs (size cap, timeout, public addresses only)");
  v(o.media.allow_private_remote, "allow-private-remote-images",
    "with --allow-remote-images: also loopback, private and link-local hosts");
  v(o.media.remote_timeout_s, "remote-timeout", "SECONDS", "time limit for fetching one remote image").range(0.1, 3600);
  v(o.jobs.ttl_s, "job-ttl", "SECONDS", "how long a finished async job's result is kept").range(0, 1e7);
  v(o.jobs.max_jobs, "max-jobs", "N", "most async jobs kept at once").range(1, 1 << 20);
  v(o.jobs.max_bytes, "max-job-bytes", "BYTES", "most bytes of job bodies and results kept at once")
      .range(1 << 20, int64_t{1} << 40);
  v(o.jobs.url, "jobs-db", "URL",
    "where async jobs and stored responses are kept: sqlite:PATH, postgresql://USER@HOST/DB (one queue "
    "shared by replicas), or memory (gone with the process)")
      .unset("sqlite:STATE_DIR/jobs.db")
      .env("QVL_JOBS_DB");
  v(o.jobs.state_dir, "state-dir", "DIR", "folder of qvl's state (the default job store)")
      .unset("$QVL_STATE_DIR, else $XDG_STATE_HOME/qvl, else ~/.local/state/qvl");
  v(o.jobs.lease_s, "job-lease", "SECONDS",
    "a running job's lease: a job whose server stops renewing it is run again after this long")
      .range(1, 3600);
  v(o.log_format, "log-format", "FORMAT", "request log lines on stderr")
      .choices({"text", "json"})
      .env("QVL_LOG_FORMAT");
  v(o.shutdown_grace_s, "shutdown-grace", "SECONDS",
    "on SIGINT/SIGTERM, time given to running requests before they are cancelled")
      .range(0, 3600);
  v(o.http_threads, "http-threads", "N", "HTTP worker threads (0: parallel + queue-size + 8)").range(0, 4096);
  v(o.max_connections, "max-connections", "N",
    "open connections at most; at the cap the longest-idle one is closed for a new one").range(8, 1 << 20);
  v(o.max_connections_per_address, "max-connections-per-address", "N", "open connections from one client address at most")
      .range(1, 1 << 20);
  v(o.header_timeout_s, "header-timeout", "SECONDS", "time for a request's header to arrive from its first byte (then 408)")
      .range(0.1, 3600);
  v(o.body_timeout_s, "body-timeout", "SECONDS", "time for a request's body to arrive, plus 1 s per 64 KiB (then 408)")
      .range(0.1, 3600);
}

VideoTokenBudget video_token_budget(const EngineParams& params) {
  const PreprocessorConfig& frames = ModelFolder::open(params.model_dir).video_preprocessor.frames;
  return {params.max_video_tokens, frames.factor(), frames.temporal_patch_size};
}

EngineParams engine_params(const ModelChoice& model, EngineParams p) {
  if (model.model.empty()) throw UsageError("--model is required (a model folder or a Hugging Face repo id)");
  p.model_dir = resolve_model(model.model, model.source);
  p.weights = p.resolved_weights();
  p.load_progress = conversion_progress(*p.weights);
  return p;
}

std::function<void(size_t, size_t)> conversion_progress(WeightFormat weights) {
  // Conversion progress: silent when it is quick, one updating line otherwise.
  auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  auto last = std::make_shared<int>(-1);
  const std::string format = weight_format_name(weights);
  // A terminal gets one line redrawn in place; a log gets a line per quarter.
  const bool tty = isatty(STDERR_FILENO);
  return [start, last, format, tty](size_t done, size_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *start).count();
    if (s < 1.0 || total == 0) return;
    const int pct = static_cast<int>(100.0 * done / total);
    const int step = tty ? pct : pct / 25 * 25;
    if (step == *last) return;
    *last = step;
    if (tty) std::fprintf(stderr, "\rconverting weights to %s: %3d%%%s", format.c_str(), pct, pct >= 100 ? "\n" : "");
    else std::fprintf(stderr, "converting weights to %s: %d%%\n", format.c_str(), step);
    std::fflush(stderr);
  };
}

}  // namespace qvl::cli
