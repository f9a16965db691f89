// GrammarBuilder: literal, sequence, choice, repeat, forward/define, and what
// build() refuses.
#include <gtest/gtest.h>

#include "grammar/grammar.h"
#include "match.h"
#include "util/error.h"

namespace qvl {
namespace {

using test::ByteMatcher;

TEST(GrammarBuilder, LiteralSequenceChoice) {
  GrammarBuilder b;
  const auto ab = b.sequence({b.literal("a"), b.choice({b.literal("b"), b.literal("cd")}), b.literal("!")});
  ByteMatcher m(b.build(ab));
  EXPECT_TRUE(m.matches("ab!"));
  EXPECT_TRUE(m.matches("acd!"));
  EXPECT_FALSE(m.matches("ac!"));
  EXPECT_FALSE(m.matches("ab"));
  EXPECT_TRUE(m.prefix("ac"));
  EXPECT_FALSE(m.prefix("ax"));
  EXPECT_FALSE(m.matches("ab!!"));
}

TEST(GrammarBuilder, EmptyLiteralIsTheEmptySentence) {
  GrammarBuilder b;
  ByteMatcher m(b.build(b.literal("")));
  EXPECT_TRUE(m.matches(""));
  EXPECT_FALSE(m.prefix("a"));
  GrammarMatcher g(m.grammar());
  EXPECT_TRUE(g.complete());
  EXPECT_FALSE(g.can_continue());
}

TEST(GrammarBuilder, BytesIn) {
  GrammarBuilder b;
  ByteMatcher m(b.build(b.repeat(b.bytes_in({{'0', '9'}, {'a', 'f'}}), 1, -1)));
  EXPECT_TRUE(m.matches("09af3"));
  EXPECT_FALSE(m.matches("g"));
  EXPECT_FALSE(m.matches(""));
}

TEST(GrammarBuilder, BoundedRepeatWithSeparator) {
  GrammarBuilder b;
  ByteMatcher m(b.build(b.repeat(b.literal("a"), 2, 4, b.literal(","))));
  EXPECT_FALSE(m.matches("a"));
  EXPECT_TRUE(m.matches("a,a"));
  EXPECT_TRUE(m.matches("a,a,a"));
  EXPECT_TRUE(m.matches("a,a,a,a"));
  EXPECT_FALSE(m.matches("a,a,a,a,a"));
  EXPECT_FALSE(m.prefix("a,a,a,a,"));
  EXPECT_FALSE(m.matches("aa"));
  EXPECT_FALSE(m.matches("a,a,"));
}

TEST(GrammarBuilder, RepeatZeroAndUnbounded) {
  GrammarBuilder b;
  ByteMatcher opt(b.build(b.repeat(b.literal("xy"), 0, 1)));
  EXPECT_TRUE(opt.matches(""));
  EXPECT_TRUE(opt.matches("xy"));
  EXPECT_FALSE(opt.matches("xyxy"));
  GrammarBuilder c;
  ByteMatcher any(c.build(c.repeat(c.literal("ab"), 0, -1, c.literal(" "))));
  EXPECT_TRUE(any.matches(""));
  EXPECT_TRUE(any.matches("ab ab ab ab ab ab ab ab ab ab ab ab"));
  EXPECT_FALSE(any.matches("abab"));
  GrammarBuilder d;
  ByteMatcher three(d.build(d.repeat(d.literal("z"), 3, 3)));
  EXPECT_TRUE(three.matches("zzz"));
  EXPECT_FALSE(three.matches("zz"));
  EXPECT_FALSE(three.matches("zzzz"));
}

TEST(GrammarBuilder, UnboundedRepeatReachesOneState) {
  GrammarBuilder b;
  ByteMatcher m(b.build(b.repeat(b.literal("a"), 0, -1)));
  GrammarMatcher g(m.grammar());
  ASSERT_TRUE(g.accept_bytes(std::string(5000, 'a')));
  EXPECT_TRUE(g.complete());
  // The right-recursive tail keeps the stack flat: a handful of states, not one per 'a'.
  EXPECT_LT(m.grammar()->stats().states, 8u);
}

TEST(GrammarBuilder, ForwardRecursion) {
  // P -> "" | "(" P ")" P : balanced parentheses.
  GrammarBuilder b;
  const auto p = b.forward();
  b.define(p, b.choice({b.literal(""), b.sequence({b.literal("("), p, b.literal(")"), p})}));
  ByteMatcher m(b.build(p));
  EXPECT_TRUE(m.matches(""));
  EXPECT_TRUE(m.matches("(()())()"));
  EXPECT_TRUE(m.matches("((((((((((()))))))))))"));
  EXPECT_FALSE(m.matches("(()"));
  EXPECT_FALSE(m.prefix("())"));
  EXPECT_TRUE(m.prefix("((("));
}

TEST(GrammarBuilder, RefusesLeftRecursionAndEmptyLanguages) {
  {
    GrammarBuilder b;
    const auto e = b.forward();
    b.define(e, b.choice({b.literal("x"), b.sequence({e, b.literal("+x")})}));
    EXPECT_THROW(b.build(e), Error);
  }
  {
    GrammarBuilder b;
    EXPECT_THROW(b.build(b.choice({})), Error);
  }
  {
    GrammarBuilder b;  // only infinite sentences: nothing to match
    const auto r = b.forward();
    b.define(r, b.sequence({b.literal("a"), r}));
    EXPECT_THROW(b.build(r), Error);
  }
  {
    GrammarBuilder b;
    const auto r = b.forward();
    EXPECT_THROW(b.build(r), Error);  // never defined
  }
  {
    GrammarBuilder b;
    EXPECT_THROW(b.repeat(b.literal("a"), 3, 2), Error);
    EXPECT_THROW(b.sequence({99}), Error);
  }
}

TEST(GrammarBuilder, PrunesAlternativesThatCannotFinish) {
  // "a" followed by nothing-matching must not leave a dead end after 'a'.
  GrammarBuilder b;
  ByteMatcher m(b.build(b.choice({b.sequence({b.literal("a"), b.choice({})}), b.literal("b")})));
  EXPECT_FALSE(m.prefix("a"));
  EXPECT_TRUE(m.matches("b"));
}

TEST(GrammarBuilder, BuildSpendsTheBuilder) {
  GrammarBuilder b;
  const auto n = b.literal("a");
  b.build(n);
  EXPECT_THROW(b.build(n), Error);
}

}  // namespace
}  // namespace qvl
