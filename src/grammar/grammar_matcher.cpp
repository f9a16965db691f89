// GrammarMatcher: a state id in its TokenGrammar's tables.
#include <algorithm>

#include "grammar/token_grammar_impl.h"
#include "util/error.h"

namespace qvl {

GrammarMatcher::GrammarMatcher(std::shared_ptr<TokenGrammar> grammar) : grammar_(std::move(grammar)) {
  if (!grammar_) fail("grammar matcher: needs a TokenGrammar");
  TokenGrammar::Impl& g = grammar_->impl();
  std::lock_guard lock(g.mutex);
  state_ = 0;
  g.matchers.push_back(&state_);
}

GrammarMatcher::~GrammarMatcher() {
  if (!grammar_) return;  // moved from
  TokenGrammar::Impl& g = grammar_->impl();
  std::lock_guard lock(g.mutex);
  std::erase(g.matchers, &state_);
}

GrammarMatcher::GrammarMatcher(GrammarMatcher&& other) noexcept
    : grammar_(std::move(other.grammar_)), mask_(std::move(other.mask_)) {
  if (!grammar_) return;
  TokenGrammar::Impl& g = grammar_->impl();
  std::lock_guard lock(g.mutex);
  state_ = other.state_;
  std::replace(g.matchers.begin(), g.matchers.end(), &other.state_, &state_);
}

GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&& other) noexcept {
  if (this == &other) return *this;
  if (grammar_) {
    TokenGrammar::Impl& g = grammar_->impl();
    std::lock_guard lock(g.mutex);
    std::erase(g.matchers, &state_);
  }
  grammar_ = std::move(other.grammar_);
  mask_ = std::move(other.mask_);
  if (grammar_) {
    TokenGrammar::Impl& g = grammar_->impl();
    std::lock_guard lock(g.mutex);
    state_ = other.state_;
    std::replace(g.matchers.begin(), g.matchers.end(), &other.state_, &state_);
  }
  return *this;
}

GrammarMatcher::GrammarMatcher(const GrammarMatcher& other) : grammar_(other.grammar_), mask_(other.mask_) {
  if (!grammar_) return;
  TokenGrammar::Impl& g = grammar_->impl();
  std::lock_guard lock(g.mutex);
  state_ = other.state_;
  g.matchers.push_back(&state_);
}

GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& other) {
  if (this != &other) *this = GrammarMatcher(other);
  return *this;
}

const TokenMask& GrammarMatcher::allowed() {
  TokenGrammar::Impl& g = grammar_->impl();
  std::lock_guard lock(g.mutex);
  g.enforce_limits();
  mask_ = g.mask(state_);
  return *mask_;
}

bool GrammarMatcher::accept(int32_t token) {
  const TokenVocab& v = *grammar_->impl().vocab;  // immutable: no lock needed
  if (token < 0 || static_cast<size_t>(token) >= v.size()) return false;
  const std::string& b = v.bytes(token);
  return !b.empty() && accept_bytes(b);
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  TokenGrammar::Impl& g = grammar_->impl();
  std::lock_guard lock(g.mutex);
  g.enforce_limits();
  uint32_t s = state_;
  for (char c : bytes) {
    s = g.step(s, static_cast<uint8_t>(c));
    if (s == TokenGrammar::Impl::kDead) return false;
  }
  state_ = s;
  return true;
}

bool GrammarMatcher::complete() const {
  TokenGrammar::Impl& g = grammar_->impl();
  std::lock_guard lock(g.mutex);
  return g.states[state_].complete;
}

bool GrammarMatcher::can_continue() const {
  TokenGrammar::Impl& g = grammar_->impl();
  std::lock_guard lock(g.mutex);
  return g.states[state_].live;
}

}  // namespace qvl
