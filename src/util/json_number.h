// The one way qvl reads a number out of JSON (a request field, a config
// value): the range is checked on the value as nlohmann stores it (int64,
// uint64 or double) before any cast, so no out-of-range double is ever
// converted to an integer (undefined behaviour) and no uint64 wraps to a
// negative int64. The callers turn a NumberCheck into their own error, naming
// the field (and the file).
#pragma once

#include <cmath>
#include <cstdint>

namespace qvl {

enum class NumberCheck { ok, not_a_number, not_an_integer, not_finite, out_of_range };

// An integer in [lo, hi]; an integral float (5.0) counts, as JavaScript
// clients and some tools write every number as a double.
template <class Json>
NumberCheck json_integer(const Json& v, int64_t lo, int64_t hi, int64_t& out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.template get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi)) return NumberCheck::out_of_range;
    out = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    out = v.template get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.template get<double>();
    if (!std::isfinite(d)) return NumberCheck::not_finite;
    if (d != std::floor(d)) return NumberCheck::not_an_integer;
    // [-2^63, 2^63): exactly the doubles that convert to int64.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return NumberCheck::out_of_range;
    out = static_cast<int64_t>(d);
  } else {
    return NumberCheck::not_a_number;
  }
  return out >= lo && out <= hi ? NumberCheck::ok : NumberCheck::out_of_range;
}

// A finite number in [lo, hi] (integers too).
template <class Json>
NumberCheck json_double(const Json& v, double lo, double hi, double& out) {
  if (!v.is_number()) return NumberCheck::not_a_number;
  out = v.template get<double>();  // int64 and uint64 convert to the nearest double: defined
  if (!std::isfinite(out)) return NumberCheck::not_finite;
  return out >= lo && out <= hi ? NumberCheck::ok : NumberCheck::out_of_range;
}

}  // namespace qvl
