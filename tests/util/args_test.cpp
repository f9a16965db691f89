#include "util/args.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"

namespace qvl {
namespace {

enum class Color { Red, Green };
const char* color_name(Color c) { return c == Color::Red ? "red" : "green"; }

// A struct as the engine's and the server's are: its member initialisers are the defaults.
struct Settings {
  std::string model;
  std::vector<std::string> images = {"default.png"};
  int64_t max_tokens = 256;
  double temperature = 0.7;
  std::optional<int> top_k;
  int64_t min_pixels = 0;  // 0: the model's
  size_t cache_bytes = size_t{8} << 20;
  Color color = Color::Red;
  std::string format = "text";
  bool verbose = false;
};

void visit(Settings& s, Args& v) {
  v(s.model, "model", "DIR", "model folder").env("QVL_TEST_MODEL");
  v(s.images, "image", "FILE", "an image");
  v(s.max_tokens, "max-tokens", "N", "limit").range(1, 1000).env("QVL_TEST_MAX_TOKENS");
  v(s.temperature, "temperature", "T", "sampling temperature").range(0, 2);
  v(s.top_k, "top-k", "K", "top k").range(0, 100).unset("the model's");
  v(s.min_pixels, "min-pixels", "N", "smallest area").range(1, int64_t{1} << 40).unset("the model's");
  v(s.cache_bytes, "cache-mb", "MB", "cache size").range(0, 1024).unit(1 << 20);
  v(s.color, "color", "NAME", "a color").choices({Color::Red, Color::Green}, color_name);
  v(s.format, "format", "FORMAT", "output | format").choices({"text", "json"});
  v(s.verbose, "verbose", "talk").env("QVL_TEST_VERBOSE");
}

// Parses argv into a default-constructed Settings (or `s`); throws what parse() throws.
Settings parse(std::vector<std::string> argv, Settings s = {}) {
  Args a("run", "[options]", "test");
  visit(s, a);
  std::vector<char*> ptrs;
  for (auto& w : argv) ptrs.push_back(w.data());
  EXPECT_TRUE(a.parse(static_cast<int>(ptrs.size()), ptrs.data(), 0));
  return s;
}

std::string usage_error(std::vector<std::string> argv) {
  try {
    parse(std::move(argv));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(Args, UnsetOptionsKeepTheStructsDefaults) {
  const Settings s = parse({});
  const Settings d;
  EXPECT_EQ(s.model, d.model);
  EXPECT_EQ(s.images, d.images);
  EXPECT_EQ(s.max_tokens, 256);
  EXPECT_EQ(s.temperature, 0.7);
  EXPECT_FALSE(s.top_k);
  EXPECT_EQ(s.cache_bytes, d.cache_bytes);
  EXPECT_EQ(s.color, Color::Red);
  EXPECT_FALSE(s.verbose);
}

TEST(Args, GivenOrderKeepsTheCommandLineOrder) {
  Settings s;
  Args a("run", "[options]", "test");
  visit(s, a);
  std::vector<std::string> argv = {"--image", "a.png", "--model=m", "--image=b.png", "--verbose"};
  std::vector<char*> ptrs;
  for (auto& w : argv) ptrs.push_back(w.data());
  ASSERT_TRUE(a.parse(static_cast<int>(ptrs.size()), ptrs.data(), 0));
  EXPECT_EQ(a.given_order(), (std::vector<std::string>{"image", "model", "image", "verbose"}));
}

TEST(Args, ValuesAreReadAsTheMembersType) {
  const Settings s =
      parse({"--model", "m", "--image=a.png", "--image", "b.png", "--max-tokens", "12", "--temperature", "0.25",
             "--top-k", "5", "--cache-mb", "3", "--color", "green", "--format=json", "--verbose", "pos"});
  EXPECT_EQ(s.model, "m");
  EXPECT_EQ(s.images, (std::vector<std::string>{"a.png", "b.png"}));  // the given images replace the default
  EXPECT_EQ(s.max_tokens, 12);
  EXPECT_EQ(s.temperature, 0.25);
  EXPECT_EQ(s.top_k, 5);
  EXPECT_EQ(s.cache_bytes, size_t{3} << 20);
  EXPECT_EQ(s.color, Color::Green);
  EXPECT_EQ(s.format, "json");
  EXPECT_TRUE(s.verbose);
}

TEST(Args, ABadValueIsOneLineNamingTheFlagTheValueAndTheRange) {
  EXPECT_EQ(usage_error({"--max-tokens", "0"}), "run: --max-tokens: 0 is out of range [1, 1000]");
  EXPECT_EQ(usage_error({"--max-tokens", "12x"}), "run: --max-tokens: 12x is not an integer");
  EXPECT_EQ(usage_error({"--max-tokens", "99999999999999999999"}),
            "run: --max-tokens: 99999999999999999999 is not an integer");
  EXPECT_EQ(usage_error({"--max-tokens="}), "run: --max-tokens: '' is not an integer");
  EXPECT_EQ(usage_error({"--temperature", "3"}), "run: --temperature: 3 is out of range [0, 2]");
  EXPECT_EQ(usage_error({"--temperature", "nan"}), "run: --temperature: nan is not a number");
  EXPECT_EQ(usage_error({"--min-pixels", "0"}), "run: --min-pixels: 0 is out of range [1, 1099511627776]");
  EXPECT_EQ(usage_error({"--cache-mb", "2048"}), "run: --cache-mb: 2048 is out of range [0, 1024]");
  EXPECT_EQ(usage_error({"--color", "blue"}), "run: --color: blue is not one of red, green");
  EXPECT_EQ(usage_error({"--format", "x y"}), "run: --format: 'x y' is not one of text, json");
}

TEST(Args, EnvironmentIsReadWhenTheFlagIsAbsent) {
  ScopedEnv m("QVL_TEST_MODEL", "from-env"), n("QVL_TEST_MAX_TOKENS", "64");
  EXPECT_EQ(parse({}).model, "from-env");
  EXPECT_EQ(parse({}).max_tokens, 64);
  EXPECT_EQ(parse({"--max-tokens", "7"}).max_tokens, 7);  // the command line wins
  {
    ScopedEnv bad("QVL_TEST_MAX_TOKENS", "5000");
    EXPECT_EQ(usage_error({}), "run: --max-tokens: 5000 (from QVL_TEST_MAX_TOKENS) is out of range [1, 1000]");
  }
  Args a("run", "", "");
  Settings s;
  visit(s, a);
  char* none[] = {nullptr};
  ASSERT_TRUE(a.parse(0, none, 0));
  EXPECT_TRUE(a.has("model"));  // given through the environment
  EXPECT_FALSE(a.has("top-k"));
}

TEST(Args, ASwitchFromTheEnvironmentIsOffFor0FalseNoOffAndEmpty) {
  for (const char* off : {"0", "false", "no", "off", ""}) {
    ScopedEnv v("QVL_TEST_VERBOSE", off);
    EXPECT_FALSE(parse({}).verbose) << off;
  }
  ScopedEnv v("QVL_TEST_VERBOSE", "1");
  EXPECT_TRUE(parse({}).verbose);
}

TEST(Args, ACommandsOwnDefaultIsTheMembersValueWhenDeclared) {
  Settings mine;
  mine.cache_bytes = 0;
  EXPECT_EQ(parse({}, mine).cache_bytes, 0u);
  Args a("run", "", "");
  visit(mine, a);
  EXPECT_NE(a.help().find("default: 0"), std::string::npos) << a.help();
}

TEST(Args, HelpListsKindRangeDefaultAndEnvironmentFromTheDeclarations) {
  Settings s;
  Args a("run", "[options]", "test");
  visit(s, a);
  const std::string h = a.help();
  for (const char* piece :
       {"--max-tokens N", "integer in [1, 1000]; default: 256; env QVL_TEST_MAX_TOKENS",
        "number in [0, 2]; default: 0.7", "default: the model's", "default: 8", "one of red, green; default: red",
        "text; env QVL_TEST_MODEL", "repeatable", "--verbose", "--help"})
    EXPECT_NE(h.find(piece), std::string::npos) << piece << " not in\n" << h;
  const std::string md = a.markdown();
  EXPECT_NE(md.find("| `--max-tokens N` | integer in [1, 1000] | 256 | `QVL_TEST_MAX_TOKENS` | limit |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("output \\| format"), std::string::npos) << md;  // a | in a cell is escaped
}

TEST(Args, HelpWinsOverABadValue) {
  Settings s;
  Args a("run", "", "");
  visit(s, a);
  std::string w0 = "--max-tokens", w1 = "0", w2 = "--help";
  char* argv[] = {w0.data(), w1.data(), w2.data()};
  testing::internal::CaptureStdout();
  EXPECT_FALSE(a.parse(3, argv, 0));
  EXPECT_NE(testing::internal::GetCapturedStdout().find("usage: qvl run"), std::string::npos);
  EXPECT_EQ(s.max_tokens, 256);
}

TEST(Args, ANameDeclaredTwiceIsAnInternalError) {
  Settings s;
  Args a("run", "", "");
  visit(s, a);
  int64_t other = 0;
  EXPECT_THROW(a(other, "max-tokens", "N", "again"), Error);
  bool b = false;
  EXPECT_THROW(a(b, "help", "mine"), Error);
}

TEST(Args, ChecksBeyondTheRange) {
  std::string dir;
  Args a("serve", "", "");
  a(dir, "dir", "DIR", "a folder").check([](const std::string& d) { return d == "ok" ? "" : "is not a folder"; });
  std::string w0 = "--dir", w1 = "/nope";
  char* argv[] = {w0.data(), w1.data()};
  try {
    a.parse(2, argv, 0);
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "serve: --dir: /nope is not a folder");
  }
}

TEST(Args, UnknownFlag) {
  EXPECT_EQ(usage_error({"--modle", "x"}), "run: unknown option '--modle' (see qvl run --help)");
  EXPECT_EQ(usage_error({"-v"}), "run: unknown option '-v' (see qvl run --help)");
}

TEST(Args, MissingValue) { EXPECT_EQ(usage_error({"--model"}), "run: option '--model' needs a value (DIR)"); }

TEST(Args, RepeatedSingleFlag) {
  EXPECT_EQ(usage_error({"--model", "a", "--model", "b"}), "run: option '--model' given more than once");
}

TEST(Args, SwitchRejectsValue) { EXPECT_EQ(usage_error({"--verbose=yes"}), "run: option '--verbose' takes no value"); }

TEST(Args, PositionalAndDoubleDash) {
  Settings s;
  Args a("run", "", "");
  visit(s, a);
  std::string w[] = {"x", "--", "--model"};
  char* argv[] = {w[0].data(), w[1].data(), w[2].data()};
  ASSERT_TRUE(a.parse(3, argv, 0));
  EXPECT_EQ(a.positional(), (std::vector<std::string>{"x", "--model"}));
  EXPECT_EQ(s.model, "");
}

}  // namespace
}  // namespace qvl
