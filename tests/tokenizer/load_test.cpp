// tokenizer.json validation (one-line errors naming the file and the field),
// both merge formats, and the Unicode helpers behind normalization.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include "fixture.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace qvl {
namespace {

using nlohmann::json;

json small() { return json::parse(test::read_file(test::data_path("flags_tokenizer.json"))); }

// The message from_json throws for j, or "" when it loads.
std::string load_error(const json& j) {
  try {
    Tokenizer::from_json(j.dump(), "bad.json");
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_EQ(m.rfind("bad.json", 0), 0u) << m;
    return m;
  }
  return "";
}

TEST(TokenizerLoad, MergesAsStringsOrPairs) {
  json strings = small();
  json pairs = strings;
  for (json& m : pairs["model"]["merges"]) {
    std::string s = m;
    m = json::array({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  Tokenizer a = Tokenizer::from_json(strings.dump(), "strings");
  Tokenizer b = Tokenizer::from_json(pairs.dump(), "pairs");
  for (const char* text : {"the cat in the hat", "abc  ab", "thethe"}) EXPECT_EQ(a.encode(text), b.encode(text)) << text;
  EXPECT_EQ(a.encode(" the"), std::vector<int32_t>{258});  // Ġ t, h e, Ġt he
}

TEST(TokenizerLoad, RejectsBrokenFiles) {
  EXPECT_NE(load_error(json::array()).find("JSON"), std::string::npos);
  {
    json j = small();
    j["model"]["merges"].push_back("zz q");
    EXPECT_NE(load_error(j).find("not in the vocabulary"), std::string::npos);
  }
  {
    json j = small();
    j["model"]["merges"].push_back("abc");
    EXPECT_NE(load_error(j).find("merges[10]"), std::string::npos);
  }
  {
    json j = small();
    j["model"]["vocab"]["x"] = "seven";
    EXPECT_NE(load_error(j).find("expected an integer"), std::string::npos);
  }
  {
    json j = small();
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
    EXPECT_NE(load_error(j).find("split regex"), std::string::npos);
  }
  {
    json j = small();
    j["normalizer"] = {{"type", "Lowercase"}};
    EXPECT_NE(load_error(j).find("Lowercase"), std::string::npos);
  }
  {
    json j = small();
    j["model"]["type"] = "WordPiece";
    EXPECT_NE(load_error(j).find("BPE"), std::string::npos);
  }
  {
    json j = small();
    j["model"].erase("merges");
    EXPECT_NE(load_error(j).find("merges"), std::string::npos);
  }
  {
    json j = small();
    j["added_tokens"][0].erase("content");
    EXPECT_NE(load_error(j).find("added_tokens[0]"), std::string::npos);
  }
  std::string text = small().dump();
  for (size_t cut : {size_t{0}, size_t{1}, text.size() / 2, text.size() - 1}) {
    try {
      Tokenizer::from_json(text.substr(0, cut), "cut.json");
      ADD_FAILURE() << "truncated at " << cut << " loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cut.json: invalid JSON at byte"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(Tokenizer::load("/nonexistent/tokenizer.json"), Error);
}

TEST(TokenizerLoad, EncodeRejectsInvalidUtf8) {
  Tokenizer tok = Tokenizer::from_json(small().dump(), "small");
  try {
    tok.encode("ok\xC3(");
    ADD_FAILURE() << "invalid UTF-8 encoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("byte 2"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(tok.encode("").empty());
}

TEST(Unicode, NfcMatchesUtf8procAndFastPathIsSafe) {
  // NFC through the fast path must equal utf8proc's NFC everywhere: check
  // every character after a base letter, and every canonical decomposition
  // recomposed, so a character wrongly thought inert would show up.
  for (uint32_t cp = 0x80; cp < 0x30000; ++cp) {
    if (!utf8proc_codepoint_valid(static_cast<utf8proc_int32_t>(cp))) continue;
    std::string s = "a";
    utf8::append(s, cp);
    utf8proc_uint8_t* ref = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str()));
    ASSERT_NE(ref, nullptr);
    std::string want(reinterpret_cast<char*>(ref));
    free(ref);
    ASSERT_EQ(unicode::nfc(s), want) << "U+" << std::hex << cp;
    utf8proc_uint8_t* nfd = utf8proc_NFD(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str()));
    std::string d(reinterpret_cast<char*>(nfd));
    free(nfd);
    ASSERT_EQ(unicode::nfc(d), want) << "NFD of U+" << std::hex << cp;
  }
  // Hangul: L + V + T jamo compose to one syllable.
  EXPECT_EQ(unicode::nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");
}

TEST(Unicode, Classes) {
  using namespace unicode;
  EXPECT_EQ(classify('a'), kLetter);
  EXPECT_EQ(classify(0x4F60), kLetter);   // 你
  EXPECT_EQ(classify(0x0663), kNumber);   // Arabic-Indic three
  EXPECT_EQ(classify(0x2460), kNumber);   // circled one (No)
  EXPECT_EQ(classify('\n'), kSpace | kLineBreak);
  EXPECT_EQ(classify(0x3000), kSpace);    // ideographic space
  EXPECT_EQ(classify(0x0085), kSpace);    // NEL
  EXPECT_EQ(classify(0x200B), 0);         // zero width space is Cf, not \s
  EXPECT_EQ(classify(0x0301), 0);         // combining mark: neither L nor N
  EXPECT_TRUE(is_word_char('_'));
  EXPECT_FALSE(is_word_char('.'));
}

}  // namespace
}  // namespace qvl
