// The steps of a run: the vision job, prefill pieces, then each answer's
// next token (sampled under its constraint, checked against every rule that
// ends an answer) and the batched decode of every live answer; end() turns
// the answers into choices.
//
// Jump-forward: where an answer's grammar admits one next token, that token
// is forced (so is the "</think>" a spent reasoning budget calls for). The
// forced tokens after a decided one are fed with it as one piece of the
// batched decode (TextDecoder::forward_pieces), within the rows whose bits
// equal decoding each token alone, and taken at the next step in order, each
// decided from its own row's logits exactly as step-by-step decoding decides
// it: the same tokens, text, logprobs and ends.
#include <algorithm>
#include <limits>
#include <optional>

#include "engine/engine_impl.h"
#include "engine/reasoning.h"
#include "engine/tool_calls.h"
#include "util/error.h"

namespace qvl {
namespace {

// Length of the next prefill piece after `done` of `todo` tokens: at most
// `piece` (at least kMinPrefillPiece), inside the `batch`-token chunk the run
// would compute alone, and leaving no rest under kMinPrefillPiece in that
// chunk, so the answer is the same bits whether or not the prefill was cut
// for others.
int64_t prefill_piece(int64_t done, int64_t todo, int64_t batch, int64_t piece) {
  const int64_t chunk_end = std::min(todo, (done / batch + 1) * batch);
  const int64_t left = chunk_end - done;
  const int64_t len = std::min(left, std::max(piece, kMinPrefillPiece));
  return left - len < kMinPrefillPiece ? left : len;
}

// A Thinking answer whose reasoning has used its budget: "</think>" is its
// next token, forced (GenerateRequest::reasoning_budget).
bool reasoning_budget_spent(const GenerateRequest& req, const Answer& a) {
  return a.reasoning && req.reasoning_budget && a.reasoning_tokens >= *req.reasoning_budget;
}

void cancel_all(Engine::Run& r) {
  for (auto& a : r.answers) a->choice.finish_reason = FinishReason::Cancelled;
  r.stage = Engine::RunStage::Done;
}

}  // namespace

bool Engine::Impl::unit(Run& r, int64_t piece, bool alone) {
  switch (r.stage) {
    case Run::Stage::Vision: return vision_unit(r, alone);
    case Run::Stage::Prefill: return prefill_unit(r, piece);
    case Run::Stage::Decode: return true;  // decoding goes through next_token and decode
    case Run::Stage::Done: return false;
  }
  return false;
}

// Alone, the whole encode in this step (nobody waits on it); among other
// runs, pieces until the budget is spent, so their tokens keep coming.
// Either way a cancellation is seen between pieces.
bool Engine::Impl::vision_unit(Run& r, bool alone) {
  double spent = 0;
  for (;;) {
    if (r.cancelled()) {
      r.vision->cancel();
      cancel_all(r);
      return false;
    }
    const double cost = r.vision->next_flops();
    if (!alone && spent > 0 && spent + cost > vision_budget) return true;
    if (r.vision->step(*model, image_cache, pool, r.result.timings)) {
      r.stage = Run::Stage::Prefill;
      return true;
    }
    spent += cost;
  }
}

// One piece per step, at the decoder's own chunk boundaries (so the numbers
// equal one forward over the whole prompt), leaving room for other
// sequences' decode steps in between; shorter pieces while they decode
// (prefill_piece).
bool Engine::Impl::prefill_unit(Run& r, int64_t piece) {
  if (r.cancelled()) {
    cancel_all(r);
    return false;
  }
  TextDecoder& text = model->text();
  Slot& slot = *r.slot;
  const EngineClock::time_point t = EngineClock::now();
  const int64_t todo = r.prompt_length() - r.reused;
  const int64_t len = prefill_piece(r.prefilled, todo, std::max<int64_t>(1, params.batch), piece);
  const int64_t at = r.reused + r.prefilled;
  TextInput in{r.prompt.ids.data() + at, r.prompt.positions.pos.data() + at, len,
               r.vision->rows().data() + r.prefilled, &r.vision->features(), /*prompt=*/true};
  text.forward(in, slot.cache, pool);
  r.prefilled += len;
  slot.hold(r.prompt, at, at + len);
  if (r.prefilled == todo) {
    Answer& first = *r.answers[0];
    text.logits(text.last_hidden(), 1, first.logits.data(), pool);
    // The other choices start from the same prompt: its K/V copied, not computed again.
    for (size_t i = 1; i < r.answers.size(); ++i) {
      Answer& a = *r.answers[i];
      a.own_cache = std::make_unique<KvCache>(text.make_cache(slot.cache.capacity(), slot.cache.type()));
      a.own_cache->copy_prefix(slot.cache, slot.cache.size());
      a.cache = a.own_cache.get();
      a.logits = first.logits;
    }
    r.stage = Run::Stage::Decode;
    // The image rows live in the KV cache now (and in the image cache when
    // it is on): this run's copy would only add to the peak memory.
    r.vision.reset();
    r.result.timings.prefill_tokens = todo;
    r.decode_start = EngineClock::now();
  }
  r.result.timings.prefill_ms += ms_since(t);
  return true;
}

// The single and the batched step both come through here, so a rule added
// here holds for both.
int64_t Engine::Impl::next_tokens(Run& r, Answer& a, int64_t extra) {
  if (r.cancelled() || r.stop_all) {
    drop_forced(r, a, a.forced_taken);
    a.end(FinishReason::Cancelled);
    return 0;
  }
  // The tokens forced last step are in the cache already; each is decided
  // and taken now, from the logits the step-by-step path would have.
  const int64_t vocab = info.vocab_size;
  for (; a.forced_taken < a.forced.size(); ++a.forced_taken) {
    float* logits = a.forced_logits.empty() ? nullptr : &a.forced_logits[a.forced_taken * vocab];
    const int32_t token = decide(r, a, logits);
    if (token != a.forced[a.forced_taken])
      fail("jump-forward: token ", a.forced[a.forced_taken], " was fed as forced, but ", token, " was decided");
    if (!take(r, a, token)) {
      drop_forced(r, a, a.forced_taken);
      return 0;
    }
  }
  a.forced.clear();
  a.forced_taken = 0;
  const int32_t token = decide(r, a, a.logits.data());
  if (!take(r, a, token)) return 0;
  decode_tokens.push_back(token);
  if (!params.no_jump_forward && r.request->jump_forward) plan_forced(r, a, extra);
  decode_tokens.insert(decode_tokens.end(), a.forced.begin(), a.forced.end());
  return 1 + static_cast<int64_t>(a.forced.size());
}

int32_t Engine::Impl::forced_token(const Run& r, GrammarMatcher& m) const {
  const TokenMask& mask = m.allowed();
  if (r.constraint->block || !m.complete()) return mask.only();
  // The value may end here: EOS is a continuation too.
  return !mask.any() && eos.size() == 1 ? eos[0] : -1;
}

int32_t Engine::Impl::decide(Run& r, Answer& a, float* logits) {
  const GenerateRequest& req = *r.request;
  const EngineClock::time_point t = EngineClock::now();
  const bool constrained = a.matcher.has_value();
  SampleStep step;
  a.also_allowed.clear();
  int32_t forced = -1;
  if (a.matcher) {
    step.allowed = a.matcher->allowed().words.data();
    // The whole answer's value may end here: EOS joins the allowed tokens.
    if (!r.constraint->block && a.matcher->complete()) a.also_allowed.assign(eos.begin(), eos.end());
    step.also_allowed = a.also_allowed;
    forced = forced_token(r, *a.matcher);
  } else if (a.reasoning) {
    // Free text until "</think>", which the budget forces once spent. With a
    // value to produce after it, the answer may not end inside the reasoning.
    if (reasoning_budget_spent(req, a)) forced = think_close;
    else if (r.constraint && r.constraint->whole && logits)
      for (int32_t e : eos) logits[e] = -std::numeric_limits<float>::infinity();
  } else if (r.constraint && r.constraint->no_calls && tool_call_open >= 0) {
    logits[tool_call_open] = -std::numeric_limits<float>::infinity();
  }
  step.top_logprobs = req.top_logprobs;
  step.logprob = &a.logprob;
  int32_t token = forced;
  if (forced >= 0) {
    // No draw for a forced token, on this path and on jump-forward's alike
    // (Sampler::score), so a seeded answer is the same with it on or off.
    if (req.top_logprobs >= 0) a.sampler.score(logits, a.context, a.choice.token_ids, step, forced);
    if (a.index == 0) ++r.result.timings.forced_tokens;
  } else {
    if (!logits) fail("jump-forward: a token with a choice was due without its logits");
    token = a.sampler.sample(logits, a.context, a.choice.token_ids, step);
  }
  if (constrained) r.result.timings.constraint_ms += ms_since(t);
  if (r.first_token && a.index == 0) {
    r.first_token = false;
    r.result.timings.first_token_ms = ms_since(r.start);
  }
  return token;
}

bool Engine::Impl::take(Run& r, Answer& a, int32_t token) {
  const GenerateRequest& req = *r.request;
  const bool is_eos = std::find(eos.begin(), eos.end(), token) != eos.end();
  if (is_eos && (!req.ignore_eos || a.matcher)) {
    a.end(FinishReason::Stop);
    return false;
  }
  a.choice.token_ids.push_back(token);
  a.context.push_back(token);
  if (req.top_logprobs >= 0) a.choice.logprobs.push_back(a.logprob);
  bool value_complete = false;
  const bool constrained = a.matcher.has_value();
  const EngineClock::time_point ta = EngineClock::now();
  if (a.reasoning) {
    if (token == think_close) {
      a.reasoning = false;  // the reply starts: under the whole answer's constraint, if any
      if (r.constraint && r.constraint->whole) a.matcher.emplace(r.constraint->whole);
    } else {
      ++a.reasoning_tokens;
    }
  } else if (a.matcher) {
    if (!a.matcher->accept(token))
      fail("constrained decoding: the sampler chose token ", token, ", which the grammar refuses");
    if (a.matcher->complete() && !a.matcher->can_continue()) {
      if (r.constraint->block) a.matcher.reset();  // the block is closed: free text again
      else value_complete = true;
    }
  } else if (r.constraint && r.constraint->block && token == tool_call_open) {
    a.matcher.emplace(r.constraint->block);  // the model opened a call: it must be a valid one
  }
  if (constrained) r.result.timings.constraint_ms += ms_since(ta);
  const StopStrings::Result sr = a.stops.push(a.stream.push(token));
  if (!r.emit(a, sr.emit, req.top_logprobs >= 0 ? &a.logprob : nullptr)) {
    a.end(FinishReason::Cancelled);
    return false;
  }
  if (sr.stopped || value_complete) {
    a.end(FinishReason::Stop);
    return false;
  }
  if (a.guard.push(token)) {
    a.choice.repetition_period = a.guard.period();
    a.end(FinishReason::Repetition);
    return false;
  }
  if (static_cast<int64_t>(a.choice.token_ids.size()) >= r.max_tokens || a.fed() >= a.cache->capacity()) {
    a.end(FinishReason::Length);
    return false;
  }
  return true;
}

// The walk take() would make through the forced tokens, on a copy of the
// grammar: stop strings, the repetition guard and callbacks cannot be
// foreseen (a token they end the answer at leaves the cache again,
// drop_forced), but the grammar, the reasoning budget, max_tokens and the
// context can. A spent budget forces "</think>", and after it the whole
// answer's grammar starts (take()), so its forced opening follows too.
void Engine::Impl::plan_forced(Run& r, Answer& a, int64_t extra) const {
  a.forced.clear();
  a.forced_taken = 0;
  const bool closes_reasoning = reasoning_budget_spent(*r.request, a);
  if (!a.matcher && !closes_reasoning) return;
  const EngineClock::time_point t = EngineClock::now();
  // A piece is attention's rows kernel's at most (the token taken plus the
  // forced), so each row keeps the bits of its token decoded alone.
  const int64_t room = std::min({extra, model->text().exact_piece() - 1,
                                 r.max_tokens - static_cast<int64_t>(a.choice.token_ids.size()) - 1,
                                 a.cache->capacity() - a.cache->size() - 1});
  std::optional<GrammarMatcher> m = a.matcher;
  if (closes_reasoning && room > 0) {
    a.forced.push_back(think_close);
    if (r.constraint && r.constraint->whole) m.emplace(r.constraint->whole);
  }
  while (m && static_cast<int64_t>(a.forced.size()) < room) {
    const int32_t token = forced_token(r, *m);
    if (token < 0 || std::find(eos.begin(), eos.end(), token) != eos.end()) break;
    m->accept(token);
    const bool closes = m->complete() && !m->can_continue();
    if (closes && !r.constraint->block) break;  // the value's last token ends the answer: never fed
    a.forced.push_back(token);
    if (closes) break;  // a tool-call block closed: free text follows
  }
  r.result.timings.constraint_ms += ms_since(t);
}

void Engine::Impl::drop_forced(Run& r, Answer& a, size_t from) {
  const int64_t n = static_cast<int64_t>(a.forced.size() - std::min(from, a.forced.size()));
  if (n > 0) {
    a.cache->set_size(a.cache->size() - n);
    if (a.index == 0) {
      r.slot->cached_ids.resize(r.slot->cached_ids.size() - n);
      r.slot->cached_keys.resize(r.slot->cached_keys.size() - n);
      r.result.timings.decode_tokens -= n;
    }
  }
  a.forced.clear();
  a.forced_taken = 0;
}

void Engine::Impl::decode(std::span<const DecodeRow> rows, std::span<const int32_t> tokens) {
  TextDecoder& text = model->text();
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t hidden = model->config().text.hidden_size, vocab = info.vocab_size;
  batch_pos.clear();
  batch_caches.clear();
  batch_counts.clear();
  for (const DecodeRow& row : rows) {
    const KvCache& cache = *row.answer->cache;
    for (int64_t j = 0; j < row.tokens; ++j)
      batch_pos.push_back(generated_position(cache.size() + j, row.run->prompt.positions.rope_delta));
    batch_caches.push_back(row.answer->cache);
    batch_counts.push_back(row.tokens);
  }
  if (static_cast<int64_t>(batch_hidden.size()) < n * hidden) {
    batch_hidden.resize(n * hidden);
    batch_wanted.resize(n * hidden);
  }
  // Rows past what the matmuls keep exact (bf16 and f32 weights: 8; a GEMM
  // beyond sums in another order) go in groups that are, each reading the
  // weights once, so every row keeps the bits of its token decoded alone.
  const int64_t group_rows = text.exact_rows();
  for (size_t first = 0, row0 = 0; first < rows.size();) {
    size_t last = first;
    int64_t count = 0;
    while (last < rows.size() && (last == first || count + rows[last].tokens <= group_rows)) count += rows[last++].tokens;
    const size_t pieces = last - first;
    text.forward_pieces(tokens.subspan(row0, count), std::span(batch_pos).subspan(row0, count),
                        std::span(batch_caches).subspan(first, pieces), std::span(batch_counts).subspan(first, pieces),
                        pool, batch_hidden.data() + static_cast<int64_t>(row0) * hidden);
    row0 += count;
    first = last;
  }
  if (profile) {
    ++profile->steps;
    profile->rows += n;
  }
  // The rows whose logits are wanted, gathered so lm_head is read once:
  // each piece's last (the next token's), and the rows its forced tokens are
  // decided from when their logprobs are asked for.
  int64_t wanted = 0, at = 0;
  for (const DecodeRow& row : rows) {
    const bool all = row.run->request->top_logprobs >= 0;
    const int64_t first = all ? at : at + row.tokens - 1;
    const int64_t count = at + row.tokens - first;
    std::copy_n(batch_hidden.begin() + first * hidden, count * hidden, batch_wanted.begin() + wanted * hidden);
    wanted += count;
    at += row.tokens;
  }
  if (static_cast<int64_t>(batch_logits.size()) < wanted * vocab) batch_logits.resize(wanted * vocab);
  {
    ProfileTimer timer(profile_clock(&DecodeProfile::logits_ms));
    for (int64_t r = 0; r < wanted; r += group_rows)
      text.logits(batch_wanted.data() + r * hidden, std::min(group_rows, wanted - r), batch_logits.data() + r * vocab,
                  pool);
  }
  int64_t out = 0;
  at = 0;
  for (const DecodeRow& row : rows) {
    Run& r = *row.run;
    Answer& a = *row.answer;
    const auto piece_logits = batch_logits.begin() + out * vocab;
    const int64_t forced = row.tokens - 1;
    if (r.request->top_logprobs >= 0) {
      a.forced_logits.assign(piece_logits, piece_logits + forced * vocab);
      out += forced;
    }
    std::copy_n(batch_logits.begin() + out * vocab, vocab, a.logits.begin());
    ++out;
    if (a.index == 0) {  // only the slot's own cache is a prefix for later requests
      r.slot->cached_ids.insert(r.slot->cached_ids.end(), tokens.begin() + at, tokens.begin() + at + row.tokens);
      r.slot->cached_keys.resize(r.slot->cached_keys.size() + row.tokens, 0);
      r.result.timings.decode_tokens += row.tokens;
      ++r.result.timings.decode_steps;
    }
    at += row.tokens;
  }
}

bool Engine::step(Run& r) {
  Run* const one[1] = {&r};
  StepResult result;
  step(std::span<Run* const>(one), std::span<StepResult>(&result, 1));
  if (result.error) std::rethrow_exception(result.error);
  return result.more;
}

std::vector<Engine::StepResult> Engine::step(std::span<Run* const> runs) {
  std::vector<StepResult> results(runs.size());
  step(runs, results);
  return results;
}

void Engine::step(std::span<Run* const> runs, std::span<StepResult> results) {
  Impl& m = *impl_;
  if (results.size() != runs.size()) fail("Engine::step: ", runs.size(), " runs but ", results.size(), " results");
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (runs[i]->slot == runs[j]->slot) fail("Engine::step: runs ", j, " and ", i, " share a sequence slot");
  std::fill(results.begin(), results.end(), StepResult{});
  // Decode first, so the tokens of running answers go out before a prefill
  // piece; a run whose prefill ends below starts decoding next round. Every
  // live answer of every decoding run is one row of the batched forward.
  m.decode_rows.clear();
  m.decode_tokens.clear();
  m.is_decoding.assign(runs.size(), 0);
  // Rows the batched forward may carry beyond one per live answer with every
  // row keeping the bits of its token decoded alone (TextDecoder::exact_rows):
  // jump-forward's forced tokens spend them, so its answers equal
  // step-by-step decoding's.
  int64_t live = 0;
  for (Run* r : runs)
    if (r->stage == Run::Stage::Decode)
      live += std::count_if(r->answers.begin(), r->answers.end(), [](const auto& a) { return !a->done; });
  int64_t extra = std::max<int64_t>(0, m.model->text().exact_rows() - live);
  bool decoding = false;
  std::optional<ProfileTimer> decode_timer;
  if (live > 0) decode_timer.emplace(m.profile_clock(&DecodeProfile::step_ms));
  for (size_t i = 0; i < runs.size(); ++i) {
    Run& r = *runs[i];
    if (r.stage != Run::Stage::Decode) continue;
    m.is_decoding[i] = 1;
    decoding = true;
    const size_t rows_before = m.decode_rows.size(), tokens_before = m.decode_tokens.size();
    try {
      for (auto& a : r.answers) {
        if (a->done) continue;
        ProfileTimer sampling_timer(m.profile_clock(&DecodeProfile::sampling_ms));
        const int64_t fed = m.next_tokens(r, *a, extra);
        if (fed > 0) {
          m.decode_rows.push_back({&r, a.get(), i, fed});
          extra -= fed - 1;
        }
      }
      if (std::all_of(r.answers.begin(), r.answers.end(), [](const auto& a) { return a->done; }))
        r.stage = Run::Stage::Done;
    } catch (...) {
      // This run's rows are the batch's last ones: drop them, the others go on.
      results[i].error = std::current_exception();
      m.decode_rows.resize(rows_before);
      m.decode_tokens.resize(tokens_before);
    }
  }
  if (!m.decode_rows.empty()) {
    try {
      m.decode(m.decode_rows, m.decode_tokens);
      for (const Impl::DecodeRow& row : m.decode_rows) results[row.index].more = true;
    } catch (...) {
      for (const Impl::DecodeRow& row : m.decode_rows) results[row.index].error = std::current_exception();
    }
  }
  decode_timer.reset();
  // A long prompt is cut into short pieces while others decode, so their
  // streams are not held up by a whole `batch` of prefill. Likewise a vision
  // encode is cut into pieces whenever it has company.
  const int64_t piece = decoding ? m.params.interleave_batch : m.params.batch;
  // A run waits while an earlier run of its flow is still being encoded
  // (GenerateRequest::flow); it keeps its slot and goes on next step.
  m.encoding_now.assign(runs.size(), 0);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (m.is_decoding[i]) continue;
    const std::string& flow = runs[i]->request->flow;
    const bool waits = !flow.empty() && std::any_of(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(i),
                                                    [&](const Run* r) {
                                                      return r->request->flow == flow && r->encoding();
                                                    });
    if (waits) results[i].more = true;
    else m.encoding_now[i] = 1;
  }
  const bool alone = !decoding && std::count(m.encoding_now.begin(), m.encoding_now.end(), 1) == 1;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!m.encoding_now[i]) continue;
    try {
      results[i].more = m.unit(*runs[i], piece, alone);
    } catch (...) {
      results[i].error = std::current_exception();
    }
  }
}

GenerateResult Engine::end(Run& r) {
  const bool thinking = impl_->info.thinking;
  const bool decoded = r.stage == Run::Stage::Decode || r.stage == Run::Stage::Done;
  if (decoded && r.decode_start != EngineClock::time_point{}) r.result.timings.decode_ms = ms_since(r.decode_start);
  GenerateResult res = std::move(r.result);
  res.completion_tokens = 0;
  for (auto& answer : r.answers) {
    Answer& a = *answer;
    if (decoded && !a.stops.stopped()) r.emit(a, a.stops.finish(a.stream.finish()), nullptr);
    if (!a.done) a.choice.finish_reason = FinishReason::Cancelled;  // abandoned before it was done
    Choice c = std::move(a.choice);
    c.text = a.stops.text();
    c.reasoning_tokens = a.reasoning_tokens;
    if (thinking) {
      ReasoningSplitter::Pieces p = split_reasoning(c.text);
      c.reasoning = std::move(p.reasoning);
      c.text = std::move(p.content);
    }
    if (!r.request->tools.empty()) {
      // The calls the answer made, and the text around them.
      ToolCallParser parser;
      parser.push(c.text);
      parser.finish();
      c.tool_calls = parser.calls();
      if (!c.tool_calls.empty()) {
        c.text = parser.content();
        if (c.finish_reason == FinishReason::Stop) c.finish_reason = FinishReason::ToolCalls;
      }
    }
    res.completion_tokens += static_cast<int64_t>(c.token_ids.size());
    if (a.index == 0) static_cast<Choice&>(res) = std::move(c);
    else res.more_choices.push_back(std::move(c));
  }
  return res;
}

}  // namespace qvl
