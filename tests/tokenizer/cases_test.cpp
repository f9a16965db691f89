// Every case of tests/fixtures/tokenizer/cases.json: ids from Hugging Face's
// Rust tokenizers on the same tokenizer.json, decoded text with and without
// special tokens, and the round trip the file states.
#include <gtest/gtest.h>

#include <thread>

#include "fixture.h"

namespace qvl {
namespace {

using test::fixture_tokenizer;
using test::tokenizer_cases;

std::string show(const std::string& s) { return nlohmann::json(s).dump(); }

TEST(TokenizerCases, FileHasAllCases) {
  const auto& j = tokenizer_cases();
  ASSERT_EQ(j["cases"].size(), j["num_cases"].get<size_t>());
  EXPECT_EQ(fixture_tokenizer().vocab_size(), j["vocab_size_with_added_tokens"].get<size_t>());
}

TEST(TokenizerCases, EncodeMatchesHuggingFace) {
  const Tokenizer& tok = fixture_tokenizer();
  int failures = 0;
  for (const auto& c : tokenizer_cases()["cases"]) {
    std::string text = c["text"];
    auto ids = tok.encode(text);
    auto want = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(ids, want) << "text " << show(text);
    failures += ids != want;
  }
  EXPECT_EQ(failures, 0);
}

TEST(TokenizerCases, DecodeMatchesHuggingFace) {
  const Tokenizer& tok = fixture_tokenizer();
  for (const auto& c : tokenizer_cases()["cases"]) {
    auto ids = c["ids"].get<std::vector<int32_t>>();
    std::string text = c["text"];
    EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>()) << "text " << show(text);
    EXPECT_EQ(tok.decode(ids, true), c["decoded_skip_special"].get<std::string>()) << "text " << show(text);
    if (c["roundtrip_exact"].get<bool>())
      EXPECT_EQ(tok.decode(tok.encode(text)), text);
    else
      EXPECT_NE(tok.decode(tok.encode(text)), text);
  }
}

TEST(TokenizerCases, TokensMatchVocabularyStrings) {
  const Tokenizer& tok = fixture_tokenizer();
  for (const auto& c : tokenizer_cases()["cases"]) {
    auto ids = c["ids"].get<std::vector<int32_t>>();
    auto tokens = c["tokens"].get<std::vector<std::string>>();
    ASSERT_EQ(ids.size(), tokens.size());
    for (size_t k = 0; k < ids.size(); ++k) EXPECT_EQ(tok.token_id(tokens[k]), ids[k]) << tokens[k];
  }
}

TEST(TokenizerCases, FullPrompts) {
  const Tokenizer& tok = fixture_tokenizer();
  const auto& prompts = tokenizer_cases()["prompts"];
  ASSERT_FALSE(prompts.empty());
  for (const auto& p : prompts) {
    std::string text = p["text"];
    EXPECT_EQ(tok.encode(text), p["ids"].get<std::vector<int32_t>>()) << p["name"];
    EXPECT_EQ(tok.decode(p["ids"].get<std::vector<int32_t>>()), text) << p["name"];
  }
}

TEST(TokenizerCases, ConcurrentEncodesShareTheCacheSafely) {
  // A fresh tokenizer so the threads fill its word cache while reading it.
  Tokenizer tok = Tokenizer::load(test::fixture_path("tiny-qwen3vl/tokenizer.json"));
  const auto& cases = tokenizer_cases()["cases"];
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round)
        for (size_t k = 0; k < cases.size(); ++k) {
          const auto& c = cases[(k * (t + 1) + round) % cases.size()];
          failures[t] += tok.encode(c["text"].get<std::string>()) != c["ids"].get<std::vector<int32_t>>();
        }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace qvl
