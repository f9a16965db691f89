#include "cli/flags.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <unistd.h>

#include "io/model_source.h"
#include "util/error.h"

namespace qvl::cli {

std::vector<Flag> model_flags() {
  return join({{{"model", "DIR|REPO", "model folder or Hugging Face repo id", "", "QVL_MODEL"},
                {"weights", "FORMAT", "weight format in memory: bf16 (as stored, zero-copy), f32, q8 or q4", "bf16",
                 "QVL_WEIGHTS"},
                {"precision", "MODE",
                 "prefill and vision matmuls with bf16 weights: exact (f32 activations) or fast (activations rounded "
                 "to bf16, AVX512-BF16, ~2x faster, ~0.15% error per product); no effect on f32/q8/q4 or without "
                 "AVX512-BF16",
                 "exact", "QVL_PRECISION"},
                {"threads", "N", "compute threads (0: physical cores)", "0", "QVL_THREADS"},
                {"ctx-size", "N", "context (KV cache) size in tokens", "8192", "QVL_CTX_SIZE"},
                {"kv-type", "TYPE",
                 "KV cache element type: f32 (exact) or f16 (half the memory and decode reads; default with q8/q4 "
                 "weights)",
                 "", "QVL_KV_TYPE"},
                {"batch", "N", "prefill chunk in tokens", "512"},
                {"min-pixels", "N", "smallest image area after resizing (default: the model's)"},
                {"max-pixels", "N", "largest image area after resizing (default: the model's)"},
                {"image-cache-mb", "MB", "memory for cached image embeddings (a repeated image skips the vision encoder; 0: off)",
                 "256", "QVL_IMAGE_CACHE_MB"}},
               model_source_flags()});
}

std::vector<Flag> sampling_flags() {
  return {{"max-tokens", "N", "most tokens to generate (default: until EOS or the context is full)"},
          {"temperature", "T", "sampling temperature; 0 = greedy (default: the model's generation_config)"},
          {"top-k", "K", "sample among the K most likely tokens (0: off)"},
          {"top-p", "P", "nucleus sampling: smallest set with probability >= P"},
          {"min-p", "P", "drop tokens less likely than P x the most likely"},
          {"repetition-penalty", "R", "divide logits of tokens already seen (1: off)"},
          {"presence-penalty", "X", "subtract X from logits of generated tokens"},
          {"frequency-penalty", "X", "subtract X x count from logits of generated tokens"},
          {"seed", "N", "random seed (reproducible sampling)"},
          {"stop", "TEXT", "stop when the answer contains TEXT", "", "", true},
          {"ignore-eos", "", "keep generating past the end-of-sequence token"},
          {"repetition-guard", "N", "stop when the last N tokens of the answer loop (0: off)", "400"},
          {"repetition-guard-repeats", "R", "a loop must repeat at least R times to stop the answer", "3"}};
}

EngineParams engine_params(const Args& args) {
  if (!args.has("model")) throw UsageError("--model is required (a model folder or a Hugging Face repo id)");
  EngineParams p;
  p.model_dir = resolve_model(args.get("model"), model_source_options(args));
  try {
    p.weights = parse_weight_format(args.get("weights"));
  } catch (const Error& e) {
    throw UsageError(cat("--weights: ", e.what()));
  }
  try {
    p.precision = parse_matmul_precision(args.get("precision"));
  } catch (const Error& e) {
    throw UsageError(cat("--precision: ", e.what()));
  }
  p.threads = static_cast<int>(args.get_int("threads", 0, 1024));
  p.ctx_size = args.get_int("ctx-size", 16, 1 << 24);
  if (args.has("kv-type")) {
    try {
      p.kv_type = parse_kv_type(args.get("kv-type"));
    } catch (const Error& e) {
      throw UsageError(cat("--kv-type: ", e.what()));
    }
  }
  p.batch = args.get_int("batch", 1, 1 << 16);
  if (args.has("min-pixels")) p.min_pixels = args.get_int("min-pixels", 1, int64_t{1} << 40);
  if (args.has("max-pixels")) p.max_pixels = args.get_int("max-pixels", 1, int64_t{1} << 40);
  p.image_cache_bytes = static_cast<size_t>(args.get_int("image-cache-mb", 0, int64_t{1} << 20)) << 20;
  // Conversion progress: silent when it is quick, one updating line otherwise.
  auto start = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  auto last = std::make_shared<int>(-1);
  const std::string format = args.get("weights");
  // A terminal gets one line redrawn in place; a log gets a line per quarter.
  const bool tty = isatty(STDERR_FILENO);
  p.load_progress = [start, last, format, tty](size_t done, size_t total) {
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
  return p;
}

void apply_sampling(const Args& args, GenerateRequest& r) {
  SamplingParams& s = r.sampling;
  if (args.has("temperature")) s.temperature = args.get_double("temperature", 0, 100);
  if (args.has("top-k")) s.top_k = static_cast<int>(args.get_int("top-k", 0, 1 << 30));
  if (args.has("top-p")) s.top_p = args.get_double("top-p", 1e-9, 1);
  if (args.has("min-p")) s.min_p = args.get_double("min-p", 0, 1);
  if (args.has("repetition-penalty")) s.repetition_penalty = args.get_double("repetition-penalty", 1e-3, 100);
  if (args.has("presence-penalty")) s.presence_penalty = args.get_double("presence-penalty", -100, 100);
  if (args.has("frequency-penalty")) s.frequency_penalty = args.get_double("frequency-penalty", -100, 100);
  if (args.has("seed")) s.seed = static_cast<uint64_t>(args.get_int("seed", 0, INT64_MAX));
  if (args.has("max-tokens")) r.max_tokens = args.get_int("max-tokens", 1, 1 << 24);
  r.stop = args.all("stop");
  r.ignore_eos = args.on("ignore-eos");
  r.repetition_guard.window = args.get_int("repetition-guard", 0, 1 << 24);
  r.repetition_guard.min_repeats = static_cast<int>(args.get_int("repetition-guard-repeats", 2, 1000));
}

}  // namespace qvl::cli
