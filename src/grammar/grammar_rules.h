// The compiled form of a Grammar: what the matcher walks. Internal to
// src/grammar.
//
// Every alternative of every rule is laid out in one array of elements and
// closed by kEnd, so a parser position is one index into `elems` and a
// pushdown stack is a vector of such indices (return positions below, the
// current position on top).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "grammar/grammar.h"

namespace qvl {

class Grammar {
 public:
  using ByteSet = std::array<uint64_t, 4>;  // bit b: byte b is in the set

  // An element is either a byte set (even) or a rule reference (odd).
  static constexpr uint32_t kEnd = 0xFFFFFFFFu;
  static bool is_rule(uint32_t e) { return e & 1; }
  static uint32_t index(uint32_t e) { return e >> 1; }
  static uint32_t byte_elem(uint32_t set) { return set << 1; }
  static uint32_t rule_elem(uint32_t rule) { return (rule << 1) | 1; }

  bool set_has(uint32_t set, uint8_t b) const { return (sets[set][b >> 6] >> (b & 63)) & 1; }

  std::vector<uint32_t> elems;       // [positions]: the alternatives, each closed by kEnd
  std::vector<uint32_t> alt_begin;   // [rules + 1]: rule r's alternatives are alt_starts[alt_begin[r] .. alt_begin[r+1])
  std::vector<uint32_t> alt_starts;  // [alternatives]: position of each one's first element
  std::vector<ByteSet> sets;         // [byte sets]
  uint32_t start = 0;                // position of [rule_elem(root), kEnd]: the stack a matcher begins with
};

}  // namespace qvl
