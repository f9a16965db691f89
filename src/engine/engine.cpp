#include "engine/engine.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <random>

#include "engine/constraint.h"
#include "engine/prompt.h"
#include "engine/sampler.h"
#include "engine/stop_strings.h"
#include "engine/tool_calls.h"
#include "model/model.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {

struct Branch;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Prefill pieces of at least this many tokens run through kernels whose
// rows do not depend on how many rows there are (matmul beyond its small-m
// path, tiled attention), so any cut into such pieces computes the same bits
// (tests/model/batched_decode_test.cpp holds the kernels to it).
constexpr int64_t kMinPiece = 16;

// Length of the next prefill piece after `done` of `todo` tokens: at most
// `piece` (at least kMinPiece), inside the `batch`-token chunk the run would
// compute alone, and leaving no rest under kMinPiece in that chunk, so the
// answer is the same bits whether or not the prefill was cut for others.
int64_t prefill_piece(int64_t done, int64_t todo, int64_t batch, int64_t piece) {
  const int64_t chunk_end = std::min(todo, (done / batch + 1) * batch);
  const int64_t left = chunk_end - done;
  const int64_t len = std::min(left, std::max(piece, kMinPiece));
  return left - len < kMinPiece ? left : len;
}

}  // namespace

// One KV cache and the conversation it holds. generate() uses slot 0; a
// scheduler running several sequences gives each its own slot, so each keeps
// its prefix for the follow-up question of its own client.
struct Slot {
  KvCache cache;
  std::vector<int32_t> cached_ids;    // tokens whose K/V the cache holds, in order
  std::vector<uint64_t> cached_keys;  // their image key hashes (0 for text)
  uint64_t last_used = 0;             // Impl::use_clock when a run last began here
};

// The longest prefix of `p` whose K/V `s` holds: same tokens and, for image
// tokens, the same image. It never ends inside an image, and leaves at least
// one token to compute so there are logits to sample from.
static int64_t reusable_prefix(const Slot& s, const PreparedPrompt& p) {
  const int64_t n = static_cast<int64_t>(p.ids.size());
  const int64_t limit = std::min<int64_t>(static_cast<int64_t>(s.cached_ids.size()), n - 1);
  int64_t c = 0;
  while (c < limit && s.cached_ids[c] == p.ids[c] && s.cached_keys[c] == p.token_key[c]) ++c;
  while (c > 0 && p.token_key[c] != 0 && p.token_key[c - 1] == p.token_key[c]) --c;
  return c;
}

struct Engine::Impl {
  EngineParams params;
  ThreadPool pool;
  Tokenizer tokenizer;
  ChatTemplate chat_template;
  std::unique_ptr<Model> model;
  std::vector<Slot> slots;
  uint64_t use_clock = 0;
  ImageEmbeddingCache image_cache;
  uint64_t key_seed;  // image keys are hashed with a per-engine secret (image_cache.h)
  std::vector<int32_t> eos;
  double load_ms = 0;

  // The tokenizer is read before the weights, so the memory its parsing
  // frees is not still resident under them (the peak is weights + run).
  Impl(const EngineParams& p, int threads, ModelFolder folder,
       std::function<std::unique_ptr<Model>(ModelFolder, ThreadPool&)> load)
      : params(p),
        pool(threads),
        tokenizer(Tokenizer::load(folder.tokenizer_json)),
        chat_template(ChatTemplate::from_source(folder.chat_template)),
        model(load(std::move(folder), pool)),
        image_cache(p.image_cache_bytes),
        key_seed(uint64_t{std::random_device{}()} << 32 | std::random_device{}()) {
    for (int i = 0; i < std::max(1, p.slots); ++i) slots.push_back({model->text().make_cache(slot_ctx(), p.resolved_kv_type()), {}, {}});
    // A Vision step among other runs does about as much work as a prefill
    // piece of `interleave_batch` tokens, so an image holds the other streams
    // up no longer than a long prompt does.
    vision_budget = text_matmul_flops_per_token(model->config().text) *
                    static_cast<double>(std::max(p.interleave_batch, kMinPiece));
    tool_call_open = tokenizer.token_id("<tool_call>");
    eos = model->folder().generation.eos_token_ids;
    if (eos.empty()) {
      for (const char* t : {"<|im_end|>", "<|endoftext|>"})
        if (int32_t id = tokenizer.token_id(t); id >= 0) eos.push_back(id);
    }
  }

  PreprocessOptions preprocess_options() const {
    PreprocessOptions po;
    po.min_pixels = params.min_pixels;
    po.max_pixels = params.max_pixels;
    return po;
  }
  // One piece of the Vision stage; true once the stage is complete and
  // r.vision holds the parts' embeddings.
  bool vision_piece(Run& r);
  void cache_images(Run& r, VisionFeatures out);  // an encode's rows, per image, into the image cache
  void gather_images(Run& r);                     // every part's rows into r.vision, in prompt order
  // The unit of a run outside the Decode stage: vision (all of it when
  // `alone`, else pieces up to vision_budget), or one prefill chunk of at
  // most `chunk` tokens. False when the run is over.
  bool unit(Run& r, int64_t chunk, bool alone);
  double vision_budget = 0;  // multiply-adds ×2 per Vision step among other runs
  // The Decode stage (next_token, then decode): see below.
  struct DecodeRow {
    Run* run;
    Branch* branch;
    size_t index;  // the run's position in Engine::step's runs
  };
  bool next_token(Run& r, Branch& b, int32_t& tok);
  void decode(std::span<const DecodeRow> rows, std::span<const int32_t> toks);
  int32_t tool_call_open = -1;  // the <tool_call> token (Qwen's added token), -1 if the tokenizer has none
  // Compiled constraints; the vocabulary as bytes is built on first use.
  std::unique_ptr<ConstraintCache> constraint_cache;
  std::mutex constraint_cache_mutex;
  ConstraintCache& constraints() {
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
  // Batched decode scratch, grown once to the number of slots.
  std::vector<Pos3> batch_pos;
  std::vector<KvCache*> batch_caches;
  std::vector<float> batch_hidden;  // [runs, hidden]
  std::vector<float> batch_logits;  // [runs, vocab]

  // --ctx-size is shared out among the slots, so memory does not grow with them.
  int64_t slot_ctx() const { return params.ctx_size / std::max(1, params.slots); }

  SamplerConfig sampler_config(const SamplingParams& s, std::span<const std::pair<int32_t, float>> bias = {}) const {
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
};

// The Vision stage of a run in progress: kept between its pieces, dropped
// when the stage ends or the run is cancelled.
struct VisionJob {
  std::vector<size_t> todo;         // the parts to compute (Run::parts), each distinct image once
  std::vector<PixelValues> pixels;  // [todo] preprocessed; the encoding's first piece reads them, then they go
  VisionEncoding encoding;
};

// One answer being decoded: choice 0 decodes on the slot's own KV cache;
// with n > 1 each other choice gets a cache of its own holding a copy of the
// prompt's K/V (prefilled once), then its own tokens.
struct Branch {
  int index = 0;
  Choice choice;  // what the answer has become (text set at the end)
  Sampler sampler;
  std::unique_ptr<KvCache> own_cache;  // choices after the first
  KvCache* cache = nullptr;
  std::vector<float> logits;      // [vocab]
  std::vector<int32_t> context;   // prompt + generated (repetition penalty)
  std::optional<StreamDecoder> stream;
  StopStrings stops;
  RepetitionGuard guard;
  // The grammar in force: the whole answer's, or a tool-call block's while one is open.
  std::optional<GrammarMatcher> matcher;
  std::vector<int32_t> also_allowed;  // EOS when the whole answer's value is complete
  TokenLogprob logprob;               // the last token's, when asked for
  bool done = false;

  Branch(int i, const GenerateRequest& r, SamplerConfig sc, int64_t vocab)
      : index(i), sampler(std::move(sc), vocab), logits(vocab), stops(r.stop), guard(r.repetition_guard) {}
};

// One request in flight: prepared prompt, its answers, and where it is.
struct Engine::Run {
  using Stage = Engine::RunStage;
  const GenerateRequest* req;
  const GenerateCallbacks* cb;
  Slot* slot;
  Clock::time_point start, decode_start;
  GenerateResult res;  // prompt figures and timings; the choices are the branches'
  PreparedPrompt p;
  std::shared_ptr<const Constraint> constraint;
  int64_t n = 0, c = 0;       // prompt length, reused prefix
  int64_t prefilled = 0;      // prompt tokens computed so far (from c)
  int64_t max_tokens = 0;
  bool first_token = true;
  // The images of the recomputed part in prompt order: index into p.images
  // and their embeddings (from the image cache at begin, else computed by
  // the Vision step).
  struct ImagePart {
    size_t image;
    std::shared_ptr<const ImageFeatures> features;
  };
  std::vector<ImagePart> parts;
  VisionFeatures vision;      // the parts' rows, concatenated
  std::unique_ptr<VisionJob> vision_job;  // while the Vision stage is under way
  std::vector<int64_t> rows;  // [n - c] vision row per recomputed token, -1 for text
  std::vector<std::unique_ptr<Branch>> branches;  // [req->n]; [0] decodes on the slot's cache
  Stage stage = Stage::Vision;
  bool stop_all = false;  // a callback asked to stop

  Run(const GenerateRequest& r, const GenerateCallbacks& callbacks, Slot& s)
      : req(&r), cb(&callbacks), slot(&s), start(Clock::now()) {}

  Branch& first() { return *branches[0]; }
  bool emit(Branch& b, const std::string& piece, const TokenLogprob* lp) {
    if (piece.empty() && !lp) return true;
    bool go = true;
    if (cb->on_delta) go = cb->on_delta(ChoiceDelta{b.index, piece, lp});
    if (b.index == 0 && !piece.empty() && cb->on_text) go = cb->on_text(piece) && go;
    if (!go) stop_all = true;
    return go;
  }
};

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

void Engine::RunDeleter::operator()(Run* run) const { delete run; }

Engine::RunPtr Engine::begin(const GenerateRequest& req, const GenerateCallbacks& cb, int slot_index) {
  const int only[1] = {slot_index};
  return begin(req, cb, std::span<const int>(only));
}

Engine::RunPtr Engine::begin(const GenerateRequest& req, const GenerateCallbacks& cb, std::span<const int> free_slots) {
  Impl& m = *impl_;
  const Clock::time_point start = Clock::now();
  if (free_slots.empty()) fail("Engine::begin: no free sequence slot given");
  for (const int s : free_slots)
    if (s < 0 || s >= static_cast<int>(m.slots.size()))
      fail("sequence slot ", s, " does not exist (the engine has ", m.slots.size(), ")");
  PreparedPrompt prepared = prepare_prompt(req.messages, req.tools, m.model->folder(), m.chat_template, m.tokenizer,
                                           m.preprocess_options(), m.key_seed);

  // The slot where this prompt reuses most and discards least of what is
  // cached (a follow-up lands on its conversation; an unrelated prompt on an
  // empty slot rather than on one that merely shares the template's first
  // tokens); among equals the least recently used, so the conversations of
  // recent clients stay cached.
  int chosen = free_slots[0];
  int64_t best = INT64_MIN;
  for (const int s : free_slots) {
    const Slot& slot = m.slots[s];
    const int64_t c = reusable_prefix(slot, prepared);
    const int64_t score = c - (static_cast<int64_t>(slot.cached_ids.size()) - c);
    if (score > best || (score == best && slot.last_used < m.slots[chosen].last_used)) {
      best = score;
      chosen = s;
    }
  }
  Slot& slot = m.slots[chosen];
  slot.last_used = ++m.use_clock;
  const ModelConfig& cfg = m.model->config();
  const int64_t ctx = slot.cache.capacity();
  RunPtr run(new Run(req, cb, slot));
  Run& r = *run;
  r.constraint = m.constraints().get(req);
  {
    const SamplerConfig sc = m.sampler_config(req.sampling, req.logit_bias);
    for (int i = 0; i < std::max(1, req.n); ++i) {
      SamplerConfig own = sc;
      own.seed = sc.seed + static_cast<uint64_t>(i);  // distinct draws, reproducible from one seed
      r.branches.push_back(std::make_unique<Branch>(i, req, own, cfg.text.vocab_size));
    }
  }
  r.start = start;
  r.p = std::move(prepared);
  r.res.timings.preprocess_ms = ms_since(r.start);
  const PreparedPrompt& p = r.p;
  const int64_t n = r.n = static_cast<int64_t>(p.ids.size());
  r.res.prompt_tokens = n;
  if (n >= ctx)
    fail("the prompt is ", n, " tokens but the context holds ", ctx, " (--ctx-size ", m.params.ctx_size,
         m.slots.size() > 1 ? cat(" shared by ", m.slots.size(), " slots") : std::string(),
         "); raise --ctx-size or send fewer/smaller images");

  // Reuse the longest cached prefix of any slot (busy ones too: a running
  // sequence only appends past it). Another slot's K/V rows are copied here,
  // far cheaper than computing them again.
  const Slot* from = &slot;
  int64_t c = reusable_prefix(slot, p);
  for (const Slot& other : m.slots) {
    const int64_t oc = reusable_prefix(other, p);
    if (oc > c) {
      c = oc;
      from = &other;
    }
  }
  if (from == &slot) {
    slot.cache.set_size(c);
  } else {
    slot.cache.copy_prefix(from->cache, c);
  }
  slot.cached_ids.assign(p.ids.begin(), p.ids.begin() + c);
  slot.cached_keys.assign(p.token_key.begin(), p.token_key.begin() + c);
  r.c = c;
  r.res.cached_tokens = c;

  // Images in the recomputed part: from the image-embedding cache when
  // there, else the Vision step computes them.
  int64_t rows_before = 0;
  {
    int64_t token = 0;
    size_t image = 0;
    const int merge = cfg.vision.spatial_merge_size;
    for (int64_t i = 0; i < n && image < p.grids.size(); ++i) {
      if (p.image_row[i] < 0 || p.image_row[i] != token) continue;
      if (i >= c) {
        r.parts.push_back({image, m.image_cache.find(p.keys[image])});
        ++(r.parts.back().features ? r.res.timings.image_cache_hits : r.res.timings.image_cache_misses);
      } else {
        rows_before += p.grids[image].tokens(merge);
      }
      token += p.grids[image].tokens(merge);
      ++image;
    }
  }
  r.rows.assign(p.image_row.begin() + c, p.image_row.end());
  for (int64_t& row : r.rows)
    if (row >= 0) row -= rows_before;
  r.max_tokens = req.max_tokens > 0 ? req.max_tokens : m.model->folder().generation.max_new_tokens.value_or(0);
  if (r.max_tokens <= 0) r.max_tokens = ctx - n;
  for (auto& b : r.branches) {
    b->stream.emplace(m.tokenizer, true);
    b->context = p.ids;
    b->choice.finish_reason = "length";
    b->cache = &slot.cache;
    if (r.constraint && r.constraint->whole) b->matcher.emplace(r.constraint->whole);
  }
  return run;
}

int Engine::run_slot(const Run& r) const { return static_cast<int>(r.slot - impl_->slots.data()); }
Engine::RunStage Engine::run_stage(const Run& r) const { return r.stage; }
int64_t Engine::run_tokens(const Run& r) const { return static_cast<int64_t>(r.branches[0]->choice.token_ids.size()); }

// The embeddings of the recomputed part's images: cached ones as they are;
// the others (each distinct image once) preprocessed (the first piece), then
// encoded together one encoder piece at a time (VisionEncoding), and cached;
// then every part's rows concatenated in prompt order.
bool Engine::Impl::vision_piece(Run& r) {
  const Clock::time_point start = Clock::now();
  const VisionEncoder& vision = model->vision();
  if (!r.vision_job) {
    std::vector<size_t> todo;
    for (size_t j = 0; j < r.parts.size(); ++j) {
      if (r.parts[j].features) continue;
      const ImageKey& key = r.p.keys[r.parts[j].image];
      if (std::none_of(todo.begin(), todo.end(), [&](size_t k) { return r.p.keys[r.parts[k].image] == key; }))
        todo.push_back(j);
    }
    if (todo.empty()) {
      gather_images(r);
      r.res.timings.vision_ms += ms_since(start);
      return true;
    }
    auto job = std::make_unique<VisionJob>();
    job->todo = std::move(todo);
    for (const size_t j : job->todo)
      job->pixels.push_back(preprocess(*r.p.images[r.parts[j].image], model->folder().preprocessor, preprocess_options()));
    std::vector<VisionInput> inputs;
    for (size_t k = 0; k < job->todo.size(); ++k)
      inputs.push_back({job->pixels[k].data.data(), r.p.grids[r.parts[job->todo[k]].image]});
    job->encoding = vision.begin(inputs);
    r.vision_job = std::move(job);
    r.res.timings.preprocess_ms += ms_since(start);
    return false;
  }
  VisionEncoding& encoding = r.vision_job->encoding;
  vision.step(encoding, pool);
  // Only the first piece reads the pixels; an interleaved encode lasts long.
  if (encoding.pieces_done() == 1) std::vector<PixelValues>().swap(r.vision_job->pixels);
  if (encoding.done()) {
    cache_images(r, vision.finish(encoding));
    r.vision_job.reset();
    gather_images(r);
  }
  r.res.timings.vision_ms += ms_since(start);
  return !r.vision_job;
}

void Engine::Impl::cache_images(Run& r, VisionFeatures out) {
  const int merge = model->config().vision.spatial_merge_size;
  const size_t width = out.tokens > 0 ? out.embeds.size() / static_cast<size_t>(out.tokens) : 0;
  size_t row = 0;
  for (const size_t j : r.vision_job->todo) {
    const size_t image = r.parts[j].image;
    auto f = std::make_shared<ImageFeatures>();
    f->grid = r.p.grids[image];
    f->tokens = f->grid.tokens(merge);
    const size_t lo = row * width, hi = (row + static_cast<size_t>(f->tokens)) * width;
    f->embeds.assign(out.embeds.begin() + lo, out.embeds.begin() + hi);
    for (const std::vector<float>& level : out.deepstack) f->deepstack.emplace_back(level.begin() + lo, level.begin() + hi);
    row += static_cast<size_t>(f->tokens);
    image_cache.insert(r.p.keys[image], f);
    for (auto& part : r.parts)
      if (!part.features && r.p.keys[part.image] == r.p.keys[image]) part.features = f;
  }
}

// Each part's reference is dropped once copied (the image cache holds its own
// when it is on), so the rows are not resident twice during the prefill.
void Engine::Impl::gather_images(Run& r) {
  VisionFeatures& v = r.vision;
  v = {};
  for (auto& part : r.parts) {
    const ImageFeatures& f = *part.features;
    v.tokens += f.tokens;
    v.image_tokens.push_back(f.tokens);
    v.embeds.insert(v.embeds.end(), f.embeds.begin(), f.embeds.end());
    v.deepstack.resize(f.deepstack.size());
    for (size_t k = 0; k < f.deepstack.size(); ++k)
      v.deepstack[k].insert(v.deepstack[k].end(), f.deepstack[k].begin(), f.deepstack[k].end());
    part.features.reset();
  }
}

bool Engine::Impl::unit(Run& r, int64_t chunk, bool alone) {
  Impl& m = *this;
  TextDecoder& text = m.model->text();
  Slot& slot = *r.slot;
  const GenerateRequest& req = *r.req;
  switch (r.stage) {
    case Run::Stage::Vision: {
      // Alone, the whole encode in this step (nobody waits on it); among
      // other runs, pieces until the budget is spent, so their tokens keep
      // coming. Either way a cancellation is seen between pieces.
      double spent = 0;
      for (;;) {
        if (req.cancel && req.cancel->load()) {
          r.vision_job.reset();
          for (auto& b : r.branches) b->choice.finish_reason = "cancelled";
          r.stage = Run::Stage::Done;
          return false;
        }
        // Preprocessing (no job yet) costs nothing here: it comes with the first encoder piece.
        const double cost = r.vision_job ? r.vision_job->encoding.next_flops() : 0;
        if (!alone && spent > 0 && spent + cost > m.vision_budget) return true;
        if (m.vision_piece(r)) {
          r.stage = Run::Stage::Prefill;
          return true;
        }
        spent += cost;
      }
    }
    case Run::Stage::Prefill: {
      if (req.cancel && req.cancel->load()) {
        for (auto& b : r.branches) b->choice.finish_reason = "cancelled";
        r.stage = Run::Stage::Done;
        return false;
      }
      // One chunk per step, at the decoder's own chunk boundaries (so the
      // numbers equal one forward over the whole prompt), leaving room for
      // other sequences' decode steps in between; shorter pieces while they
      // decode (prefill_piece).
      const Clock::time_point t = Clock::now();
      const int64_t todo = r.n - r.c;
      const int64_t len = prefill_piece(r.prefilled, todo, std::max<int64_t>(1, m.params.batch), chunk);
      const int64_t at = r.c + r.prefilled;
      TextInput in{r.p.ids.data() + at, r.p.positions.pos.data() + at, len, r.rows.data() + r.prefilled, &r.vision};
      text.forward(in, slot.cache, m.pool);
      r.prefilled += len;
      slot.cached_ids.insert(slot.cached_ids.end(), r.p.ids.begin() + at, r.p.ids.begin() + at + len);
      slot.cached_keys.insert(slot.cached_keys.end(), r.p.token_key.begin() + at, r.p.token_key.begin() + at + len);
      if (r.prefilled == todo) {
        Branch& first = r.first();
        text.logits(text.last_hidden(), 1, first.logits.data(), m.pool);
        // The other choices start from the same prompt: its K/V copied, not computed again.
        for (size_t i = 1; i < r.branches.size(); ++i) {
          Branch& b = *r.branches[i];
          b.own_cache = std::make_unique<KvCache>(text.make_cache(slot.cache.capacity(), slot.cache.type()));
          b.own_cache->copy_prefix(slot.cache, slot.cache.size());
          b.cache = b.own_cache.get();
          b.logits = first.logits;
        }
        r.stage = Run::Stage::Decode;
        // The image rows live in the KV cache now (and in the image cache when
        // it is on): this run's copy would only add to the peak memory.
        r.vision = {};
        r.res.timings.prefill_tokens = todo;
        r.decode_start = Clock::now();
      }
      r.res.timings.prefill_ms += ms_since(t);
      return true;
    }
    case Run::Stage::Decode:  // decoding goes through next_token and decode
      return true;
    case Run::Stage::Done:
      return false;
  }
  return false;
}

// The Decode stage of one answer up to its forward: sample the next token
// from its logits (under its grammar's mask) and apply every rule that may
// end it. True, with `tok` to feed back, when the answer goes on. The single
// and the batched step both come through here, so a rule added here holds
// for both.
bool Engine::Impl::next_token(Run& r, Branch& b, int32_t& tok_out) {
  const GenerateRequest& req = *r.req;
  auto done = [&](const char* why) {
    if (why) b.choice.finish_reason = why;
    b.done = true;
    return false;
  };
  if ((req.cancel && req.cancel->load()) || r.stop_all) return done("cancelled");
  SampleStep step;
  b.also_allowed.clear();
  const Clock::time_point t = Clock::now();
  const bool constrained = b.matcher.has_value();
  if (b.matcher) {
    step.allowed = b.matcher->allowed().words.data();
    // The whole answer's value may end here: EOS joins the allowed tokens.
    if (!r.constraint->block && b.matcher->complete()) b.also_allowed = eos;
    step.also_allowed = b.also_allowed;
  } else if (r.constraint && r.constraint->no_calls && tool_call_open >= 0) {
    b.logits[tool_call_open] = -std::numeric_limits<float>::infinity();
  }
  step.top_logprobs = req.top_logprobs;
  step.logprob = &b.logprob;
  const int32_t tok = b.sampler.sample(b.logits.data(), b.context, b.choice.token_ids, step);
  if (constrained) r.res.timings.constraint_ms += ms_since(t);
  if (r.first_token && b.index == 0) {
    r.first_token = false;
    r.res.timings.first_token_ms = ms_since(r.start);
  }
  const bool eos_token = std::find(eos.begin(), eos.end(), tok) != eos.end();
  if (eos_token && (!req.ignore_eos || b.matcher)) return done("stop");
  b.choice.token_ids.push_back(tok);
  b.context.push_back(tok);
  if (req.top_logprobs >= 0) b.choice.logprobs.push_back(b.logprob);
  bool value_complete = false;
  const Clock::time_point ta = Clock::now();
  if (b.matcher) {
    if (!b.matcher->accept(tok)) fail("constrained decoding: the sampler chose token ", tok, ", which the grammar refuses");
    if (b.matcher->complete() && !b.matcher->can_continue()) {
      if (r.constraint->block) b.matcher.reset();  // the block is closed: free text again
      else value_complete = true;
    }
  } else if (r.constraint && r.constraint->block && tok == tool_call_open) {
    b.matcher.emplace(r.constraint->block);  // the model opened a call: it must be a valid one
  }
  if (constrained) r.res.timings.constraint_ms += ms_since(ta);
  const StopStrings::Result sr = b.stops.push(b.stream->push(tok));
  if (!r.emit(b, sr.emit, req.top_logprobs >= 0 ? &b.logprob : nullptr)) return done("cancelled");
  if (sr.stopped) return done("stop");
  if (value_complete) return done("stop");
  if (b.guard.push(tok)) {
    b.choice.repetition_period = b.guard.period();
    return done("repetition");
  }
  if (static_cast<int64_t>(b.choice.token_ids.size()) >= r.max_tokens || b.cache->size() >= b.cache->capacity())
    return done(nullptr);
  tok_out = tok;
  return true;
}

// Feeds toks[i] to answers[i] (distinct caches) in one forward with M =
// answers.size() rows through every matmul, and leaves each one's next logits.
void Engine::Impl::decode(std::span<const DecodeRow> rows, std::span<const int32_t> toks) {
  TextDecoder& text = model->text();
  const size_t b = rows.size();
  const int64_t hid = model->config().text.hidden_size, vocab = model->config().text.vocab_size;
  batch_pos.clear();
  batch_caches.clear();
  for (const DecodeRow& row : rows) {
    batch_pos.push_back(generated_position(row.branch->cache->size(), row.run->p.positions.rope_delta));
    batch_caches.push_back(row.branch->cache);
  }
  if (batch_logits.size() < b * vocab) {
    batch_hidden.resize(b * hid);
    batch_logits.resize(b * vocab);
  }
  text.forward_batch(toks, batch_pos, batch_caches, pool, batch_hidden.data());
  text.logits(batch_hidden.data(), static_cast<int64_t>(b), batch_logits.data(), pool);
  for (size_t i = 0; i < b; ++i) {
    Run& r = *rows[i].run;
    Branch& br = *rows[i].branch;
    std::copy_n(batch_logits.begin() + i * vocab, vocab, br.logits.begin());
    if (br.index == 0) {  // only the slot's own cache is a prefix for later requests
      r.slot->cached_ids.push_back(toks[i]);
      r.slot->cached_keys.push_back(0);
      ++r.res.timings.decode_tokens;
    }
  }
}

bool Engine::step(Run& r) {
  Run* const one[1] = {&r};
  const StepResult s = step(std::span<Run* const>(one))[0];
  if (s.error) std::rethrow_exception(s.error);
  return s.more;
}

std::vector<Engine::StepResult> Engine::step(std::span<Run* const> runs) {
  Impl& m = *impl_;
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (runs[i]->slot == runs[j]->slot) fail("Engine::step: runs ", j, " and ", i, " share a sequence slot");
  std::vector<StepResult> out(runs.size());
  // Decode first, so the tokens of running answers go out before a prefill
  // chunk; a run whose prefill ends below starts decoding next round. Every
  // live answer of every decoding run is one row of the batched forward.
  std::vector<Impl::DecodeRow> batch;
  std::vector<int32_t> toks;
  std::vector<bool> decoder(runs.size());
  bool decoding = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    Run& r = *runs[i];
    if (r.stage != Run::Stage::Decode) continue;
    decoder[i] = decoding = true;
    try {
      for (auto& b : r.branches) {
        if (b->done) continue;
        int32_t tok = 0;
        if (m.next_token(r, *b, tok)) {
          batch.push_back({&r, b.get(), i});
          toks.push_back(tok);
        }
      }
      if (std::all_of(r.branches.begin(), r.branches.end(), [](const auto& b) { return b->done; }))
        r.stage = Run::Stage::Done;
    } catch (...) {
      // This run's rows are the batch's last ones: drop them, the others go on.
      out[i].error = std::current_exception();
      std::erase_if(batch, [&](const Impl::DecodeRow& row) { return row.run == &r; });
      toks.resize(batch.size());
    }
  }
  if (!batch.empty()) {
    try {
      m.decode(batch, toks);
      for (const Impl::DecodeRow& row : batch) out[row.index].more = true;
    } catch (...) {
      for (const Impl::DecodeRow& row : batch) out[row.index].error = std::current_exception();
    }
  }
  // A long prompt is cut into short chunks while others decode, so their
  // streams are not held up by a whole `batch` of prefill.
  // Likewise a vision encode is cut into pieces whenever it has company.
  const int64_t chunk = decoding ? m.params.interleave_batch : m.params.batch;
  const bool alone = runs.size() == 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (decoder[i]) continue;
    try {
      out[i].more = m.unit(*runs[i], chunk, alone);
    } catch (...) {
      out[i].error = std::current_exception();
    }
  }
  return out;
}

GenerateResult Engine::end(Run& r) {
  const bool decoded = r.stage == Run::Stage::Decode || r.stage == Run::Stage::Done;
  if (decoded && r.decode_start != Clock::time_point{}) r.res.timings.decode_ms = ms_since(r.decode_start);
  GenerateResult res = std::move(r.res);
  res.completion_tokens = 0;
  for (auto& bp : r.branches) {
    Branch& b = *bp;
    if (decoded && !b.stops.stopped()) r.emit(b, b.stops.finish(b.stream->finish()), nullptr);
    if (!b.done && b.choice.finish_reason == "length") b.choice.finish_reason = "cancelled";
    Choice c = std::move(b.choice);
    c.text = b.stops.text();
    if (!r.req->tools.empty()) {
      // The calls the answer made, and the text around them.
      ToolCallParser parser;
      parser.push(c.text);
      parser.finish();
      c.tool_calls = parser.calls();
      if (!c.tool_calls.empty()) {
        c.text = parser.content();
        if (c.finish_reason == "stop") c.finish_reason = "tool_calls";
      }
    }
    res.completion_tokens += static_cast<int64_t>(c.token_ids.size());
    if (b.index == 0) static_cast<Choice&>(res) = std::move(c);
    else res.more_choices.push_back(std::move(c));
  }
  return res;
}

GenerateRequest greedy_request(std::vector<Message> messages, int64_t max_tokens) {
  GenerateRequest r;
  r.messages = std::move(messages);
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  r.max_tokens = max_tokens;
  return r;
}

std::unique_ptr<Engine> Engine::create(const EngineParams& params) {
  if (params.ctx_size < 16) fail("--ctx-size ", params.ctx_size, " is too small (minimum 16)");
  if (params.slots < 1 || params.ctx_size / params.slots < 16)
    fail("--ctx-size ", params.ctx_size, " shared by ", params.slots, " slots leaves under 16 tokens each");
  const Clock::time_point t = Clock::now();
  ModelLoadOptions mo;
  mo.format = params.weights;
  mo.precision = params.precision;
  mo.max_batch = std::clamp<int64_t>(params.batch, 1, params.ctx_size);
  mo.progress = params.load_progress;
  auto impl = std::make_unique<Impl>(
      params, params.threads > 0 ? params.threads : physical_cores(), ModelFolder::open(params.model_dir),
      [&](ModelFolder folder, ThreadPool& pool) { return Model::load(std::move(folder), mo, pool); });
  impl->load_ms = ms_since(t);
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
  for (Slot& s : impl_->slots) {
    s.cache.set_size(0);
    s.cached_ids.clear();
    s.cached_keys.clear();
  }
  impl_->image_cache.clear();
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

void Engine::validate(const GenerateRequest& r) {
  constexpr int kMaxChoices = 16;  // each is a row of every decode step and a copy of the prompt's K/V
  if (r.n < 1 || r.n > kMaxChoices) throw FieldError("n", cat("'n' must be in [1, ", kMaxChoices, "], got ", r.n));
  if (r.top_logprobs < -1 || r.top_logprobs > 20)
    throw FieldError("top_logprobs", cat("'top_logprobs' must be in [0, 20], got ", r.top_logprobs));
  const int64_t vocab = impl_->model->config().text.vocab_size;
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
  if (r.tool_choice != ToolChoice::Auto && r.tool_choice != ToolChoice::None && r.tools.empty())
    throw FieldError("tool_choice", "tool_choice asks for a tool call but the request has no tools");
  impl_->constraints().get(r);  // compiles (and caches) the grammars, or names what cannot be enforced
}

// Counting needs only each image's size: no pixels are touched, so this is
// cheap on a request's thread and the engine preprocesses each image once.
std::vector<int32_t> Engine::prompt_tokens(const std::vector<Message>& messages, const std::vector<Tool>& tools) {
  return prepare_prompt(messages, tools, impl_->model->folder(), impl_->chat_template, impl_->tokenizer,
                        impl_->preprocess_options(), std::nullopt)
      .ids;
}

ImageCacheStats Engine::image_cache_stats() const { return impl_->image_cache.stats(); }

}  // namespace qvl
