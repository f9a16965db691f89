// Test and benchmark helper: a random generation under a grammar, the way a
// sampler would drive a matcher (allowed() each step, one allowed token
// accepted), biased towards finishing so it ends within a few hundred tokens.
#pragma once

#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace qvl::test {

struct AllowedCall {
  double seconds;  // one allowed() call
  bool miss;       // it computed a mask
};

struct Generation {
  std::string text;
  int tokens = 0;
  bool finished = false;   // stopped at a complete sentence
  bool dead_end = false;   // allowed() was empty while not complete: must never happen
  bool refused = false;    // accept() refused a token allowed() offered: must never happen
};

// A uniformly random set bit of `mask` (which has `n` of them).
inline int32_t random_allowed(const TokenMask& mask, size_t n, std::mt19937& rng) {
  const size_t bits = mask.words.size() * 64;
  if (n * 32 > bits) {  // dense: rejection sampling is quick
    std::uniform_int_distribution<size_t> any(0, bits - 1);
    for (;;) {
      const auto id = static_cast<int32_t>(any(rng));
      if (mask.test(id)) return id;
    }
  }
  size_t r = std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  for (size_t w = 0; w < mask.words.size(); ++w) {
    uint64_t word = mask.words[w];
    const auto c = static_cast<size_t>(std::popcount(word));
    if (r >= c) {
      r -= c;
      continue;
    }
    for (; r > 0; --r) word &= word - 1;
    return static_cast<int32_t>(w * 64 + static_cast<size_t>(std::countr_zero(word)));
  }
  return -1;
}

// 2: closes a string, object or array and opens none; 1: opens none; 0: opens one.
inline int closing_score(const std::string& b) {
  if (b.find_first_of("{[") != std::string::npos) return 0;
  return b.find_first_of("\"}]") != std::string::npos ? 2 : 1;
}

class RandomGenerator {
 public:
  explicit RandomGenerator(const TokenVocab& vocab) : vocab_(vocab) {
    for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id)
      if (!vocab.bytes(id).empty() && closing_score(vocab.bytes(id)) == 2) closers_.push_back(id);
  }

  Generation run(const std::shared_ptr<TokenGrammar>& grammar, std::mt19937& rng, int max_tokens = 400,
                 std::vector<AllowedCall>* calls = nullptr) const {
    Generation out;
    GrammarMatcher m(grammar);
    std::bernoulli_distribution coin(0.5);
    for (; out.tokens < max_tokens; ++out.tokens) {
      if (m.complete() && (!m.can_continue() || coin(rng))) {
        out.finished = true;
        return out;
      }
      const size_t before = calls ? grammar->stats().masks_computed : 0;
      const auto t0 = std::chrono::steady_clock::now();
      const TokenMask& mask = m.allowed();
      const auto t1 = std::chrono::steady_clock::now();
      if (calls) calls->push_back({std::chrono::duration<double>(t1 - t0).count(), grammar->stats().masks_computed != before});
      const size_t n = mask.count();
      if (n == 0) {
        out.finished = m.complete();
        out.dead_end = !out.finished;
        return out;
      }
      int32_t token = random_allowed(mask, n, rng);
      // Past the first tokens, prefer (among random candidates) one that
      // finishes the sentence, else one that closes a string, object or array.
      if (out.tokens >= 16) {
        int best = -1;
        auto consider = [&](int32_t c) {
          GrammarMatcher probe(m);
          if (!probe.accept(c)) return false;
          const int score = probe.complete() ? 3 : closing_score(vocab_.bytes(c));
          if (score > best) best = score, token = c;
          return true;
        };
        std::uniform_int_distribution<size_t> closer(0, closers_.size() - 1);
        for (int k = 0; k < 64 && best < 2; ++k)
          if (const int32_t c = closers_[closer(rng)]; mask.test(c)) consider(c);
        for (int k = 0; k < 32 && best < 3; ++k)
          if (!consider(random_allowed(mask, n, rng))) {
            out.refused = true;
            return out;
          }
      }
      if (!m.accept(token)) {
        out.refused = true;
        return out;
      }
      out.text += vocab_.bytes(token);
    }
    out.finished = m.complete();
    return out;
  }

 private:
  const TokenVocab& vocab_;
  std::vector<int32_t> closers_;  // tokens with a closing score of 2
};

}  // namespace qvl::test
