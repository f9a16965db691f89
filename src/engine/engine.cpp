// The engine's loading and its edges: create(), begin() (the slot, the
// reused prefix, the vision job and the answers of a run), and what a front
// end reads (info, prompt counts, validation). The steps of a run are in
// generation.cpp.
#include "engine/engine.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/engine_impl.h"
#include "engine/engine_internals.h"
#include "model/default_weights.h"
#include "util/error.h"

namespace qvl {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::ToolCalls: return "tool_calls";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Repetition: return "repetition";
  }
  return "?";
}

Engine::Impl::Impl(const EngineParams& p, int threads, ModelFolder folder,
                   const std::function<std::unique_ptr<Model>(ModelFolder, ThreadPool&)>& load)
    : params(p),
      pool(threads),
      tokenizer(Tokenizer::load(folder.tokenizer_json)),
      chat_template(ChatTemplate::from_source(folder.chat_template)),
      model(load(std::move(folder), pool)),
      image_cache(p.image_cache_bytes),
      key_seed(uint64_t{std::random_device{}()} << 32 | std::random_device{}()) {
  const ModelFolder& f = model->folder();
  const PreprocessorConfig& pp = f.preprocessor;
  // --ctx-size is shared out among the slots, so memory does not grow with them.
  const int64_t slot_ctx = p.ctx_size / std::max(1, p.slots);
  for (int i = 0; i < std::max(1, p.slots); ++i)
    slots.push_back({model->text().make_cache(slot_ctx, p.resolved_kv_type()), {}, {}});
  vision_budget = text_matmul_flops_per_token(model->config().text) *
                  static_cast<double>(std::max(p.interleave_batch, kMinPrefillPiece));
  tool_call_open = tokenizer.token_id("<tool_call>");
  if (chat_template.thinking()) {
    think_close = tokenizer.token_id("</think>");
    if (think_close < 0)
      fail("model folder ", p.model_dir, ": the chat template is Qwen3-VL-Thinking's but tokenizer.json has no "
           "</think> token to end the reasoning with");
  }
  eos = f.generation.eos_token_ids;
  if (eos.empty()) {
    for (const char* t : {"<|im_end|>", "<|endoftext|>"})
      if (int32_t id = tokenizer.token_id(t); id >= 0) eos.push_back(id);
  }

  info.model_dir = p.model_dir;
  info.weights = model->format();
  info.fast_matmul = model->fast_matmul();
  info.thinking = chat_template.thinking();
  info.kv_type = p.resolved_kv_type();
  info.threads = pool.size();
  info.slots = static_cast<int>(slots.size());
  info.ctx_size = p.ctx_size;
  info.slot_ctx = slot_ctx;
  // The image area range: the model's, or the user's; then the front end's
  // cap (pixel_cap) bounds the largest, and the smallest never exceeds it.
  info.max_pixels = p.max_pixels > 0 ? p.max_pixels : pp.max_pixels;
  if (p.pixel_cap > 0) info.max_pixels = info.max_pixels > 0 ? std::min(info.max_pixels, p.pixel_cap) : p.pixel_cap;
  info.min_pixels = std::min(p.min_pixels > 0 ? p.min_pixels : pp.min_pixels, info.max_pixels);
  info.patch_size = pp.patch_size;
  info.merge_size = pp.merge_size;
  const PreprocessorConfig& vp = f.video_preprocessor.frames;
  info.video_budget = {p.max_video_tokens, vp.factor(), vp.temporal_patch_size};
  // No answer outgrows its slot, so "until the context is full" is slot_ctx.
  info.default_max_tokens = p.default_max_tokens > 0 ? p.default_max_tokens
                                                     : f.generation.max_new_tokens.value_or(0);
  if (info.default_max_tokens <= 0) info.default_max_tokens = slot_ctx;
  info.vocab_size = model->config().text.vocab_size;
  info.hidden_size = model->config().text.hidden_size;
  info.weights_bytes = model->weights().matrix_bytes;
  for (const Slot& s : slots) info.kv_cache_bytes += s.cache.reserved_bytes();
  if (MemoryAdmission* memory = p.memory) {
    // The caches hold address space only so far: counted now, before a
    // request can make them commit it.
    kv_reserved = memory->reserve_standing(info.kv_cache_bytes);
    if (!kv_reserved) {
      const uint64_t held = memory->reserved_bytes();
      throw MemoryBudgetExceeded(
          cat("the KV caches of --ctx-size ", p.ctx_size, " (", kv_type_name(info.kv_type), ") need ",
              info.kv_cache_bytes, " bytes (", mebibytes(info.kv_cache_bytes), "), over the memory budget of ",
              memory->budget(), " bytes (--memory-budget)",
              held > 0 ? cat(" beside the ", held, " bytes its media hold") : std::string(),
              "; lower --ctx-size, use --kv-type f16, or raise --memory-budget"));
    }
  }
  info.unused_tensors = model->weights().unused;
}

ConstraintCache& Engine::Impl::constraints() {
  std::lock_guard lock(constraint_cache_mutex);
  if (!constraint_cache) {
    const int64_t vocab = model->config().text.vocab_size;
    std::vector<std::string> bytes(static_cast<size_t>(vocab));
    // Special tokens (<|im_end|>, <|image_pad|>, …) never spell text; added
    // tokens that are not special (<tool_call>) do.
    for (int64_t id = 0; id < vocab && id < static_cast<int64_t>(tokenizer.vocab_size()); ++id)
      if (!tokenizer.is_special(static_cast<int32_t>(id))) bytes[id] = tokenizer.token_bytes(static_cast<int32_t>(id));
    constraint_cache = std::make_unique<ConstraintCache>(std::make_shared<TokenVocab>(std::move(bytes)));
  }
  return *constraint_cache;
}

SamplerConfig Engine::Impl::sampler_config(const SamplingParams& s,
                                           std::span<const std::pair<int32_t, float>> bias) const {
  const GenerationConfig& g = model->folder().generation;
  SamplerConfig c;
  const bool user_set = s.temperature || s.top_k || s.top_p || s.min_p;
  // The model's own defaults apply when the user sets nothing; do_sample
  // false in generation_config means greedy.
  if (!user_set && g.do_sample && !*g.do_sample) c.temperature = 0;
  else c.temperature = s.temperature.value_or(g.temperature.value_or(1.0));
  c.top_k = s.top_k.value_or(g.top_k.value_or(0));
  c.top_p = s.top_p.value_or(g.top_p.value_or(1.0));
  c.min_p = s.min_p.value_or(g.min_p.value_or(0.0));
  c.repetition_penalty = s.repetition_penalty.value_or(g.repetition_penalty.value_or(1.0));
  c.presence_penalty = s.presence_penalty.value_or(0.0);
  c.frequency_penalty = s.frequency_penalty.value_or(0.0);
  c.seed = s.seed ? *s.seed : std::random_device{}();
  c.logit_bias.assign(bias.begin(), bias.end());
  return c;
}

PreprocessOptions Engine::Impl::preprocess_options(const GenerateRequest& r) const {
  PreprocessOptions o{info.min_pixels, info.max_pixels};
  if (r.max_pixels > 0) o.max_pixels = std::clamp(r.max_pixels, info.min_pixels, info.max_pixels);
  if (r.min_pixels > 0) o.min_pixels = std::clamp(r.min_pixels, info.min_pixels, o.max_pixels);
  o.min_pixels = std::min(o.min_pixels, o.max_pixels);
  return o;
}

PreparedPrompt Engine::Impl::prepare(const GenerateRequest& r, bool with_keys) const {
  return prepare_prompt(r.messages, r.tools, model->folder(), chat_template, tokenizer, preprocess_options(r),
                        with_keys ? std::optional<uint64_t>(key_seed) : std::nullopt, info.video_budget.max_tokens);
}

bool Engine::Run::emit(Answer& a, const std::string& piece, const TokenLogprob* logprob) {
  if (piece.empty() && !logprob) return true;
  bool go = true;
  if (callbacks->on_delta) go = callbacks->on_delta(ChoiceDelta{a.index, piece, logprob});
  if (a.index == 0 && !piece.empty() && callbacks->on_text) go = callbacks->on_text(piece) && go;
  if (!go) stop_all = true;
  return go;
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

void Engine::RunDeleter::operator()(Run* run) const { delete run; }

Engine::RunPtr Engine::begin(const GenerateRequest& req, const GenerateCallbacks& cb, int slot_index) {
  const int only[1] = {slot_index};
  return begin(req, cb, std::span<const int>(only));
}

Engine::RunPtr Engine::begin(const GenerateRequest& req, const GenerateCallbacks& cb, std::span<const int> free_slots) {
  Impl& m = *impl_;
  const EngineClock::time_point start = EngineClock::now();
  if (free_slots.empty()) fail("Engine::begin: no free sequence slot given");
  if (!has_head())
    fail("the checkpoint has untied embeddings and no lm_head.weight, so it cannot generate text: it can only "
         "compute embeddings (--task embed)");
  for (const int s : free_slots)
    if (s < 0 || s >= static_cast<int>(m.slots.size()))
      fail("sequence slot ", s, " does not exist (the engine has ", m.slots.size(), ")");
  PreparedPrompt prompt = m.prepare(req, true);
  Slot& slot = m.slots[choose_slot(m.slots, free_slots, prompt)];
  slot.last_used = ++m.use_clock;

  RunPtr run(new Run(req, cb, slot, start));
  Run& r = *run;
  r.prompt = std::move(prompt);
  r.preprocess = m.preprocess_options(req);
  r.constraint = m.constraints().get(req);
  const SamplerConfig sampling = m.sampler_config(req.sampling, req.logit_bias);
  for (int i = 0; i < std::max(1, req.n); ++i) {
    SamplerConfig own = sampling;
    own.seed = sampling.seed + static_cast<uint64_t>(i);  // distinct draws, reproducible from one seed
    r.answers.push_back(std::make_unique<Answer>(i, req, own, m.info.vocab_size, m.tokenizer));
  }
  r.result.timings.preprocess_ms = ms_since(r.start);
  const int64_t length = r.prompt_length();
  const int64_t ctx = slot.cache.capacity();
  r.result.prompt_tokens = length;
  if (length >= ctx)
    fail("the prompt is ", length, " tokens but the context holds ", ctx, " (--ctx-size ", m.params.ctx_size,
         m.slots.size() > 1 ? cat(" shared by ", m.slots.size(), " slots") : std::string(),
         "); raise --ctx-size or send fewer/smaller images");

  if (const uint64_t kv = choices_kv_bytes(req, length); kv > 0 && m.params.memory) {
    const uint64_t room = m.params.memory->media_budget();
    if (kv > room)
      throw MemoryBudgetExceeded(
          cat("n: the KV caches of the ", req.n - 1, " choices after the first need up to ", kv, " bytes, over the ",
              room, " bytes (", mebibytes(room), ") the memory budget leaves beside the slots' KV caches "
              "(--memory-budget); ask for fewer choices or a lower max_tokens"));
    r.choices_kv = m.params.memory->reserve_now(kv);
  }
  r.reused = take_prefix(slot, m.slots, r.prompt);
  r.result.cached_tokens = r.reused;
  r.vision = std::make_unique<VisionStage>(r.prompt, r.reused, r.preprocess, m.info.merge_size, m.image_cache,
                                           r.result.timings);
  r.max_tokens = req.max_tokens > 0 ? req.max_tokens : m.info.default_max_tokens;
  for (auto& a : r.answers) {
    a->context = r.prompt.ids;
    a->cache = &slot.cache;
    a->reasoning = m.info.thinking;  // the constraint starts after "</think>" (take())
    if (r.constraint && r.constraint->whole && !a->reasoning) a->matcher.emplace(r.constraint->whole);
  }
  return run;
}

int Engine::run_slot(const Run& r) const { return static_cast<int>(r.slot - impl_->slots.data()); }
Engine::RunStage Engine::run_stage(const Run& r) const { return r.stage; }
int64_t Engine::run_tokens(const Run& r) const { return static_cast<int64_t>(r.answers[0]->choice.token_ids.size()); }

GenerateRequest greedy_request(std::vector<Message> messages, int64_t max_tokens) {
  GenerateRequest r;
  r.messages = std::move(messages);
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  r.max_tokens = max_tokens;
  return r;
}

WeightFormat EngineParams::resolved_weights() const {
  return weights ? *weights : default_weight_format(model_dir);
}

std::unique_ptr<Engine> Engine::create(const EngineParams& asked) {
  const EngineParams params = asked.resolved();
  if (params.ctx_size < 16) fail("--ctx-size ", params.ctx_size, " is too small (minimum 16)");
  if (params.slots < 1 || params.ctx_size / params.slots < 16)
    fail("--ctx-size ", params.ctx_size, " shared by ", params.slots, " slots leaves under 16 tokens each");
  const EngineClock::time_point t = EngineClock::now();
  ModelLoadOptions mo;
  mo.format = *params.weights;
  if (!params.no_weight_cache) mo.weight_cache = params.weight_cache;
  mo.precision = params.precision;
  mo.max_batch = std::clamp<int64_t>(params.batch, 1, params.ctx_size);
  mo.progress = params.load_progress;
  auto impl = std::make_unique<Impl>(
      params, params.threads > 0 ? params.threads : physical_cores(), ModelFolder::open(params.model_dir),
      [&](ModelFolder folder, ThreadPool& pool) { return Model::load(std::move(folder), mo, pool); });
  impl->info.load_ms = ms_since(t);
#ifdef __GLIBC__
  // Loading freed many small blocks (tokenizer JSON, conversion scratch) that
  // would otherwise stay resident in the heap for the server's lifetime.
  malloc_trim(0);
  // From here on buffers of 1 MiB and more (vision activations, prefill
  // scratch) are mapped on their own and go back to the system when freed.
  // glibc's adaptive threshold has grown to 32 MiB by now (the loading's large
  // frees), under which such buffers would stay resident in the heap and add
  // to the peak of every later phase. (Fixed from the start instead, the
  // loading's growing vectors would take fresh pages each time: +30 ms.)
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  // Fault the mapped weights in on a background thread now that loading is
  // done: an idle server is warm by its first request (no-op for q8/q4).
  impl->model->prefetch_weights();
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

GenerateResult Engine::generate(const GenerateRequest& request, const GenerateCallbacks& callbacks) {
  RunPtr run = begin(request, callbacks, 0);
  while (step(*run)) {
  }
  return end(*run);
}

void Engine::reset() {
  for (Slot& s : impl_->slots) s.forget();
  impl_->image_cache.clear();
}

const EngineInfo& Engine::info() const { return impl_->info; }
const Tokenizer& Engine::tokenizer() const { return impl_->tokenizer; }
Model& EngineInternals::model(Engine& engine) { return *engine.impl_->model; }
ThreadPool& EngineInternals::pool(Engine& engine) { return engine.impl_->pool; }
void EngineInternals::set_decode_profile(Engine& engine, DecodeProfile* profile) {
  engine.impl_->profile = profile;
  engine.impl_->model->text().set_profile(profile);
}

SamplerConfig Engine::sampler_config(const SamplingParams& sampling) const { return impl_->sampler_config(sampling); }

void Engine::validate(const GenerateRequest& r) {
  constexpr int kMaxChoices = 16;  // each is a row of every decode step and a copy of the prompt's K/V
  if (r.n < 1 || r.n > kMaxChoices) throw FieldError("n", cat("'n' must be in [1, ", kMaxChoices, "], got ", r.n));
  if (r.top_logprobs < -1 || r.top_logprobs > 20)
    throw FieldError("top_logprobs", cat("'top_logprobs' must be in [0, 20], got ", r.top_logprobs));
  if (r.min_pixels < 0) throw FieldError("min_pixels", cat("'min_pixels' must be positive, got ", r.min_pixels));
  if (r.max_pixels < 0) throw FieldError("max_pixels", cat("'max_pixels' must be positive, got ", r.max_pixels));
  const int64_t vocab = impl_->info.vocab_size;
  for (const auto& [id, bias] : r.logit_bias) {
    if (id < 0 || id >= vocab)
      throw FieldError("logit_bias", cat("logit_bias names token ", id, ", outside the vocabulary [0, ", vocab, ")"));
    if (!std::isfinite(bias)) throw FieldError("logit_bias", cat("logit_bias for token ", id, " is not a finite number"));
  }
  for (size_t i = 0; i < r.tools.size(); ++i) {
    if (r.tools[i].name.empty()) throw FieldError(cat("tools[", i, "].function.name"), "a tool needs a name");
    for (size_t j = 0; j < i; ++j)
      if (r.tools[j].name == r.tools[i].name)
        throw FieldError(cat("tools[", i, "].function.name"), cat("two tools are named '", r.tools[i].name, "'"));
  }
  if (r.reasoning_budget) {
    if (!impl_->info.thinking)
      throw FieldError("reasoning_budget", "'reasoning_budget' needs a Thinking model; this model's chat template "
                                           "is not Qwen3-VL-Thinking's, so its answers have no reasoning");
    if (*r.reasoning_budget < 0)
      throw FieldError("reasoning_budget",
                       cat("'reasoning_budget' must be a non-negative integer, got ", *r.reasoning_budget));
  }
  if (r.tool_choice != ToolChoice::Auto && r.tool_choice != ToolChoice::None && r.tools.empty())
    throw FieldError("tool_choice", "tool_choice asks for a tool call but the request has no tools");
  impl_->constraints().get(r);  // compiles (and caches) the grammars, or names what cannot be enforced
}

// Counting needs only each image's size: no pixels are touched, so this is
// cheap on a request's thread and the engine preprocesses each image once.
std::vector<int32_t> Engine::prompt_tokens(const GenerateRequest& request) {
  return impl_->prepare(request, false).ids;
}

PromptSize Engine::prompt_size(const GenerateRequest& request) {
  const PreparedPrompt p = impl_->prepare(request, false);
  PromptSize size;
  size.tokens = static_cast<int64_t>(p.ids.size());
  size.image_tokens = std::count_if(p.image_row.begin(), p.image_row.end(), [](int64_t row) { return row >= 0; });
  return size;
}

uint64_t Engine::choices_kv_bytes(const GenerateRequest& request, int64_t prompt_tokens) const {
  const Impl& m = *impl_;
  if (request.n <= 1) return 0;
  const int64_t max_tokens = request.max_tokens > 0 ? request.max_tokens : m.info.default_max_tokens;
  const int64_t positions = std::min(m.info.slot_ctx, prompt_tokens + max_tokens);
  return static_cast<uint64_t>(request.n - 1) * static_cast<uint64_t>(positions) *
         m.slots.front().cache.bytes_per_position();
}

ImageCacheStats Engine::image_cache_stats() const { return impl_->image_cache.stats(); }

}  // namespace qvl
