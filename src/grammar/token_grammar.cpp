// TokenGrammar: interned states, cached transitions and cached token masks.
#include "grammar/token_grammar_impl.h"

#include <algorithm>

#include "grammar/token_vocab_impl.h"
#include "util/error.h"

namespace qvl {

size_t TokenGrammar::Impl::ConfigHash::operator()(const Config& c) const noexcept {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
  for (uint32_t w : c) h = (h ^ w) * 1099511628211ull;
  return static_cast<size_t>(h ^ (h >> 32));
}

TokenGrammar::Impl::Impl(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> v, Limits l)
    : grammar(std::move(g)), vocab(std::move(v)), limits(l) {
  if (!grammar || !vocab) fail("token grammar: needs a grammar and a vocabulary");
  limits.max_states = std::max<size_t>(limits.max_states, 16);
  start = start_config(*grammar);
  depth_states.resize(static_cast<size_t>(vocab->impl().max_depth) + 1);
  reset_states();
}

void TokenGrammar::Impl::reset_states() {
  states.clear();
  next.clear();
  ids.clear();
  stats.mask_bytes = 0;
  stats.masks = 0;
  intern(start);
}

uint32_t TokenGrammar::Impl::intern(Config c) {
  if (auto it = ids.find(c); it != ids.end()) return it->second;
  const auto id = static_cast<uint32_t>(states.size());
  State s;
  s.complete = config_complete(c);
  s.live = config_live(c);
  s.config = c;
  states.push_back(std::move(s));
  next.resize(next.size() + 256, kUnknown);
  ids.emplace(std::move(c), id);
  return id;
}

// Fills the state's whole row: once one byte is asked for, a mask scan asks
// for most of them, and computing them together shares the closures.
uint32_t TokenGrammar::Impl::compute_step(uint32_t state, uint8_t byte) {
  Successors succ = advance_all(*grammar, states[state].config);
  std::vector<uint32_t> ids_of_group;
  ids_of_group.reserve(succ.configs.size());
  for (Config& c : succ.configs) ids_of_group.push_back(c.empty() ? kDead : intern(std::move(c)));
  uint32_t* row = &next[static_cast<size_t>(state) * 256];  // after intern(), which grows `next`
  for (int b = 0; b < 256; ++b) row[b] = succ.group[b] < 0 ? kDead : ids_of_group[static_cast<size_t>(succ.group[b])];
  return row[byte];
}

// One preorder scan of the vocabulary trie: a node's state is its parent's
// state stepped by the node's byte; a dead step skips the whole subtree.
const std::shared_ptr<const TokenMask>& TokenGrammar::Impl::mask(uint32_t state) {
  if (states[state].mask) return states[state].mask;
  const TokenVocab::Impl& v = vocab->impl();
  scratch.assign(v.mask_words + 1, 0);  // + the word of no_token
  uint64_t* words = scratch.data();
  const TokenVocab::Impl::TrieNode* nodes = v.trie.data();
  uint32_t* at_depth = depth_states.data();
  at_depth[0] = state;
  const size_t n = v.trie.size();
  for (size_t i = 0; i < n;) {
    const TokenVocab::Impl::TrieNode& node = nodes[i];
    const uint32_t to = step(at_depth[node.depth - 1], node.byte);
    if (to == kDead) {
      i = node.end;
      continue;
    }
    words[node.token >> 6] |= uint64_t{1} << (node.token & 63);
    at_depth[node.depth] = to;
    ++i;
  }
  for (auto [first, other] : v.duplicates)
    if ((words[first >> 6] >> (first & 63)) & 1) words[other >> 6] |= uint64_t{1} << (other & 63);
  auto m = std::make_shared<TokenMask>();
  m->words.assign(scratch.begin(), scratch.end() - 1);
  ++stats.masks_computed;
  ++stats.masks;
  stats.mask_bytes += m->words.size() * sizeof(uint64_t);
  stats.peak_mask_bytes = std::max(stats.peak_mask_bytes, stats.mask_bytes);
  states[state].mask = std::move(m);
  return states[state].mask;
}

void TokenGrammar::Impl::enforce_limits() {
  if (stats.mask_bytes > limits.max_mask_bytes) {
    // Matchers keep the masks they hold (shared_ptr); the rest are recomputed on demand.
    for (State& s : states) s.mask.reset();
    stats.mask_bytes = 0;
    stats.masks = 0;
  }
  if (states.size() <= limits.max_states) return;
  std::vector<Config> held;
  held.reserve(matchers.size());
  for (uint32_t* m : matchers) held.push_back(states[*m].config);
  reset_states();
  for (size_t k = 0; k < matchers.size(); ++k) *matchers[k] = intern(std::move(held[k]));
  ++stats.resets;
}

TokenGrammar::TokenGrammar(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TokenGrammar::~TokenGrammar() = default;

std::shared_ptr<TokenGrammar> TokenGrammar::create(std::shared_ptr<const Grammar> grammar,
                                                   std::shared_ptr<const TokenVocab> vocab) {
  return create(std::move(grammar), std::move(vocab), Limits{});
}

std::shared_ptr<TokenGrammar> TokenGrammar::create(std::shared_ptr<const Grammar> grammar,
                                                   std::shared_ptr<const TokenVocab> vocab, Limits limits) {
  auto impl = std::make_unique<Impl>(std::move(grammar), std::move(vocab), limits);
  return std::shared_ptr<TokenGrammar>(new TokenGrammar(std::move(impl)));
}

size_t TokenGrammar::cached_masks() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats.masks;
}

TokenGrammar::Stats TokenGrammar::stats() const {
  std::lock_guard lock(impl_->mutex);
  Stats s = impl_->stats;
  s.states = impl_->states.size();
  return s;
}

}  // namespace qvl
