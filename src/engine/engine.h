// The generation API: one loaded model answering requests (messages with
// images) token by token. Deliberately small (STYLE.md 9): params structs with
// defaults, create(), generate(request, callbacks), a result struct. The CLI
// and the server are its clients; nothing here knows about either.
//
// An Engine holds one KV cache: consecutive requests that extend the previous
// conversation (multi-turn chat) reuse the cached prefix instead of prefilling
// it again. generate() is not re-entrant; callers serialise.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/sampler.h"
#include "image/image.h"
#include "ops/matmul.h"

namespace qvl {

class Model;
class Tokenizer;
class ThreadPool;

struct EngineParams {
  std::string model_dir;  // a local model folder
  WeightFormat weights = WeightFormat::BF16;
  int threads = 0;          // 0: physical cores
  int64_t ctx_size = 8192;  // KV cache capacity in tokens (shared out among the slots)
  int slots = 1;            // sequences that may be in flight at once (begin/step/end)
  int64_t batch = 512;      // prefill chunk
  int64_t min_pixels = 0;   // 0: the model's preprocessor_config
  int64_t max_pixels = 0;
  std::function<void(size_t done, size_t total)> load_progress;  // weight conversion
};

// Unset fields take the model's generation_config, then the engine defaults
// (temperature 1, no top-k/top-p/min-p, no penalties, a random seed).
// temperature 0 means greedy.
struct SamplingParams {
  std::optional<double> temperature, top_p, min_p;
  std::optional<int> top_k;
  std::optional<double> repetition_penalty, presence_penalty, frequency_penalty;
  std::optional<uint64_t> seed;
};

struct MessagePart {
  std::string text;                    // a text part when image is null
  std::shared_ptr<const Image> image;  // an image part
};

struct Message {
  std::string role;  // "system", "user", "assistant"
  std::vector<MessagePart> parts;
};

struct GenerateRequest {
  std::vector<Message> messages;
  SamplingParams sampling;
  int64_t max_tokens = 0;          // 0: generation_config max_new_tokens, else until the context is full
  std::vector<std::string> stop;   // stop strings (not included in the text)
  bool ignore_eos = false;
  const std::atomic<bool>* cancel = nullptr;  // checked before every step
};

struct GenerateCallbacks {
  // UTF-8-complete text pieces as they are decided; return false to stop.
  std::function<bool(std::string_view piece)> on_text;
};

struct Timings {
  double preprocess_ms = 0;  // image decode is the caller's; this is resize + patches
  double vision_ms = 0;
  double prefill_ms = 0;
  double first_token_ms = 0;  // from generate() entry to the first sampled token
  double decode_ms = 0;
  int64_t prefill_tokens = 0;  // tokens actually computed (after prefix reuse)
  int64_t decode_tokens = 0;   // forward passes after the first token
  double prefill_tok_s() const { return prefill_ms > 0 ? prefill_tokens / (prefill_ms / 1e3) : 0; }
  double decode_tok_s() const { return decode_ms > 0 ? decode_tokens / (decode_ms / 1e3) : 0; }
};

struct GenerateResult {
  std::string text;
  std::vector<int32_t> token_ids;  // the completion (EOS excluded)
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens reused from the previous request
  int64_t completion_tokens = 0;
  std::string finish_reason;  // "stop" (EOS or stop string), "length", "cancelled"
  Timings timings;
};

class Engine {
 public:
  static std::unique_ptr<Engine> create(const EngineParams& params);
  ~Engine();

  GenerateResult generate(const GenerateRequest& request, const GenerateCallbacks& callbacks = {});
  void reset();  // forget the cached conversations

  // Step-level generation, for a scheduler that interleaves several requests
  // on one model and one thread pool (generate() is begin, step until false,
  // end on slot 0). Each slot holds its own KV cache (ctx_size / slots
  // tokens) and prefix; a slot serves one Run at a time. step() does one unit
  // of work: the vision encoder, one prefill chunk (`batch` tokens) or one
  // decoded token; it returns false when the answer is complete (EOS, stop
  // string, length, or the request's cancel flag). begin() and step() throw
  // qvl::Error like generate(). The request and callbacks must outlive the Run.
  struct Run;
  struct RunDeleter {
    void operator()(Run* run) const;
  };
  using RunPtr = std::unique_ptr<Run, RunDeleter>;
  RunPtr begin(const GenerateRequest& request, const GenerateCallbacks& callbacks, int slot);
  bool step(Run& run);
  GenerateResult end(Run& run);  // also for a Run abandoned early: finish_reason "cancelled"
  int slots() const;
  int64_t slot_ctx() const;  // tokens per slot

  // Lower-level pieces for benchmarks and tests.
  const Model& model() const;
  Model& model();
  const Tokenizer& tokenizer() const;
  const EngineParams& params() const;
  double load_ms() const;
  int threads() const;
  ThreadPool& pool();  // the compute threads (benchmarks drive the model directly)
  size_t kv_cache_reserved_bytes() const;
  std::vector<int32_t> prompt_tokens(const std::vector<Message>& messages);  // the rendered, tokenized prompt
  // What a request's sampling params resolve to (user, then generation_config,
  // then engine defaults); the seed is random when unset.
  SamplerConfig sampler_config(const SamplingParams& sampling) const;

 private:
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qvl
