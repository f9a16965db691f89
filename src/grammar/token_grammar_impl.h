// TokenGrammar's shared tables. Internal to src/grammar.
//
// Lazy determinization: each distinct configuration (pushdown.h) a matcher
// reaches is interned as a uint32 state; next[state * 256 + byte] caches its
// transitions and each state caches its token mask. Everything is guarded by
// one mutex, taken once per matcher call, never per byte.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/pushdown.h"

namespace qvl {

struct TokenGrammar::Impl {
  static constexpr uint32_t kUnknown = 0xFFFFFFFEu;  // transition not computed yet
  static constexpr uint32_t kDead = 0xFFFFFFFFu;     // no stack can read the byte

  struct State {
    Config config;
    bool complete = false;
    bool live = false;
    std::shared_ptr<const TokenMask> mask;  // null until first asked for
  };
  struct ConfigHash {
    size_t operator()(const Config& c) const noexcept;
  };

  Impl(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> v, Limits l);

  // All below: call with `mutex` held.
  uint32_t step(uint32_t state, uint8_t byte) {
    const uint32_t t = next[static_cast<size_t>(state) * 256 + byte];
    return t != kUnknown ? t : compute_step(state, byte);
  }
  uint32_t compute_step(uint32_t state, uint8_t byte);
  uint32_t intern(Config c);
  const std::shared_ptr<const TokenMask>& mask(uint32_t state);
  // Brings the tables back under `limits`; only between matcher calls, since
  // rebuilding renumbers the states (every live matcher's state_ is rewritten).
  void enforce_limits();
  void reset_states();

  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const TokenVocab> vocab;
  Limits limits;
  Config start;  // the configuration of state 0 (state 0 is always the start)

  std::mutex mutex;
  std::vector<State> states;     // [states]
  std::vector<uint32_t> next;    // [states * 256]
  std::unordered_map<Config, uint32_t, ConfigHash> ids;
  std::vector<uint32_t*> matchers;  // every live matcher's state_, so a rebuild can renumber it
  std::vector<uint32_t> depth_states;  // scratch for mask(): [max token length + 1]
  std::vector<uint64_t> scratch;       // scratch for mask(): [mask words + 1]
  Stats stats;
};

}  // namespace qvl
