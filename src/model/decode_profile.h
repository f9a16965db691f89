// Where batched decode steps spend their time, summed over the steps, for
// qvl bench's split (issue 46: what grows with the number of streams). Off
// unless a caller hands one over (TextDecoder::set_profile, and the engine's
// through EngineInternals::set_decode_profile): a decoder without one reads
// no clock.
#pragma once

#include <chrono>
#include <cstdint>

namespace qvl {

struct DecodeProfile {
  double step_ms = 0;       // the decode part of every Engine::step (sampling, forward, logits)
  double matmul_ms = 0;     // the layers' projections and MLP: every text weight read once per step
  double attention_ms = 0;  // each stream's attention over its own KV (K/V written, q/k norm and RoPE)
  double logits_ms = 0;     // lm_head: the output head read once per step
  double sampling_ms = 0;   // each stream's token chosen: penalties, masks, grammar, sampling
  int64_t steps = 0;        // batched forwards
  int64_t rows = 0;         // rows over those forwards (a stream's token each, and forced ones)
  // Whatever the above leave: embedding, norms, residual adds, copies,
  // bookkeeping between the parts.
  double other_ms() const { return step_ms - matmul_ms - attention_ms - logits_ms - sampling_ms; }
};

// Adds the time from construction to destruction to *into; nothing when
// into is null (profiling off).
class ProfileTimer {
 public:
  explicit ProfileTimer(double* into) : into_(into) {
    if (into_) start_ = std::chrono::steady_clock::now();
  }
  ~ProfileTimer() {
    if (into_) *into_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  ProfileTimer(const ProfileTimer&) = delete;
  ProfileTimer& operator=(const ProfileTimer&) = delete;

 private:
  double* into_;
  std::chrono::steady_clock::time_point start_{};
};

}  // namespace qvl
