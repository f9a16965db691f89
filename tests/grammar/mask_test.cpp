// Token masks over the real Qwen vocabulary: each mask equals brute force
// (accept() of every token on a copy), masks are cached, special tokens never
// match, and the tables' limits (rebuilds, dropped masks) and several threads
// do not change any answer.
#include <gtest/gtest.h>

#include <thread>

#include "grammar/grammar.h"
#include "random_gen.h"
#include "schema_validator.h"
#include "schemas.h"
#include "vocab.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;

const test::RandomGenerator& generator() {
  static const test::RandomGenerator g(*test::qwen_vocab());
  return g;
}

std::shared_ptr<TokenGrammar> schema_grammar(const std::string& schema, TokenGrammar::Limits limits = {}) {
  GrammarBuilder b;
  return TokenGrammar::create(b.build(b.json_schema(ojson::parse(schema), "schema")), test::qwen_vocab(), limits);
}

// The mask at the point after `prefix`, against accept() of every token.
void expect_mask_is_exact(const std::shared_ptr<TokenGrammar>& g, const std::string& prefix) {
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_bytes(prefix)) << prefix;
  const TokenMask& mask = m.allowed();
  const auto& vocab = *test::qwen_vocab();
  ASSERT_EQ(mask.words.size(), (vocab.size() + 63) / 64);
  size_t allowed = 0;
  for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id) {
    GrammarMatcher probe(m);
    const bool ok = probe.accept(id);
    ASSERT_EQ(mask.test(id), ok) << "prefix " << prefix << " token " << id << " '" << vocab.bytes(id) << "'";
    allowed += ok;
  }
  EXPECT_EQ(mask.count(), allowed);
  EXPECT_GT(allowed, 0u) << prefix;
}

TEST(TokenMask, OnlyNamesTheSingleToken) {
  TokenMask m;
  m.words.assign(4, 0);
  EXPECT_EQ(m.only(), -1);  // none
  m.words[2] = uint64_t{1} << 5;
  EXPECT_EQ(m.only(), 2 * 64 + 5);
  m.words[3] = 1;
  EXPECT_EQ(m.only(), -1);  // two, in different words
  m.words[3] = 0;
  m.words[2] |= uint64_t{1} << 63;
  EXPECT_EQ(m.only(), -1);  // two in one word
}

TEST(TokenMask, EqualsBruteForceAcrossStates) {
  const auto g = schema_grammar(test::kInvoiceSchema);
  for (const char* prefix : {
           "",                                      // only '{' tokens
           "{",                                     // the first key
           "{\"invoice_number\": \"",               // inside a free string: most of the vocabulary
           "{\"invoice_number\":\"A-\xe4\xb8",      // inside a split 3-byte character
           "{\"invoice_number\":\"A\",\"date\":\"2024-1",  // a month digit
           "{\"invoice_number\":\"A\",\"date\":\"2024-10-01\",\"vendor\":{\"name\":\"V\"",  // optional address or '}'
           "{\"invoice_number\":\"A\",\"date\":\"2024-10-01\",\"vendor\":{\"name\":\"V\"},\"line_items\":[{\"description\":"
           "\"x\",\"quantity\":12",                 // integer digits or ','
       })
    expect_mask_is_exact(g, prefix);
}

TEST(TokenMask, AnyValueInsideStringAndNumber) {
  GrammarBuilder b;
  const auto g = TokenGrammar::create(b.build(b.json_value()), test::qwen_vocab());
  for (const char* prefix : {"", "[1, {\"k\": \"", "[-0.5e", "{\"a\":[tr"}) expect_mask_is_exact(g, prefix);
}

TEST(TokenMask, CachedAndSpecialTokensExcluded) {
  const auto g = schema_grammar(test::kInvoiceSchema);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_bytes("{\"invoice_number\":\""));
  const TokenMask& first = m.allowed();
  const size_t masks = g->cached_masks();
  EXPECT_EQ(&m.allowed(), &first);  // the same cached mask
  EXPECT_EQ(g->cached_masks(), masks);
  GrammarMatcher other(g);
  ASSERT_TRUE(other.accept_bytes("{\"invoice_number\":\"abc"));
  EXPECT_EQ(&other.allowed(), &first);  // after any character: the same state
  for (int32_t special : {151643, 151644, 151645, 151655, 151935}) {
    EXPECT_FALSE(first.test(special));
    EXPECT_FALSE(m.accept(special));
  }
  EXPECT_TRUE(first.test(151657));  // <tool_call> is text: fine inside a string
  EXPECT_FALSE(m.accept(-1));
  EXPECT_FALSE(m.accept(1 << 30));
}

TEST(TokenMask, AcceptRefusesWithoutMoving) {
  const auto g = schema_grammar(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_bytes("{\"b\""));
  EXPECT_TRUE(m.accept_bytes("{\"a\":"));
  EXPECT_FALSE(m.accept_bytes("1x"));  // refused as a whole: the '1' is not taken
  EXPECT_TRUE(m.accept_bytes("12}"));
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.can_continue());
  EXPECT_FALSE(m.allowed().any());
}

// Generations with tables far too small: every call may rebuild them or drop
// the masks, and the answers must not change.
TEST(TokenMask, TinyLimitsRebuildButAnswerTheSame) {
  const std::string schema = test::kInvoiceSchema;
  const auto g = schema_grammar(schema, {.max_states = 16, .max_mask_bytes = 1});
  test::SchemaValidator validator(ojson::parse(schema));
  std::mt19937 rng(7);
  for (int i = 0; i < 20; ++i) {
    const test::Generation gen = generator().run(g, rng);
    ASSERT_FALSE(gen.dead_end);
    ASSERT_FALSE(gen.refused);
    ASSERT_TRUE(gen.finished);
    const ojson v = ojson::parse(gen.text);
    EXPECT_EQ(validator.check(v), "") << gen.text;
  }
  EXPECT_GT(g->stats().resets, 0u);
  EXPECT_LE(g->stats().mask_bytes, size_t{19 * 1024});
}

TEST(TokenMask, SeveralThreadsShareOneGrammar) {
  const std::string schema = test::generation_schemas()[4].second;  // recursive: the state space keeps growing
  const auto g = schema_grammar(schema, {.max_states = 64, .max_mask_bytes = size_t{8} << 20});
  test::SchemaValidator validator(ojson::parse(schema));
  std::vector<std::string> failures[2];
  auto run = [&](int t) {
    std::mt19937 rng(100 + t);
    for (int i = 0; i < 15; ++i) {
      const test::Generation gen = generator().run(g, rng);
      if (gen.dead_end || gen.refused || !gen.finished) failures[t].push_back("stuck: " + gen.text);
      else if (auto e = validator.check(ojson::parse(gen.text)); !e.empty()) failures[t].push_back(e + ": " + gen.text);
    }
  };
  std::thread a(run, 0), b(run, 1);
  a.join();
  b.join();
  EXPECT_TRUE(failures[0].empty()) << failures[0].front();
  EXPECT_TRUE(failures[1].empty()) << failures[1].front();
}

TEST(TokenVocab, TrieCoversEveryToken) {
  const std::vector<std::string> bytes{"ab", "a", "", "abc", "b", "ab", "\xff"};
  const auto v = std::make_shared<const TokenVocab>(bytes);
  GrammarBuilder b;
  const auto g = TokenGrammar::create(b.build(b.repeat(b.bytes_in({{0, 255}}), 0, -1)), v);
  GrammarMatcher m(g);
  const TokenMask& mask = m.allowed();
  EXPECT_EQ(mask.count(), 6u);  // every token with bytes, duplicates included
  EXPECT_FALSE(mask.test(2));
  EXPECT_TRUE(mask.test(5));
  EXPECT_EQ(v->bytes(3), "abc");
  EXPECT_EQ(v->size(), 7u);
}

}  // namespace
}  // namespace qvl
