#include "engine/engine.h"

#include <algorithm>
#include <chrono>
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

struct Engine::Impl {
  EngineParams params;
  ThreadPool pool;
  std::unique_ptr<Model> model;
  Tokenizer tokenizer;
  ChatTemplate chat_template;
  KvCache cache;
  std::vector<int32_t> cached_ids;    // tokens whose K/V the cache holds, in order
  std::vector<uint64_t> cached_keys;  // their image hashes (0 for text)
  std::vector<float> logits;          // [vocab]
  std::vector<int32_t> eos;
  double load_ms = 0;

  Impl(const EngineParams& p, int threads, std::function<std::unique_ptr<Model>(ThreadPool&)> load)
      : params(p),
        pool(threads),
        model(load(pool)),
        tokenizer(Tokenizer::load(model->folder().tokenizer_json)),
        chat_template(ChatTemplate::from_source(model->folder().chat_template)),
        cache(model->text().make_cache(p.ctx_size)),
        logits(model->config().text.vocab_size) {
    eos = model->folder().generation.eos_token_ids;
    if (eos.empty()) {
      for (const char* t : {"<|im_end|>", "<|endoftext|>"})
        if (int32_t id = tokenizer.token_id(t); id >= 0) eos.push_back(id);
    }
  }

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

  GenerateResult generate(const GenerateRequest& req, const GenerateCallbacks& cb);
};

GenerateResult Engine::Impl::generate(const GenerateRequest& req, const GenerateCallbacks& cb) {
  const Clock::time_point start = Clock::now();
  GenerateResult res;
  const ModelConfig& cfg = model->config();
  TextDecoder& text = model->text();
  const int64_t ctx = cache.capacity(), vocab = cfg.text.vocab_size;
  Sampler sampler(sampler_config(req.sampling), vocab);

  PreprocessOptions po;
  po.min_pixels = params.min_pixels;
  po.max_pixels = params.max_pixels;
  PreparedPrompt p = prepare_prompt(req.messages, model->folder(), chat_template, tokenizer, po);
  res.timings.preprocess_ms = ms_since(start);
  const int64_t n = static_cast<int64_t>(p.ids.size());
  res.prompt_tokens = n;
  if (n >= ctx)
    fail("the prompt is ", n, " tokens but the context holds ", ctx, " (--ctx-size ", ctx,
         "); raise --ctx-size or send fewer/smaller images");

  // Reuse the cached prefix: same tokens and, for image tokens, same image.
  // A reused prefix never ends inside an image, and at least one token is
  // recomputed so there are logits to sample from.
  int64_t c = 0;
  const int64_t limit = std::min<int64_t>(static_cast<int64_t>(cached_ids.size()), n - 1);
  while (c < limit && cached_ids[c] == p.ids[c] && cached_keys[c] == p.token_key[c]) ++c;
  while (c > 0 && p.token_key[c] != 0 && p.token_key[c - 1] == p.token_key[c]) --c;
  cache.set_size(c);
  cached_ids.assign(p.ids.begin(), p.ids.begin() + c);
  cached_keys.assign(p.token_key.begin(), p.token_key.begin() + c);
  res.cached_tokens = c;

  // Vision for the images in the recomputed part only.
  Clock::time_point t = Clock::now();
  std::vector<VisionInput> inputs;
  int64_t rows_before = 0;
  {
    int64_t token = 0;
    size_t image = 0;
    const int merge = cfg.vision.spatial_merge_size;
    for (int64_t i = 0; i < n && image < p.grids.size(); ++i) {
      if (p.image_row[i] < 0 || p.image_row[i] != token) continue;
      if (i >= c) inputs.push_back({p.images[image].data.data(), p.grids[image]});
      else rows_before += p.grids[image].tokens(merge);
      token += p.grids[image].tokens(merge);
      ++image;
    }
  }
  VisionFeatures vision = model->vision().encode(inputs, pool);
  res.timings.vision_ms = ms_since(t);
  std::vector<int64_t> rows(p.image_row.begin() + c, p.image_row.end());
  for (int64_t& r : rows)
    if (r >= 0) r -= rows_before;

  // Prefill chunk by chunk so a cancellation is seen within one chunk.
  t = Clock::now();
  for (int64_t b = c; b < n; b += text.max_batch()) {
    if (req.cancel && req.cancel->load()) {
      res.finish_reason = "cancelled";
      res.timings.prefill_ms = ms_since(t);
      return res;
    }
    const int64_t e = std::min(n, b + text.max_batch());
    TextInput in{p.ids.data() + b, p.positions.pos.data() + b, e - b, rows.data() + (b - c), &vision};
    text.forward(in, cache, pool);
    cached_ids.insert(cached_ids.end(), p.ids.begin() + b, p.ids.begin() + e);
    cached_keys.insert(cached_keys.end(), p.token_key.begin() + b, p.token_key.begin() + e);
    res.timings.prefill_tokens += e - b;
  }
  text.logits(text.last_hidden(), 1, logits.data(), pool);
  res.timings.prefill_ms = ms_since(t);

  int64_t max_tokens = req.max_tokens > 0 ? req.max_tokens : model->folder().generation.max_new_tokens.value_or(0);
  if (max_tokens <= 0) max_tokens = ctx - n;

  StreamDecoder stream(tokenizer, true);
  StopStrings stops(req.stop);
  std::vector<int32_t> context(p.ids);
  const Clock::time_point decode_start = Clock::now();
  res.finish_reason = "length";
  auto emit = [&](const std::string& piece) {
    if (piece.empty() || !cb.on_text) return true;
    return cb.on_text(piece);
  };
  for (int64_t step = 0;; ++step) {
    if (req.cancel && req.cancel->load()) {
      res.finish_reason = "cancelled";
      break;
    }
    const int32_t tok = sampler.sample(logits.data(), context, res.token_ids);
    if (step == 0) res.timings.first_token_ms = ms_since(start);
    if (!req.ignore_eos && std::find(eos.begin(), eos.end(), tok) != eos.end()) {
      res.finish_reason = "stop";
      break;
    }
    res.token_ids.push_back(tok);
    context.push_back(tok);
    const StopStrings::Result sr = stops.push(stream.push(tok));
    if (!emit(sr.emit)) {
      res.finish_reason = "cancelled";
      break;
    }
    if (sr.stopped) {
      res.finish_reason = "stop";
      break;
    }
    if (static_cast<int64_t>(res.token_ids.size()) >= max_tokens || cache.size() >= ctx) break;
    const Pos3 pos = generated_position(cache.size(), p.positions.rope_delta);
    TextInput one{&tok, &pos, 1};
    text.forward(one, cache, pool);
    text.logits(text.last_hidden(), 1, logits.data(), pool);
    cached_ids.push_back(tok);
    cached_keys.push_back(0);
    ++res.timings.decode_tokens;
  }
  if (!stops.stopped()) emit(stops.finish(stream.finish()));
  res.timings.decode_ms = ms_since(decode_start);
  res.text = stops.text();
  res.completion_tokens = static_cast<int64_t>(res.token_ids.size());
  return res;
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

std::unique_ptr<Engine> Engine::create(const EngineParams& params) {
  if (params.ctx_size < 16) fail("--ctx-size ", params.ctx_size, " is too small (minimum 16)");
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
  return impl_->generate(request, callbacks);
}

void Engine::reset() {
  impl_->cache.set_size(0);
  impl_->cached_ids.clear();
  impl_->cached_keys.clear();
}

const Model& Engine::model() const { return *impl_->model; }
Model& Engine::model() { return *impl_->model; }
const Tokenizer& Engine::tokenizer() const { return impl_->tokenizer; }
const EngineParams& Engine::params() const { return impl_->params; }
double Engine::load_ms() const { return impl_->load_ms; }
int Engine::threads() const { return impl_->pool.size(); }
ThreadPool& Engine::pool() { return impl_->pool; }
size_t Engine::kv_cache_reserved_bytes() const { return impl_->cache.reserved_bytes(); }

SamplerConfig Engine::sampler_config(const SamplingParams& sampling) const { return impl_->sampler_config(sampling); }

std::vector<int32_t> Engine::prompt_tokens(const std::vector<Message>& messages) {
  PreprocessOptions po;
  po.min_pixels = impl_->params.min_pixels;
  po.max_pixels = impl_->params.max_pixels;
  return prepare_prompt(messages, impl_->model->folder(), impl_->chat_template, impl_->tokenizer, po).ids;
}

}  // namespace qvl
