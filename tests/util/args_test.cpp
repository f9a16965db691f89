#include "util/args.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace qvl {
namespace {

Args make() {
  return Args("run", "[options]", "test",
              {{"model", "DIR", "model folder", "", "QVL_TEST_MODEL"},
               {"image", "FILE", "image", "", "", true},
               {"max-tokens", "N", "limit", "256"},
               {"verbose", "", "talk"}});
}

bool parse(Args& a, std::vector<std::string> argv) {
  std::vector<char*> ptrs;
  for (auto& s : argv) ptrs.push_back(s.data());
  return a.parse(static_cast<int>(ptrs.size()), ptrs.data(), 0);
}

TEST(Args, ValuesSwitchesAndDefaults) {
  Args a = make();
  ASSERT_TRUE(parse(a, {"--model", "m", "--image=a.png", "--image", "b.png", "--verbose"}));
  EXPECT_EQ(a.get("model"), "m");
  EXPECT_EQ(a.all("image"), (std::vector<std::string>{"a.png", "b.png"}));
  EXPECT_TRUE(a.on("verbose"));
  EXPECT_EQ(a.get_int("max-tokens", 1, 1000), 256);
}

TEST(Args, EnvironmentFallback) {
  setenv("QVL_TEST_MODEL", "from-env", 1);
  Args a = make();
  ASSERT_TRUE(parse(a, {}));
  EXPECT_TRUE(a.has("model"));
  EXPECT_EQ(a.get("model"), "from-env");
  unsetenv("QVL_TEST_MODEL");
}

TEST(Args, UnknownFlag) {
  Args a = make();
  try {
    parse(a, {"--modle", "x"});
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "run: unknown option '--modle' (see qvl run --help)");
  }
}

TEST(Args, MissingValue) {
  Args a = make();
  EXPECT_THROW(parse(a, {"--model"}), UsageError);
}

TEST(Args, RepeatedSingleFlag) {
  Args a = make();
  EXPECT_THROW(parse(a, {"--model", "a", "--model", "b"}), UsageError);
}

TEST(Args, BadNumbers) {
  Args a = make();
  ASSERT_TRUE(parse(a, {"--max-tokens", "12x"}));
  EXPECT_THROW(a.get_int("max-tokens", 1, 100), UsageError);
  Args b = make();
  ASSERT_TRUE(parse(b, {"--max-tokens", "0"}));
  EXPECT_THROW(b.get_int("max-tokens", 1, 100), UsageError);
}

TEST(Args, SwitchRejectsValue) {
  Args a = make();
  EXPECT_THROW(parse(a, {"--verbose=yes"}), UsageError);
}

}  // namespace
}  // namespace qvl
