#include "engine/repetition_guard.h"

#include <algorithm>

namespace qvl {

RepetitionGuard::RepetitionGuard(const RepetitionGuardOptions& options) : options_(options) {
  if (options_.window > 0) {
    tail_.assign(kMaxPeriod, 0);
    run_.assign(kMaxPeriod + 1, 0);
  }
}

bool RepetitionGuard::push(int32_t token) {
  if (options_.window <= 0) return false;
  const int64_t n = count_++;  // index of this token
  const int64_t repeats = std::max(1, options_.min_repeats);
  bool looping = false;
  const int64_t periods = std::min<int64_t>(kMaxPeriod, n);
  for (int64_t p = 1; p <= periods; ++p) {
    if (tail_[(n - p) % kMaxPeriod] != token) {
      run_[p] = 0;
      continue;
    }
    const int64_t span = ++run_[p] + p;  // the run plus the period it repeats
    if (!looping && span >= std::max(options_.window, repeats * p)) {
      looping = true;
      period_ = p;
      span_ = span;
    }
  }
  tail_[n % kMaxPeriod] = token;
  return looping;
}

}  // namespace qvl
