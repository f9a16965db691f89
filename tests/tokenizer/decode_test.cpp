// Decoding: U+FFFD per maximal invalid subsequence (Python's
// errors="replace"), the streaming decoder, and the golden generations.
#include <gtest/gtest.h>

#include "fixture.h"
#include "tokenizer/utf8.h"

namespace qvl {
namespace {

using nlohmann::json;

const std::string kFFFD = "\xEF\xBF\xBD";

TEST(Utf8, LossyReplacesMaximalSubparts) {
  // Expected values from Python: bytes.decode("utf-8", errors="replace").
  EXPECT_EQ(utf8::lossy("abc"), "abc");
  EXPECT_EQ(utf8::lossy("\xC3\xA9"), "\xC3\xA9");
  EXPECT_EQ(utf8::lossy("\xFF"), kFFFD);
  EXPECT_EQ(utf8::lossy("\xE4\xBD"), kFFFD);              // truncated: one subpart
  EXPECT_EQ(utf8::lossy("\xE4\xBD" "a"), kFFFD + "a");
  EXPECT_EQ(utf8::lossy("\xF0\x9F\x98"), kFFFD);          // 3 of 4 bytes of an emoji
  EXPECT_EQ(utf8::lossy("\x80\x80"), kFFFD + kFFFD);      // lone continuations
  EXPECT_EQ(utf8::lossy("\xC0\xAF"), kFFFD + kFFFD);      // overlong
  EXPECT_EQ(utf8::lossy("\xE0\x80\xAF"), kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(utf8::lossy("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);  // surrogate
  EXPECT_EQ(utf8::lossy("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // > U+10FFFF
  EXPECT_EQ(utf8::lossy("\xF1\x80\x80\xE1\x80\xC2"), kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(utf8::lossy(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(utf8::incomplete_tail("ab"), 0u);
  EXPECT_EQ(utf8::incomplete_tail("a\xE4"), 1u);
  EXPECT_EQ(utf8::incomplete_tail("a\xE4\xBD"), 2u);
  EXPECT_EQ(utf8::incomplete_tail("a\xE4\xBD\xA0"), 0u);
  EXPECT_EQ(utf8::incomplete_tail("\xF0\x9F\x98"), 3u);
  EXPECT_EQ(utf8::incomplete_tail("\xE0\x80"), 0u);  // can never complete
  EXPECT_EQ(utf8::incomplete_tail("\xFF"), 0u);
  EXPECT_EQ(utf8::first_invalid("ok\xC3"), 2u);
  EXPECT_EQ(utf8::first_invalid("ok\xC3\xA9"), std::string::npos);
}

// Splits text's bytes into single-byte tokens of the fixture vocabulary.
std::vector<int32_t> byte_tokens(const Tokenizer& tok, const std::string& bytes) {
  std::vector<int32_t> ids;
  for (unsigned char b : bytes) {
    for (int32_t id = 0; id < 256 * 1024; ++id) {
      if (tok.token_bytes(id) == std::string(1, static_cast<char>(b))) {
        ids.push_back(id);
        break;
      }
    }
  }
  return ids;
}

TEST(StreamDecoder, NeverEmitsBrokenUtf8AndMatchesDecode) {
  const Tokenizer& tok = test::fixture_tokenizer();
  std::string text = "a\xE4\xBD\xA0\xF0\x9F\x98\x80\xFF\xE4\xBD" "b\xC3";
  std::vector<int32_t> ids = byte_tokens(tok, text);
  ASSERT_EQ(ids.size(), text.size());
  ids.insert(ids.begin() + 2, tok.token_id("<|im_end|>"));  // a special token in the middle of a character
  StreamDecoder keep(tok, false), skip(tok, true);
  std::string all_keep, all_skip;
  for (int32_t id : ids) {
    std::string a = keep.push(id), b = skip.push(id);
    EXPECT_EQ(utf8::first_invalid(a), std::string::npos);
    EXPECT_EQ(utf8::first_invalid(b), std::string::npos);
    all_keep += a;
    all_skip += b;
  }
  all_keep += keep.finish();
  all_skip += skip.finish();
  EXPECT_EQ(all_keep, tok.decode(ids, false));
  EXPECT_EQ(all_skip, tok.decode(ids, true));
  EXPECT_EQ(all_skip, "a\xE4\xBD\xA0\xF0\x9F\x98\x80" + kFFFD + kFFFD + "b" + kFFFD);
}

TEST(StreamDecoder, HoldsBackOnlyAnIncompleteCharacter) {
  const Tokenizer& tok = test::fixture_tokenizer();
  std::vector<int32_t> ids = byte_tokens(tok, "\xE4\xBD\xA0");
  StreamDecoder d(tok);
  EXPECT_EQ(d.push(ids[0]), "");
  EXPECT_EQ(d.push(ids[1]), "");
  EXPECT_EQ(d.push(ids[2]), "\xE4\xBD\xA0");
  EXPECT_EQ(d.push(tok.encode("hi")[0]), "hi");
  EXPECT_EQ(d.finish(), "");
}

TEST(Decode, GoldenGenerations) {
  // Random-weight generations: arbitrary tokens, split characters included.
  const Tokenizer& tok = test::fixture_tokenizer();
  json manifest = json::parse(test::read_file(test::fixture_path("golden/manifest.json")));
  for (const json& p : manifest["prompts"]) {
    auto ids = p["generated_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok.decode(ids), p["generated_text"].get<std::string>()) << p["name"];
    EXPECT_EQ(tok.decode(ids, true), p["generated_text_skip_special"].get<std::string>()) << p["name"];
    StreamDecoder stream(tok);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.finish();
    EXPECT_EQ(streamed, p["generated_text_skip_special"].get<std::string>()) << p["name"];
  }
}

TEST(Decode, UnknownIdsDecodeToNothing) {
  const Tokenizer& tok = test::fixture_tokenizer();
  std::vector<int32_t> ids = {9707, 151900, -1, 1879};  // 151900: a model row past the tokenizer
  EXPECT_EQ(tok.decode(ids), "Hello world");
}

}  // namespace
}  // namespace qvl
