#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>

#include "engine/prompt.h"
#include "engine/sampler.h"
#include "engine/stop_strings.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

// One KV cache and the conversation it holds. generate() uses slot 0; a
// scheduler running several sequences gives each its own slot, so each keeps
// its prefix for the follow-up question of its own client.
struct Slot {
  KvCache cache;
  std::vector<int32_t> cached_ids;    // tokens whose K/V the cache holds, in order
  std::vector<uint64_t> cached_keys;  // their image hashes (0 for text)
};

struct Engine::Impl {
  EngineParams params;
  ThreadPool pool;
  std::unique_ptr<Model> model;
  Tokenizer tokenizer;
  ChatTemplate chat_template;
  std::vector<Slot> slots;
  std::vector<int32_t> eos;
  double load_ms = 0;

  Impl(const EngineParams& p, int threads, std::function<std::unique_ptr<Model>(ThreadPool&)> load)
      : params(p),
        pool(threads),
        model(load(pool)),
        tokenizer(Tokenizer::load(model->folder().tokenizer_json)),
        chat_template(ChatTemplate::from_source(model->folder().chat_template)) {
    for (int i = 0; i < std::max(1, p.slots); ++i) slots.push_back({model->text().make_cache(slot_ctx()), {}, {}});
    eos = model->folder().generation.eos_token_ids;
    if (eos.empty()) {
      for (const char* t : {"<|im_end|>", "<|endoftext|>"})
        if (int32_t id = tokenizer.token_id(t); id >= 0) eos.push_back(id);
    }
  }

  // --ctx-size is shared out among the slots, so memory does not grow with them.
  int64_t slot_ctx() const { return params.ctx_size / std::max(1, params.slots); }

  SamplerConfig sampler_config(const SamplingParams& s) const {
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
    return c;
  }
};

// One request in flight: prepared prompt, sampler, and where it is.
struct Engine::Run {
  enum class Stage { Vision, Prefill, Decode, Done };
  const GenerateRequest* req;
  const GenerateCallbacks* cb;
  Slot* slot;
  Clock::time_point start, decode_start;
  GenerateResult res;
  Sampler sampler;
  PreparedPrompt p;
  int64_t n = 0, c = 0;       // prompt length, reused prefix
  int64_t prefilled = 0;      // prompt tokens computed so far (from c)
  int64_t max_tokens = 0;
  int64_t step = 0;
  std::vector<VisionInput> inputs;
  VisionFeatures vision;
  std::vector<int64_t> rows;  // [n - c] vision row per recomputed token, -1 for text
  std::vector<float> logits;  // [vocab]
  std::vector<int32_t> context;
  std::optional<StreamDecoder> stream;
  StopStrings stops;
  Stage stage = Stage::Vision;

  Run(const GenerateRequest& r, const GenerateCallbacks& callbacks, Slot& s, SamplerConfig sc, int64_t vocab)
      : req(&r), cb(&callbacks), slot(&s), start(Clock::now()), sampler(sc, vocab), logits(vocab), stops(r.stop) {}

  bool emit(const std::string& piece) {
    if (piece.empty() || !cb->on_text) return true;
    return cb->on_text(piece);
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

void Engine::RunDeleter::operator()(Run* run) const { delete run; }

Engine::RunPtr Engine::begin(const GenerateRequest& req, const GenerateCallbacks& cb, int slot_index) {
  Impl& m = *impl_;
  if (slot_index < 0 || slot_index >= static_cast<int>(m.slots.size()))
    fail("sequence slot ", slot_index, " does not exist (the engine has ", m.slots.size(), ")");
  Slot& slot = m.slots[slot_index];
  const ModelConfig& cfg = m.model->config();
  const int64_t ctx = slot.cache.capacity();
  RunPtr run(new Run(req, cb, slot, m.sampler_config(req.sampling), cfg.text.vocab_size));
  Run& r = *run;

  PreprocessOptions po;
  po.min_pixels = m.params.min_pixels;
  po.max_pixels = m.params.max_pixels;
  r.p = prepare_prompt(req.messages, m.model->folder(), m.chat_template, m.tokenizer, po);
  r.res.timings.preprocess_ms = ms_since(r.start);
  const PreparedPrompt& p = r.p;
  const int64_t n = r.n = static_cast<int64_t>(p.ids.size());
  r.res.prompt_tokens = n;
  if (n >= ctx)
    fail("the prompt is ", n, " tokens but the context holds ", ctx, " (--ctx-size ", m.params.ctx_size,
         m.slots.size() > 1 ? cat(" shared by ", m.slots.size(), " slots") : std::string(),
         "); raise --ctx-size or send fewer/smaller images");

  // Reuse the cached prefix: same tokens and, for image tokens, same image.
  // A reused prefix never ends inside an image, and at least one token is
  // recomputed so there are logits to sample from.
  int64_t c = 0;
  const int64_t limit = std::min<int64_t>(static_cast<int64_t>(slot.cached_ids.size()), n - 1);
  while (c < limit && slot.cached_ids[c] == p.ids[c] && slot.cached_keys[c] == p.token_key[c]) ++c;
  while (c > 0 && p.token_key[c] != 0 && p.token_key[c - 1] == p.token_key[c]) --c;
  slot.cache.set_size(c);
  slot.cached_ids.assign(p.ids.begin(), p.ids.begin() + c);
  slot.cached_keys.assign(p.token_key.begin(), p.token_key.begin() + c);
  r.c = c;
  r.res.cached_tokens = c;

  // Vision for the images in the recomputed part only.
  int64_t rows_before = 0;
  {
    int64_t token = 0;
    size_t image = 0;
    const int merge = cfg.vision.spatial_merge_size;
    for (int64_t i = 0; i < n && image < p.grids.size(); ++i) {
      if (p.image_row[i] < 0 || p.image_row[i] != token) continue;
      if (i >= c) r.inputs.push_back({p.images[image].data.data(), p.grids[image]});
      else rows_before += p.grids[image].tokens(merge);
      token += p.grids[image].tokens(merge);
      ++image;
    }
  }
  r.rows.assign(p.image_row.begin() + c, p.image_row.end());
  for (int64_t& row : r.rows)
    if (row >= 0) row -= rows_before;
  r.max_tokens = req.max_tokens > 0 ? req.max_tokens : m.model->folder().generation.max_new_tokens.value_or(0);
  if (r.max_tokens <= 0) r.max_tokens = ctx - n;
  r.stream.emplace(m.tokenizer, true);
  r.context = p.ids;
  r.res.finish_reason = "length";
  return run;
}

bool Engine::step(Run& r) {
  Impl& m = *impl_;
  TextDecoder& text = m.model->text();
  Slot& slot = *r.slot;
  const GenerateRequest& req = *r.req;
  switch (r.stage) {
    case Run::Stage::Vision: {
      const Clock::time_point t = Clock::now();
      r.vision = m.model->vision().encode(r.inputs, m.pool);
      r.res.timings.vision_ms = ms_since(t);
      r.stage = Run::Stage::Prefill;
      return true;
    }
    case Run::Stage::Prefill: {
      if (req.cancel && req.cancel->load()) {
        r.res.finish_reason = "cancelled";
        r.stage = Run::Stage::Done;
        return false;
      }
      // One chunk per step, at the decoder's own chunk boundaries (so the
      // numbers equal one forward over the whole prompt), leaving room for
      // other sequences' decode steps in between.
      const Clock::time_point t = Clock::now();
      const int64_t todo = r.n - r.c;
      const int64_t len = std::min<int64_t>(std::max<int64_t>(1, m.params.batch), todo - r.prefilled);
      const int64_t at = r.c + r.prefilled;
      TextInput in{r.p.ids.data() + at, r.p.positions.pos.data() + at, len, r.rows.data() + r.prefilled, &r.vision};
      text.forward(in, slot.cache, m.pool);
      r.prefilled += len;
      slot.cached_ids.insert(slot.cached_ids.end(), r.p.ids.begin() + at, r.p.ids.begin() + at + len);
      slot.cached_keys.insert(slot.cached_keys.end(), r.p.token_key.begin() + at, r.p.token_key.begin() + at + len);
      if (r.prefilled == todo) {
        text.logits(text.last_hidden(), 1, r.logits.data(), m.pool);
        r.stage = Run::Stage::Decode;
        r.res.timings.prefill_tokens = todo;
        r.decode_start = Clock::now();
      }
      r.res.timings.prefill_ms += ms_since(t);
      return true;
    }
    case Run::Stage::Decode:
      break;
    case Run::Stage::Done:
      return false;
  }

  auto done = [&](const char* why) {
    if (why) r.res.finish_reason = why;
    r.stage = Run::Stage::Done;
    return false;
  };
  if (req.cancel && req.cancel->load()) return done("cancelled");
  const int32_t tok = r.sampler.sample(r.logits.data(), r.context, r.res.token_ids);
  if (r.step++ == 0) r.res.timings.first_token_ms = ms_since(r.start);
  if (!req.ignore_eos && std::find(m.eos.begin(), m.eos.end(), tok) != m.eos.end()) return done("stop");
  r.res.token_ids.push_back(tok);
  r.context.push_back(tok);
  const StopStrings::Result sr = r.stops.push(r.stream->push(tok));
  if (!r.emit(sr.emit)) return done("cancelled");
  if (sr.stopped) return done("stop");
  if (static_cast<int64_t>(r.res.token_ids.size()) >= r.max_tokens || slot.cache.size() >= slot.cache.capacity())
    return done(nullptr);
  const Pos3 pos = generated_position(slot.cache.size(), r.p.positions.rope_delta);
  TextInput one{&tok, &pos, 1};
  text.forward(one, slot.cache, m.pool);
  text.logits(text.last_hidden(), 1, r.logits.data(), m.pool);
  slot.cached_ids.push_back(tok);
  slot.cached_keys.push_back(0);
  ++r.res.timings.decode_tokens;
  return true;
}

GenerateResult Engine::end(Run& r) {
  if (r.stage == Run::Stage::Decode || r.stage == Run::Stage::Done) {
    if (!r.stops.stopped()) r.emit(r.stops.finish(r.stream->finish()));
    if (r.decode_start != Clock::time_point{}) r.res.timings.decode_ms = ms_since(r.decode_start);
  }
  if (r.stage != Run::Stage::Done && r.res.finish_reason == "length") r.res.finish_reason = "cancelled";
  r.res.text = r.stops.text();
  r.res.completion_tokens = static_cast<int64_t>(r.res.token_ids.size());
  return std::move(r.res);
}

std::unique_ptr<Engine> Engine::create(const EngineParams& params) {
  if (params.ctx_size < 16) fail("--ctx-size ", params.ctx_size, " is too small (minimum 16)");
  if (params.slots < 1 || params.ctx_size / params.slots < 16)
    fail("--ctx-size ", params.ctx_size, " shared by ", params.slots, " slots leaves under 16 tokens each");
  const Clock::time_point t = Clock::now();
  ModelLoadOptions mo;
  mo.format = params.weights;
  mo.max_batch = std::clamp<int64_t>(params.batch, 1, params.ctx_size);
  mo.progress = params.load_progress;
  auto impl = std::make_unique<Impl>(params, params.threads > 0 ? params.threads : physical_cores(),
                                     [&](ThreadPool& pool) { return Model::load(params.model_dir, mo, pool); });
  impl->load_ms = ms_since(t);
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

GenerateResult Engine::generate(const GenerateRequest& request, const GenerateCallbacks& callbacks) {
  RunPtr run = begin(request, callbacks, 0);
  while (step(*run)) {
  }
  return end(*run);
}

void Engine::reset() {
  for (Slot& s : impl_->slots) {
    s.cache.set_size(0);
    s.cached_ids.clear();
    s.cached_keys.clear();
  }
}

int Engine::slots() const { return static_cast<int>(impl_->slots.size()); }
int64_t Engine::slot_ctx() const { return impl_->slot_ctx(); }

const Model& Engine::model() const { return *impl_->model; }
Model& Engine::model() { return *impl_->model; }
const Tokenizer& Engine::tokenizer() const { return impl_->tokenizer; }
const EngineParams& Engine::params() const { return impl_->params; }
double Engine::load_ms() const { return impl_->load_ms; }
int Engine::threads() const { return impl_->pool.size(); }
ThreadPool& Engine::pool() { return impl_->pool; }
size_t Engine::kv_cache_reserved_bytes() const {
  size_t bytes = 0;
  for (const Slot& s : impl_->slots) bytes += s.cache.reserved_bytes();
  return bytes;
}

SamplerConfig Engine::sampler_config(const SamplingParams& sampling) const { return impl_->sampler_config(sampling); }

std::vector<int32_t> Engine::prompt_tokens(const std::vector<Message>& messages) {
  PreprocessOptions po;
  po.min_pixels = impl_->params.min_pixels;
  po.max_pixels = impl_->params.max_pixels;
  return prepare_prompt(messages, impl_->model->folder(), impl_->chat_template, impl_->tokenizer, po).ids;
}

}  // namespace qvl
