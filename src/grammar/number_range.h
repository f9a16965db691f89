// Decimal numbers within bounds (JSON Schema minimum / maximum /
// exclusiveMinimum / exclusiveMaximum) as grammar nodes: the bounds become
// digit-by-digit alternatives, the way a range is spelled as a regular
// expression, so a bound costs a few states and no counting. Internal to
// src/grammar.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/grammar.h"

namespace qvl::json {

// One end of a range: an integer value, inclusive or not. Unset: unbounded.
struct Bound {
  int64_t value = 0;
  bool inclusive = true;
};

// Bounds at or beyond this magnitude are tightened to it (18 digits): the
// numbers written are then a subset of those the schema allows, still valid.
constexpr int64_t kMaxBound = 999'999'999'999'999'999;

// -?(0|[1-9][0-9]*) within [lo, hi]; -1 if no integer lies in the range.
GrammarBuilder::Node integer_in(GrammarBuilder& g, std::optional<Bound> lo, std::optional<Bound> hi);
// A JSON number within the range (integer or decimal fraction, no exponent);
// -1 if the range is empty.
GrammarBuilder::Node number_in(GrammarBuilder& g, std::optional<Bound> lo, std::optional<Bound> hi);

}  // namespace qvl::json
