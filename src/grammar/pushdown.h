// The matcher's semantics, one byte at a time, on configurations: a set of
// pushdown stacks of grammar positions (grammar_rules.h), one per way the
// text so far can be parsed. Internal to src/grammar; TokenGrammar interns
// each configuration as a state and caches these results.
//
// Encoding: the stacks in sorted order, each as its length then its
// positions bottom to top; every non-empty stack's top is a byte set. An
// empty stack means the root rule is finished. No stack at all: dead.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "grammar/grammar_rules.h"

namespace qvl {

using Config = std::vector<uint32_t>;

Config start_config(const Grammar& g);
// The configuration after `byte`; empty if no stack can read it.
Config advance(const Grammar& g, const Config& from, uint8_t byte);
// Every byte's successor at once. A successor depends only on which stacks
// read the byte, so bytes with the same readers share one closure: inside a
// JSON string all printable ASCII is one computation instead of ninety-odd.
struct Successors {
  std::array<int16_t, 256> group;  // [byte]: index into configs, -1: dead
  std::vector<Config> configs;
};
Successors advance_all(const Grammar& g, const Config& from);
bool config_complete(const Config& c);  // holds an empty stack
bool config_live(const Config& c);      // holds a non-empty stack (pruned grammars never dead-end, so a byte can follow)

}  // namespace qvl
