// Next-token choice from logits: penalties, then greedy (temperature 0) or
// temperature → top-k → top-p → min-p → a draw from a seeded generator, the
// order Hugging Face's logits processors apply. Same seed, same tokens.
#pragma once

#include <cstdint>
#include <random>
#include <span>
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
  bool greedy() const { return temperature <= 0.0; }
};

class Sampler {
 public:
  Sampler(const SamplerConfig& config, int64_t vocab);
  // `logits` [vocab] is modified in place. `context`: prompt + generated ids
  // (repetition penalty); `generated`: the completion so far (presence and
  // frequency penalties).
  int32_t sample(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated);
  const SamplerConfig& config() const { return config_; }

 private:
  void apply_penalties(float* logits, std::span<const int32_t> context, std::span<const int32_t> generated);

  SamplerConfig config_;
  int64_t vocab_;
  std::mt19937_64 rng_;
  std::vector<int32_t> counts_;      // [vocab] scratch, reset after use (with presence/frequency penalties)
  std::vector<uint8_t> seen_;        // [vocab] scratch (with a repetition penalty)
  std::vector<int32_t> touched_;     // ids whose scratch entries are set
  std::vector<std::pair<float, int32_t>> candidates_;  // [vocab] scratch
};

}  // namespace qvl
