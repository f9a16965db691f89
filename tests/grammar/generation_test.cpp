// Thousands of random generations under a dozen schemas: every one must end
// (never a dead end), parse as JSON, follow the layout rule and validate
// against its schema with the independent validator.
#include <gtest/gtest.h>

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

constexpr int kPerSchema = 200;

class Generations : public testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(Generations, AreValid) {
  const auto& [name, schema_text] = GetParam();
  const ojson schema = ojson::parse(schema_text);
  GrammarBuilder b;
  const auto g = TokenGrammar::create(b.build(b.json_schema(schema, "schema")), test::qwen_vocab());
  test::SchemaValidator validator(schema);
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(name)));
  int unfinished = 0;
  size_t tokens = 0;
  for (int i = 0; i < kPerSchema; ++i) {
    const test::Generation gen = generator().run(g, rng);
    ASSERT_FALSE(gen.dead_end) << gen.text;
    ASSERT_FALSE(gen.refused) << gen.text;
    tokens += static_cast<size_t>(gen.tokens);
    if (!gen.finished) {
      if (getenv("QVL_DUMP")) std::printf("UNFINISHED %s\n", gen.text.c_str());
      ++unfinished;
      continue;
    }
    ojson v;
    try {
      v = ojson::parse(gen.text);
    } catch (const std::exception& e) {
      FAIL() << "not JSON (" << e.what() << "): " << gen.text;
    }
    ASSERT_EQ(validator.check(v), "") << gen.text;
    ASSERT_TRUE(test::compact_layout(gen.text)) << gen.text;
  }
  EXPECT_LE(unfinished, kPerSchema / 50) << "generations should end within the token budget";
  const auto s = g->stats();
  std::printf("  %-14s %d generations, %.0f tokens each, %zu states, %zu masks\n", name.c_str(), kPerSchema,
              static_cast<double>(tokens) / kPerSchema, s.states, s.masks_computed);
}

INSTANTIATE_TEST_SUITE_P(Schemas, Generations, testing::ValuesIn(test::generation_schemas()),
                         [](const auto& info) { return info.param.first; });

}  // namespace
}  // namespace qvl
