#include "engine/stop_strings.h"

#include <gtest/gtest.h>

namespace qvl {
namespace {

TEST(StopStrings, NoStopsPassesThrough) {
  StopStrings s({});
  EXPECT_EQ(s.push("ab").emit, "ab");
  EXPECT_EQ(s.finish("c"), "c");
  EXPECT_EQ(s.text(), "abc");
}

TEST(StopStrings, StopAcrossPiecesIsHeldBackThenCut) {
  StopStrings s({"END"});
  EXPECT_EQ(s.push("hello E").emit, "hello ");  // "E" might start END
  auto r = s.push("N");
  EXPECT_EQ(r.emit, "");
  EXPECT_FALSE(r.stopped);
  r = s.push("D and more");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(s.text(), "hello ");
}

TEST(StopStrings, HeldBackTextIsReleasedWhenItCannotMatch) {
  StopStrings s({"END"});
  EXPECT_EQ(s.push("xE").emit, "x");
  EXPECT_EQ(s.push("x").emit, "Ex");
  EXPECT_EQ(s.finish("EN"), "EN");
  EXPECT_EQ(s.text(), "xExEN");
}

TEST(StopStrings, EarliestOfSeveral) {
  StopStrings s({"cd", "b"});
  auto r = s.push("abcd");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "a");
}

}  // namespace
}  // namespace qvl
