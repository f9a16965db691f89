// util/printable: outside text quoted into one-line error messages, and
// qvl::Error keeping a whole message whatever it quotes.
#include "util/printable.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace qvl {
namespace {

TEST(Printable, ControlCharactersVisibleNothingCut) {
  EXPECT_EQ(printable(std::string("a\0b\n\x7f", 5)), "a\\u0000b\\n\\u007f");
  EXPECT_EQ(printable("abcdef", 3), "abc...");
  EXPECT_EQ(printable("\xc3\xa9\xc3\xa9", 3), "\xc3\xa9...");  // never half a character
  const Error e(std::string("field \0x\0 is bad", 16));
  EXPECT_EQ(std::string(e.what()), "field \\u0000x\\u0000 is bad");
}

}  // namespace
}  // namespace qvl
