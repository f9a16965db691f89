// The generation API: one loaded model answering requests (messages with
// images) token by token. Deliberately small: params structs with
// defaults, create(), generate(request, callbacks), a result struct. The CLI
// and the server are its clients; nothing here knows about either.
//
// An Engine holds a KV cache per slot: a request that extends a conversation
// held by any slot (multi-turn chat, or the same image and question prefix
// again) reuses that prefix instead of prefilling it again, and an image
// whose embeddings are in the image-embedding cache skips the vision
// encoder. generate() is not re-entrant; callers serialise.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/image_cache.h"
#include "engine/repetition_guard.h"
#include "engine/sampler.h"
#include "image/image.h"
#include "model/weight_cache_options.h"
#include "video/video.h"
#include "util/formats.h"

namespace qvl {

class MemoryAdmission;
class Tokenizer;

struct EngineParams {
  std::string model_dir;  // a local model folder
  // Unset: default_weight_format (model/default_weights.h), the one rule of
  // every front end; Engine::create resolves it.
  std::optional<WeightFormat> weights;
  // q8/q4 weights are mapped from this cache when it holds them for the
  // checkpoint, else converted and written there (model/weight_cache.h),
  // unless no_weight_cache.
  WeightCacheOptions weight_cache;
  bool no_weight_cache = false;
  // Prefill/vision products of bf16 weights (ops/matmul.h) and the attention
  // beside them; unset: exact, with fast attention beside q8/q4 weights
  // (model/weights.h, attention_precision).
  std::optional<MatmulPrecision> precision;
  int threads = 0;          // 0: physical cores
  int64_t ctx_size = 8192;  // KV cache capacity in tokens (shared out among the slots)
  // KV cache element type; unset: f16 with q8/q4 weights (whose products are
  // already approximate), f32 otherwise (exact). resolved_kv_type() resolves it.
  std::optional<KvType> kv_type;
  // Engine::create resolves `weights` first; until then an unset one counts as bf16.
  KvType resolved_kv_type() const {
    return kv_type.value_or(weights == WeightFormat::Q8 || weights == WeightFormat::Q4 ? KvType::F16 : KvType::F32);
  }
  // `weights` as Engine::create resolves it: as asked, else
  // default_weight_format for the model in model_dir on this machine.
  WeightFormat resolved_weights() const;
  // A copy with `weights` resolved (and so resolved_kv_type() final).
  EngineParams resolved() const {
    EngineParams p = *this;
    p.weights = resolved_weights();
    return p;
  }
  int slots = 1;            // sequences that may be in flight at once (begin/step/end)
  int64_t batch = 512;      // prefill chunk
  int64_t interleave_batch = 64;  // prefill chunk while other sequences decode (Engine::step of several runs)
  // An image's area after resizing (smart_resize); 0: the model's
  // preprocessor_config. A request may narrow the range, never widen it.
  int64_t min_pixels = 0;
  int64_t max_pixels = 0;
  // A front end's cap on that area (qvl serve's --max-image-pixels, which
  // bounds memory and time per image); it lowers max_pixels, the model's
  // included. 0: none.
  int64_t pixel_cap = 0;
  // Prompt tokens one video may take, its timestamps' text included
  // (VideoTokenBudget): fewer frames are sampled and smaller ones kept to fit
  // (within_token_budget, video_options_within_budget). Half the default
  // context: a clip of any length leaves the other half to the question, the
  // conversation and the answer. 0: the model's video_preprocessor_config
  // alone (a minute of 640x360 video is then ~12k tokens).
  int64_t max_video_tokens = 4096;
  // A request's max_tokens when it sets none; 0: the model's
  // generation_config max_new_tokens, else until the context is full.
  int64_t default_max_tokens = 0;
  size_t image_cache_bytes = size_t{256} << 20;  // image-embedding cache bound (LRU); 0: off
  // The process's memory budget (media/admission.h), which the front end
  // also decodes media against; it must outlive the engine. The slots' KV
  // caches are reserved from it for the engine's life, so what they may
  // commit as contexts fill is counted before any request runs
  // (MemoryBudgetExceeded when a set budget cannot hold them). None: not counted.
  MemoryAdmission* memory = nullptr;
  // Jump-forward off: every token a constraint forces (its grammar's only
  // continuation) takes a decode step of its own, instead of being fed in one
  // piece with the token before it. The answers are the same either way; the
  // switch is there to measure and compare.
  bool no_jump_forward = false;
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
  std::string text;                    // a text part when image and video are null
  std::shared_ptr<const Image> image;  // an image part
  std::shared_ptr<const Video> video;  // a video part: its sampled frames (video/video.h)
};

// A function call, as the model wrote it (Qwen3-VL's <tool_call> block) or
// as a client replays it in an assistant message of the history.
struct ToolCall {
  std::string id;         // "call_…" (the engine assigns one to each call it parses)
  std::string name;
  std::string arguments;  // JSON text (an object for every call the engine parses)
};

struct Message {
  std::string role;  // "system", "user", "assistant", "tool"
  std::vector<MessagePart> parts;
  std::vector<ToolCall> tool_calls;  // assistant messages of the history
  // Assistant messages of the history: the client's reasoning_content, which
  // a Thinking model's template renders (tokenizer/chat_template.h).
  std::optional<std::string> reasoning;
};

// A function the model may call. `definition` is the tool object as the
// client sent it (JSON text, keys in the client's order), which the chat
// template renders as is; `parameters` the JSON Schema of its arguments
// (JSON text, "" for none: any object).
struct Tool {
  std::string name;
  std::string definition;
  std::string parameters;
};

// auto: the model decides; once it opens a <tool_call> block, the block is
// constrained to a valid call of one of the tools. none: tools are shown but
// never called (no block may open). required: at least one call, and nothing
// else. function: exactly the function `tool_choice_name`.
enum class ToolChoice { Auto, None, Required, Function };

// Output constraint of response_format. JsonSchema: `schema` is the JSON
// Schema text (keys in the client's order: objects are generated in it).
struct ResponseFormat {
  enum class Type { Text, JsonObject, JsonSchema };
  Type type = Type::Text;
  std::string schema;
};

struct GenerateRequest {
  std::vector<Message> messages;
  SamplingParams sampling;
  int64_t max_tokens = 0;          // 0: EngineInfo::default_max_tokens
  // This request's image area range (0: the engine's); clamped into
  // [EngineInfo::min_pixels, EngineInfo::max_pixels].
  int64_t min_pixels = 0, max_pixels = 0;
  std::vector<std::string> stop;   // stop strings (not included in the text)
  bool ignore_eos = false;
  RepetitionGuardOptions repetition_guard;  // stops an answer caught in a loop (finish_reason "repetition")
  const std::atomic<bool>* cancel = nullptr;  // checked before every step

  int n = 1;  // choices from one prompt: prefilled once, decoded together (seeds seed, seed+1, …)
  ResponseFormat response_format;
  std::vector<Tool> tools;
  ToolChoice tool_choice = ToolChoice::Auto;
  std::string tool_choice_name;     // ToolChoice::Function
  bool parallel_tool_calls = true;  // false: at most one call per answer
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the logits before sampling
  int top_logprobs = -1;  // -1: no logprobs; 0..20: each token's logprob and that many alternatives
  bool jump_forward = true;  // false: this request's forced tokens take a step each (EngineParams::no_jump_forward)
  // Thinking models only (EngineInfo::thinking): after this many reasoning
  // tokens "</think>" is forced, so the reply starts. Unset: no limit.
  std::optional<int64_t> reasoning_budget;
  // Requests of one non-empty flow (a document job's pages) are encoded
  // (vision, prefill) one at a time, in the order their runs began: the
  // first page's first token comes as soon as it would alone, and each next
  // page joins the decoding batch as soon as it is in, instead of all of
  // them waiting on every page's encode shared out round-robin. Requests of
  // different flows, and those without one, share each step as before, so
  // a chat request is not queued behind a document.
  std::string flow;
};

// TokenLogprob (sampler.h): what top_logprobs reports per token.

// Greedy, ignoring EOS, exactly max_tokens long: the request benchmarks and
// tests replay to compare runs token for token.
GenerateRequest greedy_request(std::vector<Message> messages, int64_t max_tokens);

// What one decided token adds to one choice's answer: the text it makes
// safe to show (UTF-8 complete, clear of stop strings; may be empty) and,
// when logprobs were asked for, that token's entry.
struct ChoiceDelta {
  int choice = 0;
  std::string_view text;
  const TokenLogprob* logprob = nullptr;
};

struct GenerateCallbacks {
  // Choice 0's UTF-8-complete text pieces as they are decided; return false to stop.
  std::function<bool(std::string_view piece)> on_text;
  // Every choice's pieces, token by token (the raw text: tool-call blocks
  // included, for ToolCallParser); return false to stop the whole request.
  std::function<bool(const ChoiceDelta& delta)> on_delta;
};

struct Timings {
  double preprocess_ms = 0;  // image decode is the caller's; this is resize + patches
  double vision_ms = 0;
  double prefill_ms = 0;
  double first_token_ms = 0;  // from generate() entry to the first sampled token
  double decode_ms = 0;
  int64_t prefill_tokens = 0;  // tokens actually computed (after prefix reuse)
  int64_t decode_tokens = 0;   // forward passes after the first token
  // Forwards that fed them: fewer than decode_tokens when jump-forward fed
  // forced tokens in pieces with the token before them.
  int64_t decode_steps = 0;
  int64_t forced_tokens = 0;  // tokens a constraint forced (its only continuation), decided without a draw
  // Constrained decoding's share of the decode: each step's token mask
  // (looked up, or built once per grammar state), applied, and the grammar
  // advanced; over every choice.
  double constraint_ms = 0;
  // Images of the prompt's recomputed part whose embeddings came from the
  // image-embedding cache (hits) or from the vision encoder (misses). Images
  // inside a reused KV prefix count as neither.
  int64_t image_cache_hits = 0;
  int64_t image_cache_misses = 0;
  double prefill_tok_s() const { return prefill_ms > 0 ? prefill_tokens / (prefill_ms / 1e3) : 0; }
  double decode_tok_s() const { return decode_ms > 0 ? decode_tokens / (decode_ms / 1e3) : 0; }
};

// Why an answer ended. Stop: EOS, a stop string, or a constrained value
// complete. Length: max_tokens or the context full. ToolCalls: the answer
// made tool calls. Cancelled: the cancel flag, a callback, or end() before
// the answer was done. Repetition: it fell into a loop
// (Choice::repetition_period says how many tokens the loop spans).
enum class FinishReason { Stop, Length, ToolCalls, Cancelled, Repetition };
const char* finish_reason_name(FinishReason r);  // OpenAI's names: "stop", "length", "tool_calls", …

// One answer to the prompt.
struct Choice {
  // The answer's text; with tools, the text around the tool-call blocks
  // (the calls are in tool_calls). A Thinking model's: its reply, after "</think>".
  std::string text;
  // A Thinking model's reasoning, before "</think>" (engine/reasoning.h);
  // unset for other models.
  std::optional<std::string> reasoning;
  int64_t reasoning_tokens = 0;  // the tokens before "</think>"
  std::vector<int32_t> token_ids;  // the completion (EOS excluded)
  FinishReason finish_reason = FinishReason::Length;
  int64_t repetition_period = 0;
  std::vector<ToolCall> tool_calls;
  std::vector<TokenLogprob> logprobs;  // [token_ids] when top_logprobs >= 0
};

// The first choice's fields are the result's own (every request has one);
// with n > 1 the others follow in more_choices.
struct GenerateResult : Choice {
  std::vector<Choice> more_choices;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens whose K/V were reused (this slot's or copied from another)
  int64_t completion_tokens = 0;  // over every choice
  Timings timings;
  size_t choices() const { return 1 + more_choices.size(); }
  const Choice& choice(size_t i) const { return i == 0 ? *this : more_choices.at(i - 1); }
};

// What the loaded engine is and what it resolved each policy to, so a front
// end shows and checks requests against these and keeps no copy of its own.
struct EngineInfo {
  std::string model_dir;
  WeightFormat weights = WeightFormat::BF16;
  bool fast_matmul = false;  // --precision fast in effect (bf16 weights and a CPU with AVX512-BF16)
  KvType kv_type = KvType::F32;
  int threads = 0;
  int slots = 1;
  int64_t ctx_size = 0;  // KV capacity in tokens over all slots
  int64_t slot_ctx = 0;  // per slot: the longest prompt + answer of one request
  // An image's area after resizing; one image token per
  // (patch_size * merge_size)^2 pixels (preprocessor_config).
  int64_t min_pixels = 0, max_pixels = 0;
  int patch_size = 0, merge_size = 0;
  // EngineParams::max_video_tokens in the video processor's units: front ends
  // sample frames within it (FrameSampling::budget) before decoding.
  VideoTokenBudget video_budget;
  int64_t default_max_tokens = 0;  // a request's max_tokens when it sets none; 0: until the context is full
  int64_t vocab_size = 0;          // the logits' width (logit_bias ids are below it)
  int64_t hidden_size = 0;         // the text decoder's width: a pooled state's (PoolResult)
  size_t weights_bytes = 0;        // the weight matrices in their loaded format
  size_t kv_cache_bytes = 0;       // address space reserved for every slot's KV cache (and from the memory budget)
  double load_ms = 0;
  std::vector<std::string> unused_tensors;  // checkpoint tensors the model does not read
  // The model folder's chat template is a Thinking one: every answer starts
  // with reasoning, which "</think>" ends; response_format and tools
  // constrain only what follows it.
  bool thinking = false;
};

// A prompt's size before it runs: its tokens, and how many of them stand for images.
struct PromptSize {
  int64_t tokens = 0;
  int64_t image_tokens = 0;
};

// Retrieval (Qwen3-VL-Embedding, Qwen3-VL-Reranker: engine/retrieval.h
// builds their prompts and reads these states): each prompt rendered with the
// generation prompt, and the final-normed hidden state of its last token.
struct PoolRequest {
  std::vector<std::vector<Message>> prompts;
  // Every image's area after resizing, used as given (the retrieval scripts'
  // own range, not the checkpoint's preprocessor_config); only the front
  // end's cap (EngineParams::pixel_cap) lowers max_pixels.
  int64_t min_pixels = 0, max_pixels = 0;
  const std::atomic<bool>* cancel = nullptr;  // checked between batches
};

struct PoolResult {
  std::vector<float> hidden;           // [prompts, hidden_size]
  std::vector<int64_t> prompt_tokens;  // [prompts]
  std::vector<std::vector<int32_t>> prompt_ids;  // [prompts][tokens]: what was run
  int64_t hidden_size = 0;
  Timings timings;  // preprocess, vision and prefill (prefill_tokens: every prompt's)
  std::span<const float> state(size_t prompt) const {
    return {hidden.data() + prompt * hidden_size, static_cast<size_t>(hidden_size)};
  }
};

class Engine {
 public:
  static std::unique_ptr<Engine> create(const EngineParams& params);
  ~Engine();

  GenerateResult generate(const GenerateRequest& request, const GenerateCallbacks& callbacks = {});
  void reset();  // forget the cached conversations and image embeddings

  const EngineInfo& info() const;
  const Tokenizer& tokenizer() const;

  // Step-level generation, for a scheduler that interleaves several requests
  // on one model and one thread pool (generate() is begin, step until false,
  // end on slot 0). Each slot holds its own KV cache (ctx_size / slots
  // tokens) and prefix; a slot serves one Run at a time. step() does one unit
  // of work: the vision encoder, one prefill chunk (`batch` tokens) or one
  // decoded token (with jump-forward, also the tokens its grammar forces
  // after it, fed in the same forward); it returns false when the answer is complete (EOS, stop
  // string, length, or the request's cancel flag). begin() and step() throw
  // qvl::Error like generate(). The request and callbacks must outlive the Run.
  struct Run;
  struct RunDeleter {
    void operator()(Run* run) const;
  };
  using RunPtr = std::unique_ptr<Run, RunDeleter>;
  RunPtr begin(const GenerateRequest& request, const GenerateCallbacks& callbacks, int slot);
  // The same on the best of `free_slots` (not empty): the one where this
  // prompt reuses most and discards least of the cached prefix, else the
  // least recently used, so other conversations keep their prefixes.
  // run_slot() says which.
  RunPtr begin(const GenerateRequest& request, const GenerateCallbacks& callbacks, std::span<const int> free_slots);
  int run_slot(const Run& run) const;
  // Where a run is, and how many answer tokens it has sampled (for tests and
  // progress reports).
  enum class RunStage { Vision, Prefill, Decode, Done };
  RunStage run_stage(const Run& run) const;
  int64_t run_tokens(const Run& run) const;
  bool step(Run& run);
  // One unit of work for each of `runs` (on distinct slots) in one call: the
  // runs in the Decode stage sample their next token and then decode together
  // in one batched forward, so the weights are read once for all of them (a
  // run's forced tokens, jump-forward, as extra rows of it);
  // each other run does its own unit (one prefill chunk, shortened to
  // `interleave_batch` tokens while others decode so their tokens keep
  // coming; or its images' vision encode: whole when the run is alone, else
  // pieces worth about one such prefill chunk, so a large image does not
  // hold the other streams up either). Result i says whether runs[i] has more
  // to do, or holds the error its step threw (the other runs go on).
  struct StepResult {
    bool more = false;
    std::exception_ptr error;
  };
  // results[i] for runs[i] (same length); allocates nothing per call.
  void step(std::span<Run* const> runs, std::span<StepResult> results);
  std::vector<StepResult> step(std::span<Run* const> runs);
  GenerateResult end(Run& run);  // also for a Run abandoned early: FinishReason::Cancelled
  int slots() const { return info().slots; }
  int64_t slot_ctx() const { return info().slot_ctx; }

  // Prompts packed together through prefill, up to `batch` tokens per
  // forward (a longer prompt alone), each in a KV cache of its own sized to
  // it: the slots' cached conversations are untouched. Each prompt's state is
  // the bits it gets alone. Not re-entrant with generate() or step().
  PoolResult last_hidden_states(const PoolRequest& request);
  // Rows of the output head (lm_head, the embedding table when tied) as the
  // checkpoint stores them, f32 [ids, hidden_size]; throws for a checkpoint
  // without a head.
  std::vector<float> head_rows(std::span<const int32_t> ids) const;
  // False for an untied checkpoint without lm_head.weight (it can only
  // embed): generate() and begin() refuse.
  bool has_head() const;

  ImageCacheStats image_cache_stats() const;  // safe from any thread
  // The rendered, tokenized prompt (the tools are part of it), with each
  // image counted at the size the request's pixel range gives it; cheap (no
  // pixels are touched), so a front end can refuse a prompt that does not fit.
  std::vector<int32_t> prompt_tokens(const GenerateRequest& request);
  PromptSize prompt_size(const GenerateRequest& request);
  // The most the KV caches of a request's choices after the first commit
  // (each holds the prompt and up to max_tokens answer tokens, within a
  // slot): counted in the memory budget while the request runs, and a
  // request whose caches can never fit is refused by begin()
  // (MemoryBudgetExceeded naming n), which a front end may check first.
  uint64_t choices_kv_bytes(const GenerateRequest& request, int64_t prompt_tokens) const;
  // Checks what a request asks of the engine beyond its prompt (n, the
  // output constraint and the tools it compiles to, logit_bias ids, logprobs)
  // and compiles its grammar into the engine's cache, so a bad request fails
  // on the caller's thread: FieldError naming the field ("response_format",
  // "tools[0].function.parameters.properties.x.pattern", "logit_bias", …).
  void validate(const GenerateRequest& request);
  // What a request's sampling params resolve to (user, then generation_config,
  // then engine defaults); the seed is random when unset.
  SamplerConfig sampler_config(const SamplingParams& sampling) const;

 private:
  friend struct EngineInternals;
  struct Impl;
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace qvl
