// TokenMask: bit operations over a vocabulary-sized bitset.
#include <bit>

#include "grammar/grammar.h"
#include "util/error.h"

namespace qvl {

size_t TokenMask::count() const {
  size_t n = 0;
  for (uint64_t w : words) n += static_cast<size_t>(std::popcount(w));
  return n;
}

bool TokenMask::any() const {
  for (uint64_t w : words)
    if (w) return true;
  return false;
}

int32_t TokenMask::only() const {
  int32_t found = -1;
  for (size_t i = 0; i < words.size(); ++i) {
    const uint64_t w = words[i];
    if (!w) continue;
    if (found >= 0 || (w & (w - 1))) return -1;  // a second token
    found = static_cast<int32_t>(i * 64 + static_cast<size_t>(std::countr_zero(w)));
  }
  return found;
}

void TokenMask::intersect(const TokenMask& other) {
  if (other.words.size() != words.size()) fail("token mask: intersecting masks of different vocabularies");
  for (size_t i = 0; i < words.size(); ++i) words[i] &= other.words[i];
}

}  // namespace qvl
