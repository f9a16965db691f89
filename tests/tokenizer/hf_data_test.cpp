// Ground truth generated with Hugging Face's tokenizers by
// bench/tokenizer/make_test_data.js: random strings that stress the split
// rules on the fixture tokenizer, and a small tokenizer whose added tokens use
// every flag (lstrip, rstrip, single_word, normalized, special) and whose
// merges are "a b" strings.
#include <gtest/gtest.h>

#include "fixture.h"

namespace qvl {
namespace {

using nlohmann::json;

json data(const std::string& name) {
  return json::parse(test::read_file(test::data_path(name)));
}

std::string show(const std::string& s) { return json(s).dump(); }

TEST(HfData, RandomStringsOnQwenTokenizer) {
  const Tokenizer& tok = test::fixture_tokenizer();
  json cases = data("hf_random_cases.json")["cases"];
  ASSERT_GE(cases.size(), 1000u);
  int failures = 0;
  for (const json& c : cases) {
    std::string text = c["text"];
    auto ids = tok.encode(text);
    if (ids != c["ids"].get<std::vector<int32_t>>()) {
      ADD_FAILURE() << "text " << show(text) << " qvl " << json(ids).dump() << " hf " << c["ids"].dump();
      if (++failures > 10) break;
    }
  }
}

TEST(HfData, AddedTokenFlags) {
  Tokenizer tok = Tokenizer::load(test::data_path("flags_tokenizer.json"));
  const json cases = data("flags_cases.json"), decodes = data("flags_decode.json");
  for (const json& c : cases["cases"]) {
    std::string text = c["text"];
    EXPECT_EQ(tok.encode(text), c["ids"].get<std::vector<int32_t>>()) << "text " << show(text);
  }
  for (const json& c : decodes["cases"]) {
    auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>()) << c["ids"].dump();
    EXPECT_EQ(tok.decode(ids, true), c["decoded_skip_special"].get<std::string>()) << c["ids"].dump();
  }
  // Ids are assigned as `tokenizers` does, whatever the file says.
  EXPECT_EQ(tok.token_id("<mask>"), 266);
  EXPECT_EQ(tok.token_id("in"), 259);  // already in the vocabulary
  EXPECT_TRUE(tok.is_special(259));
  EXPECT_FALSE(tok.is_special(268));  // "cat" is added but not special
}

}  // namespace
}  // namespace qvl
