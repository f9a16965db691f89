// json_value()/json_object(): RFC 8259 syntax at byte level, the layout rule
// (optional single space after ':' and ','), and UTF-8 validity.
#include <gtest/gtest.h>

#include "match.h"

namespace qvl {
namespace {

using test::ByteMatcher;

TEST(JsonValue, Accepts) {
  const ByteMatcher m = test::json_value_matcher();
  for (const char* ok : {
           "0", "-0", "12", "-12.5", "1e5", "1E+5", "1.25e-10", "-2.5E-99", "true", "false", "null", "\"\"", "\"abc\"",
           "[]", "[1]", "[1,2]", "[1, 2]", "{}", "{\"a\":1}", "{\"a\": 1}", "{\"a\":1,\"b\":[true, null]}",
           "{\"a\": {\"b\": {\"c\": []}}}", "[[[[[]]]]]", "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\"\\u00e9\\u20AC\"",
           "\"\\ud83d\\ude00\"", "\"\x7f\"", "\"caf\xc3\xa9\"", "\"\xe2\x82\xac\"", "\"\xf0\x9f\x98\x80\"",
           "\"\xed\x9f\xbf\"", "\"\xf4\x8f\xbf\xbf\"", "\"\xee\x80\x80\"", "{\"\xe4\xb8\xad\": \"\xe6\x96\x87\"}"}) {
    EXPECT_TRUE(m.matches(ok)) << ok;
    EXPECT_TRUE(m.matches_bytewise(ok)) << ok;
  }
}

TEST(JsonValue, Rejects) {
  const ByteMatcher m = test::json_value_matcher();
  for (const char* bad : {
           "", "01", "-", "1.", ".5", "1e", "+1", "1.5e+", "1e100", "1E-307", "tru", "True", "nul", "[1,]", "[,1]", "{\"a\"}", "{\"a\":}",
           "{a:1}", "{\"a\":1,}", "'a'", "\"abc", "[1 ,2]", "[1,  2]", "{\"a\" :1}", "{\"a\":  1}", " 1", "1 ", "[ 1]",
           "{\"a\":1 }", "[1,\n2]", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"\t\"", "\"\n\"", "\"\x01\"",
           "\"\\ud800\"", "\"\\udc00\"", "\"\\ud83d\\u0041\"",  // lone or mismatched surrogate escapes
           "\"\xc0\xaf\"", "\"\xc1\xbf\"", "\"\xe0\x80\xaf\"", "\"\xf0\x80\x80\xaf\"",  // overlong
           "\"\xed\xa0\x80\"", "\"\xed\xbf\xbf\"",  // UTF-8 surrogates
           "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xff\"",  // past U+10FFFF, invalid bytes
           "\"\x80\"", "\"\xc3\"", "\"\xe2\x82\"", "\"\xc3\xa9\xa9\"", "1 2", "{}{}", "[]]"}) {
    EXPECT_FALSE(m.matches(bad)) << bad;
  }
}

TEST(JsonValue, SplitCharacterWaitsInsideItsBytes) {
  const ByteMatcher m = test::json_value_matcher();
  GrammarMatcher g(m.grammar());
  ASSERT_TRUE(g.accept_bytes("\"\xf0\x9f"));  // a token ending inside a 4-byte character
  EXPECT_FALSE(g.accept_bytes("\""));          // the character must be finished first
  EXPECT_FALSE(g.accept_bytes("\x41"));
  ASSERT_TRUE(g.accept_bytes("\x98"));
  ASSERT_TRUE(g.accept_bytes("\x80\""));
  EXPECT_TRUE(g.complete());
  EXPECT_FALSE(g.can_continue());
}

TEST(JsonValue, NumbersCompleteButMayContinue) {
  const ByteMatcher m = test::json_value_matcher();
  GrammarMatcher g(m.grammar());
  ASSERT_TRUE(g.accept_bytes("12"));
  EXPECT_TRUE(g.complete());
  EXPECT_TRUE(g.can_continue());  // "123", "12.5", "12e3"
  EXPECT_FALSE(g.accept_bytes("-"));
  EXPECT_TRUE(g.accept_bytes("."));
  EXPECT_FALSE(g.complete());
}

TEST(JsonObject, OnlyObjects) {
  GrammarBuilder b;
  const ByteMatcher m(b.build(b.json_object()));
  EXPECT_TRUE(m.matches("{}"));
  EXPECT_TRUE(m.matches("{\"k\": [1, {\"x\": null}], \"j\":\"v\"}"));
  EXPECT_FALSE(m.matches("[]"));
  EXPECT_FALSE(m.matches("\"a\""));
  EXPECT_FALSE(m.matches("1"));
}

TEST(JsonValue, SharedWithinOneBuilder) {
  GrammarBuilder b;
  const auto v = b.json_value();
  EXPECT_EQ(v, b.json_value());
  const ByteMatcher m(b.build(b.sequence({b.literal("<"), b.json_object(), b.literal("|"), v, b.literal(">")})));
  EXPECT_TRUE(m.matches("<{\"a\":[1]}|\"x\">"));
  EXPECT_FALSE(m.matches("<[1]|\"x\">"));
}

}  // namespace
}  // namespace qvl
