// Next-token choice from logits: penalties, logit_bias, the constraint mask,
// then greedy (temperature 0) or temperature → top-k → top-p → min-p → a draw
// from a seeded generator, the order Hugging Face's logits processors apply.
// Same seed, same tokens.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace qvl {

struct SamplerConfig {
  double temperature = 1.0;  // 0: greedy
  int top_k = 0;             // 0: off
  double top_p = 1.0;        // 1: off
  double min_p = 0.0;        // 0: off
  double repetition_penalty = 1.0;  // HF: over prompt and generated tokens
  double presence_penalty = 0.0;    // OpenAI: over generated tokens
  double frequency_penalty = 0.0;   // OpenAI: over generated tokens
  uint64_t seed = 0;
  std::vector<std::pair<int32_t, float>> logit_bias;  // OpenAI: added after the penalties
  bool greedy() const { return temperature <= 0.0; }
};

// A token's log-probability under the distribution it was drawn from: the
// logits after penalties, logit_bias and the constraint mask, divided by the
// temperature (1 when greedy); top-k/top-p/min-p truncation is not applied,
// so the alternatives are the model's next best tokens, not only survivors.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // most likely first; only tokens the mask allows
};

// Per-step extras of a constrained or logprob-reporting generation.
struct SampleStep {
  const uint64_t* allowed = nullptr;      // bitset [ceil(vocab / 64)]: only these tokens; nullptr: any
  std::span<const int32_t> also_allowed;  // allowed besides the bitset (EOS once a constraint is complete)
  int top_logprobs = -1;                  // >= 0: fill *logprob with that many alternatives
  TokenLogprob* logprob = nullptr;
};

class Sampler {
 public:
  Sampler(const SamplerConfig& config, int64_t vocab);
  // `logits` [vocab] is modified in place. `context`: prompt + generated ids
  // (repetition penalty); `generated`: the completion so far (presence and
  // frequency penalties).
  int32_t sample(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated);
  // The same with a mask and/or logprobs. Throws if the mask allows nothing.
  int32_t sample(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated,
                 const SampleStep& step);
  // A token decided without a draw (the only one a constraint admits): its
  // logprob entry, computed as sample() would (penalties, logit_bias, mask),
  // into *step.logprob. The generator does not advance: a forced token costs
  // no randomness, whether it is decided step by step or ahead of its
  // forward (jump-forward), so a seed gives the same answer either way.
  void score(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated,
             const SampleStep& step, int32_t token);
  const SamplerConfig& config() const { return config_; }

 private:
  // The logits sample() and score() draw from: penalties, bias, mask.
  void shape(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated,
             const SampleStep& step);
  void apply_penalties(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated);
  void apply_mask(float* logits, const SampleStep& step);
  int32_t choose(float* logits);
  void fill_logprob(const float* logits, int32_t token, const SampleStep& step);

  SamplerConfig config_;
  int64_t vocab_;
  std::mt19937_64 rng_;
  std::vector<int32_t> counts_;      // [vocab] scratch, reset after use (with presence/frequency penalties)
  std::vector<uint8_t> seen_;        // [vocab] scratch (with a repetition penalty)
  std::vector<int32_t> touched_;     // ids whose scratch entries are set
  std::vector<std::pair<float, int32_t>> candidates_;  // [vocab] scratch
  std::vector<float> kept_;          // [also_allowed] logits saved while the mask is applied
  std::vector<int32_t> top_ids_;     // [top_logprobs] scratch heap
};

}  // namespace qvl
