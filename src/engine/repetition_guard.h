// Stops an answer that has fallen into a loop. Models of this family, asked to
// transcribe a table, sometimes emit the same row (or phrase) again and again
// until the token limit. A repetition *penalty* would fight that by bending
// every logit of a seen token, which corrupts tables whose cells legitimately
// repeat ("0", "|", "-"); the guard instead leaves sampling alone and only
// watches the output.
//
// Rule: the answer is looping when its last L tokens are periodic with some
// period p (token i equals token i - p throughout) and L >= max(window,
// min_repeats * p). Short legitimately repeated runs (a row of equal cells, a
// few identical rows) stay below `window`; a loop reaches it and stops there,
// with finish_reason "repetition". Periods up to kMaxPeriod tokens are
// watched, which covers table rows of any practical width.
//
// Cost: O(kMaxPeriod) integer compares per token, using the length of the
// current periodic run per period (extended by one when the new token equals
// the one p back, reset otherwise).
#pragma once

#include <cstdint>
#include <vector>

namespace qvl {

struct RepetitionGuardOptions {
  int64_t window = 400;  // shortest looping tail that stops generation; 0: guard off
  int min_repeats = 3;   // the looping tail holds at least this many periods
};

class RepetitionGuard {
 public:
  static constexpr int64_t kMaxPeriod = 1024;

  explicit RepetitionGuard(const RepetitionGuardOptions& options);

  // Feeds the next generated token; true when the output now loops.
  bool push(int32_t token);

  // Valid after push() returned true: the loop's period in tokens and the
  // length of the periodic tail.
  int64_t period() const { return period_; }
  int64_t span() const { return span_; }

 private:
  RepetitionGuardOptions options_;
  std::vector<int32_t> tail_;  // the last kMaxPeriod tokens, as a ring
  std::vector<int64_t> run_;   // run_[p]: tokens at the end equal to the one p back
  int64_t count_ = 0;
  int64_t period_ = 0, span_ = 0;
};

}  // namespace qvl
