// One answer being decoded. Choice 0 decodes on the slot's own KV cache; with
// n > 1 each other choice gets a cache of its own holding a copy of the
// prompt's K/V (prefilled once), then its own tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "engine/repetition_guard.h"
#include "engine/sampler.h"
#include "engine/stop_strings.h"
#include "grammar/grammar.h"
#include "model/kv_cache.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

struct Answer {
  int index = 0;  // the choice's number
  Choice choice;  // what the answer has become (its text is set at the end)
  Sampler sampler;
  std::unique_ptr<KvCache> own_cache;  // choices after the first
  KvCache* cache = nullptr;
  std::vector<float> logits;     // [vocab] the next token's
  std::vector<int32_t> context;  // prompt + generated (the repetition penalty reads it)
  StreamDecoder stream;
  StopStrings stops;
  RepetitionGuard guard;
  // The grammar in force: the whole answer's, or a tool-call block's while one is open.
  std::optional<GrammarMatcher> matcher;
  std::vector<int32_t> also_allowed;  // EOS when the whole answer's value is complete
  // A Thinking model's answer is in its reasoning until it takes "</think>":
  // free text, no grammar (the constraint starts after it).
  bool reasoning = false;
  int64_t reasoning_tokens = 0;
  TokenLogprob logprob;               // the last token's, when asked for
  bool done = false;
  // Jump-forward: the tokens the grammar forces after the last one decided,
  // fed with it in the last forward, taken (every rule applied, text sent)
  // at the next step as if each had been decoded alone.
  std::vector<int32_t> forced;
  size_t forced_taken = 0;
  std::vector<float> forced_logits;  // [forced, vocab] the logits each is decided from, when logprobs are asked for

  // The tokens the cache would hold had every token been decoded in a step
  // of its own: the forced ones not taken yet are in it early.
  int64_t fed() const { return cache->size() - static_cast<int64_t>(forced.size() - forced_taken); }

  Answer(int index, const GenerateRequest& request, const SamplerConfig& sampling, int64_t vocab,
         const Tokenizer& tokenizer)
      : index(index),
        sampler(sampling, vocab),
        logits(vocab),
        stream(tokenizer, true),
        stops(request.stop),
        guard(request.repetition_guard) {}

  void end(FinishReason why) {
    choice.finish_reason = why;
    done = true;
  }
};

}  // namespace qvl
