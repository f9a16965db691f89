// The engine's state, shared by its parts: engine.cpp (loading, begin, the
// info a front end reads), generation.cpp (the steps of a run: vision,
// prefill, sample, decode, and its end). Not for front ends: they see
// engine.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/answer.h"
#include "engine/constraint.h"
#include "engine/engine.h"
#include "engine/image_cache.h"
#include "engine/prompt.h"
#include "engine/slot.h"
#include "engine/vision_stage.h"
#include "media/admission.h"
#include "model/model.h"
#include "ops/thread_pool.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

using EngineClock = std::chrono::steady_clock;
inline double ms_since(EngineClock::time_point t) {
  return std::chrono::duration<double, std::milli>(EngineClock::now() - t).count();
}

// Prefill pieces of at least this many tokens run through kernels whose
// rows do not depend on how many rows there are (matmul beyond its small-m
// path, tiled attention), so any cut into such pieces computes the same bits
// (tests/model/batched_decode_test.cpp holds the kernels to it).
constexpr int64_t kMinPrefillPiece = 16;

// One request in flight: its prompt, its answers, and where it is.
struct Engine::Run {
  using Stage = Engine::RunStage;
  const GenerateRequest* request;
  const GenerateCallbacks* callbacks;
  Slot* slot;
  EngineClock::time_point start, decode_start;
  GenerateResult result;  // prompt figures and timings; the choices are the answers'
  PreparedPrompt prompt;
  PreprocessOptions preprocess;  // the request's pixel range, resolved
  std::shared_ptr<const Constraint> constraint;
  int64_t reused = 0;     // prompt tokens whose K/V were taken from a slot
  int64_t prefilled = 0;  // prompt tokens computed so far (after the reused ones)
  int64_t max_tokens = 0;
  bool first_token = true;
  std::unique_ptr<VisionStage> vision;  // until the prefill has read the image rows
  std::vector<std::unique_ptr<Answer>> answers;  // [request->n]; [0] decodes on the slot's cache
  // What answers[1..] commit in their own caches, counted in the memory budget until the run ends.
  std::optional<MemoryAdmission::Reservation> choices_kv;
  Stage stage = Stage::Vision;
  bool stop_all = false;  // a callback asked to stop

  Run(const GenerateRequest& r, const GenerateCallbacks& cb, Slot& s, EngineClock::time_point t)
      : request(&r), callbacks(&cb), slot(&s), start(t) {}

  int64_t prompt_length() const { return static_cast<int64_t>(prompt.ids.size()); }
  bool cancelled() const { return request->cancel && request->cancel->load(); }
  bool encoding() const { return stage == Stage::Vision || stage == Stage::Prefill; }
  // Hands a piece of an answer to the callbacks; false (and every answer
  // stops) when one of them asks to stop.
  bool emit(Answer& a, const std::string& piece, const TokenLogprob* logprob);
};

struct Engine::Impl {
  EngineParams params;
  EngineInfo info;
  ThreadPool pool;
  Tokenizer tokenizer;
  ChatTemplate chat_template;
  std::unique_ptr<Model> model;
  std::vector<Slot> slots;
  std::optional<MemoryAdmission::Reservation> kv_reserved;  // the slots' caches in params.memory
  uint64_t use_clock = 0;  // counts begin()s: Slot::last_used
  ImageEmbeddingCache image_cache;
  uint64_t key_seed;  // image keys are hashed with a per-engine secret (image_cache.h)
  std::vector<int32_t> eos;
  int32_t tool_call_open = -1;  // the <tool_call> token (Qwen's added token), -1 if the tokenizer has none
  int32_t think_close = -1;     // the </think> token a Thinking model ends its reasoning with
  // Multiply-adds ×2 a Vision step may spend among other runs: about one
  // prefill piece of interleave_batch tokens, so an image holds the other
  // streams up no longer than a long prompt does.
  double vision_budget = 0;

  // Compiled constraints; the vocabulary as bytes is built on first use.
  std::unique_ptr<ConstraintCache> constraint_cache;
  std::mutex constraint_cache_mutex;

  // Engine::step's scratch, grown to the most runs and answers seen, so a
  // decode step allocates nothing.
  struct DecodeRow {
    Run* run;
    Answer* answer;
    size_t index;        // the run's position in Engine::step's runs
    int64_t tokens = 1;  // its piece's length in decode_tokens
  };
  std::vector<DecodeRow> decode_rows;
  std::vector<int32_t> decode_tokens;
  std::vector<char> is_decoding;  // [runs]
  std::vector<char> encoding_now;  // [runs] given a vision or prefill unit this step (GenerateRequest::flow)
  std::vector<Pos3> batch_pos;
  std::vector<KvCache*> batch_caches;
  std::vector<int64_t> batch_counts;  // [answers] tokens each feeds
  std::vector<float> batch_hidden;    // [rows, hidden]
  std::vector<float> batch_wanted;    // [rows with logits wanted, hidden]
  std::vector<float> batch_logits;    // [rows with logits wanted, vocab]
  DecodeProfile* profile = nullptr;   // EngineInternals::set_decode_profile; null: off
  double* profile_clock(double DecodeProfile::*part) const { return profile ? &(profile->*part) : nullptr; }

  // The tokenizer is read before the weights, so the memory its parsing
  // frees is not still resident under them (the peak is weights + run).
  Impl(const EngineParams& p, int threads, ModelFolder folder,
       const std::function<std::unique_ptr<Model>(ModelFolder, ThreadPool&)>& load);

  ConstraintCache& constraints();
  SamplerConfig sampler_config(const SamplingParams& s, std::span<const std::pair<int32_t, float>> bias = {}) const;
  // A request's pixel range within the engine's (EngineInfo::min/max_pixels).
  PreprocessOptions preprocess_options(const GenerateRequest& request) const;
  PreparedPrompt prepare(const GenerateRequest& request, bool with_keys) const;

  // generation.cpp: the unit of a run outside the Decode stage: its vision
  // (all of it when `alone`, else pieces up to vision_budget), or one prefill
  // piece of at most `piece` tokens. False when the run is over.
  bool unit(Run& r, int64_t piece, bool alone);
  bool vision_unit(Run& r, bool alone);
  bool prefill_unit(Run& r, int64_t piece);
  // The Decode stage of one answer up to its forward: take the tokens forced
  // last step, decide the next token and apply every rule that may end the
  // answer. When it goes on, appends to decode_tokens what to feed: that
  // token and, with jump-forward, up to `extra` tokens the grammar forces
  // after it; returns how many (0: the answer ended).
  int64_t next_tokens(Run& r, Answer& a, int64_t extra);
  // The answer's next token from `logits`: the only one its grammar admits
  // (no draw; `logits` only read for its logprob), else sampled.
  int32_t decide(Run& r, Answer& a, float* logits);
  // Appends `token` to the answer and applies every rule that may end it;
  // false when it ended.
  bool take(Run& r, Answer& a, int32_t token);
  // The token the grammar at `m` forces (its only continuation, EOS counted
  // where the value may end), or -1 when the answer has a choice.
  int32_t forced_token(const Run& r, GrammarMatcher& m) const;
  // Jump-forward: a.forced = the tokens the grammar (or a spent reasoning
  // budget, "</think>") forces after the token just taken, at most `extra`,
  // stopping short of one that would end the answer by the grammar,
  // max_tokens or the context.
  void plan_forced(Run& r, Answer& a, int64_t extra) const;
  // Forgets a.forced[from...]: fed, but the answer ended before them, so
  // they leave the cache as if never fed.
  void drop_forced(Run& r, Answer& a, size_t from);
  // Feeds each row's tokens (its piece: a token, then those forced after it)
  // to its answer's cache in one batched forward, and leaves each answer's
  // next logits (and its forced tokens' logits when logprobs are asked for).
  void decode(std::span<const DecodeRow> rows, std::span<const int32_t> tokens);
};

}  // namespace qvl
