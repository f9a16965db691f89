#include "grammar/number_range.h"

#include <algorithm>
#include <string>
#include <vector>

namespace qvl::json {
namespace {

using Node = GrammarBuilder::Node;
constexpr int64_t kInf = INT64_MAX;  // an unbounded magnitude

Node digit(GrammarBuilder& g) { return g.bytes_in({{'0', '9'}}); }
Node digits(GrammarBuilder& g, int n) { return n == 0 ? g.literal("") : g.repeat(digit(g), n, n); }

// Equal-length decimal strings lo..hi (lo <= hi): the common prefix, then
// lo's digit with the rest from lo up, the digits between with any rest, and
// hi's digit with the rest up to hi.
Node same_length(GrammarBuilder& g, const std::string& lo, const std::string& hi) {
  if (lo.empty()) return g.literal("");
  const size_t n = lo.size();
  if (lo[0] == hi[0]) return g.sequence({g.literal(lo.substr(0, 1)), same_length(g, lo.substr(1), hi.substr(1))});
  const std::string zeros(n - 1, '0'), nines(n - 1, '9');
  const uint8_t a = static_cast<uint8_t>(lo[0]), b = static_cast<uint8_t>(hi[0]);
  if (lo.substr(1) == zeros && hi.substr(1) == nines) return g.sequence({g.bytes_in({{a, b}}), digits(g, static_cast<int>(n - 1))});
  std::vector<Node> alts;
  alts.push_back(g.sequence({g.literal(lo.substr(0, 1)), same_length(g, lo.substr(1), nines)}));
  if (b - a > 1)
    alts.push_back(g.sequence({g.bytes_in({{static_cast<uint8_t>(a + 1), static_cast<uint8_t>(b - 1)}}),
                               digits(g, static_cast<int>(n - 1))}));
  alts.push_back(g.sequence({g.literal(hi.substr(0, 1)), same_length(g, zeros, hi.substr(1))}));
  return g.choice(std::move(alts));
}

int64_t pow10(int n) {
  int64_t p = 1;
  while (n-- > 0) p *= 10;
  return p;
}

// Canonical decimals (no leading zero but "0") of a..b, 0 <= a <= b, b kInf
// for no upper end; -1 when a > b.
Node magnitude_in(GrammarBuilder& g, int64_t a, int64_t b) {
  if (a > b) return -1;
  std::vector<Node> alts;
  const int la = static_cast<int>(std::to_string(a).size());
  const int lb = b == kInf ? la : static_cast<int>(std::to_string(b).size());
  for (int len = la; len <= lb; ++len) {
    const int64_t first = len == 1 ? 0 : pow10(len - 1);
    const int64_t last = len >= 19 ? INT64_MAX : pow10(len) - 1;
    const int64_t lo = std::max(a, first), hi = b == kInf ? last : std::min(b, last);
    if (lo <= hi) alts.push_back(same_length(g, std::to_string(lo), std::to_string(hi)));
  }
  // Beyond the lower end's length, without an upper end: any longer number.
  if (b == kInf) alts.push_back(g.sequence({g.bytes_in({{'1', '9'}}), g.repeat(digit(g), la, -1)}));
  return alts.size() == 1 ? alts[0] : g.choice(std::move(alts));
}

// The magnitudes m (>= 0) a side of the range allows, from the signed bounds
// mapped onto that side: [lo, hi] with inclusivity; hi kInf for none.
struct Side {
  int64_t lo = 0;
  bool lo_inclusive = true;
  int64_t hi = kInf;
  bool hi_inclusive = true;
};

Node integers(GrammarBuilder& g, const Side& s) {
  const int64_t a = s.lo_inclusive ? s.lo : s.lo + 1;
  const int64_t b = s.hi == kInf ? kInf : s.hi_inclusive ? s.hi : s.hi - 1;
  return magnitude_in(g, a, b);
}

// I(.F)? with I.F inside the side's range: integer parts strictly inside
// take any fraction; at an exclusive lower end only a non-zero fraction; at
// an inclusive upper end only a zero one.
Node decimals(GrammarBuilder& g, const Side& s) {
  const Node frac = g.sequence({g.literal("."), g.repeat(digit(g), 1, -1)});
  const Node any_frac = g.choice({g.literal(""), frac});
  const Node zero_frac = g.choice({g.literal(""), g.sequence({g.literal("."), g.repeat(g.literal("0"), 1, -1)})});
  const Node nonzero_frac = g.sequence({g.literal("."), g.repeat(digit(g), 0, -1), g.bytes_in({{'1', '9'}}),
                                        g.repeat(digit(g), 0, -1)});
  std::vector<Node> alts;
  const int64_t lo = s.lo_inclusive ? s.lo : s.lo + 1;   // integer parts with any fraction, from
  const int64_t hi = s.hi == kInf ? kInf : s.hi - 1;     // ... to (below the upper end)
  if (const Node inner = magnitude_in(g, lo, hi); inner >= 0) alts.push_back(g.sequence({inner, any_frac}));
  if (!s.lo_inclusive && (s.hi == kInf || s.lo < s.hi))
    alts.push_back(g.sequence({g.literal(std::to_string(s.lo)), nonzero_frac}));
  if (s.hi != kInf && s.hi_inclusive && s.hi >= lo) alts.push_back(g.sequence({g.literal(std::to_string(s.hi)), zero_frac}));
  if (alts.empty()) return -1;
  return alts.size() == 1 ? alts[0] : g.choice(std::move(alts));
}

template <typename Body>
Node signed_range(GrammarBuilder& g, std::optional<Bound> lo, std::optional<Bound> hi, Body body) {
  auto clamp = [](std::optional<Bound>& b, bool upper) {
    if (!b) return;
    if (b->value > kMaxBound) b = upper ? Bound{kMaxBound, true} : Bound{kMaxBound, b->inclusive};
    if (b->value < -kMaxBound) b = upper ? Bound{-kMaxBound, b->inclusive} : Bound{-kMaxBound, true};
  };
  clamp(lo, false);
  clamp(hi, true);
  if (!lo) lo = Bound{-kMaxBound, true};  // an open end still writes at most 18 digits
  if (!hi) hi = Bound{kMaxBound, true};
  std::vector<Node> alts;
  // v >= 0: magnitudes from max(lo, 0) up to hi.
  if (hi->value > 0 || (hi->value == 0 && hi->inclusive)) {
    Side s;
    if (lo->value >= 0) s = {lo->value, lo->inclusive, hi->value, hi->inclusive};
    else s = {0, true, hi->value, hi->inclusive};
    if (const Node n = body(g, s); n >= 0) alts.push_back(n);
  }
  // v < 0: "-" then magnitudes from max(-hi, 0) (exclusive at 0) up to -lo.
  if (lo->value < 0) {
    Side s;
    if (hi->value < 0) s = {-hi->value, hi->inclusive, -lo->value, lo->inclusive};
    else s = {0, false, -lo->value, lo->inclusive};
    if (const Node n = body(g, s); n >= 0) alts.push_back(g.sequence({g.literal("-"), n}));
  }
  if (alts.empty()) return -1;
  return alts.size() == 1 ? alts[0] : g.choice(std::move(alts));
}

}  // namespace

Node integer_in(GrammarBuilder& g, std::optional<Bound> lo, std::optional<Bound> hi) {
  return signed_range(g, lo, hi, integers);
}

Node number_in(GrammarBuilder& g, std::optional<Bound> lo, std::optional<Bound> hi) {
  return signed_range(g, lo, hi, decimals);
}

}  // namespace qvl::json
