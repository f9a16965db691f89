// Test helper: run a grammar over raw bytes with a vocabulary of the 256
// single bytes (so accept_bytes alone decides).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace qvl::test {

inline std::shared_ptr<const TokenVocab> byte_vocab() {
  std::vector<std::string> t;
  for (int b = 0; b < 256; ++b) t.emplace_back(1, static_cast<char>(b));
  static const auto v = std::make_shared<const TokenVocab>(std::move(t));
  return v;
}

class ByteMatcher {
 public:
  explicit ByteMatcher(std::shared_ptr<const Grammar> g) : tg_(TokenGrammar::create(std::move(g), byte_vocab())) {}
  // The whole text is a sentence of the grammar.
  bool matches(std::string_view text) const {
    GrammarMatcher m(tg_);
    return m.accept_bytes(text) && m.complete();
  }
  // The text can be continued into a sentence.
  bool prefix(std::string_view text) const {
    GrammarMatcher m(tg_);
    return m.accept_bytes(text);
  }
  // Feeds the text one byte at a time (the way split multi-byte tokens arrive).
  bool matches_bytewise(std::string_view text) const {
    GrammarMatcher m(tg_);
    for (char c : text)
      if (!m.accept_bytes(std::string_view(&c, 1))) return false;
    return m.complete();
  }
  const std::shared_ptr<TokenGrammar>& grammar() const { return tg_; }

 private:
  std::shared_ptr<TokenGrammar> tg_;
};

inline ByteMatcher json_value_matcher() {
  GrammarBuilder b;
  return ByteMatcher(b.build(b.json_value()));
}

}  // namespace qvl::test
