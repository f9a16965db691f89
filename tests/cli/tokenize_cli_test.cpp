// `qvl tokenize` through the binary: ids as a JSON array, files byte for byte,
// --decode, and exit codes (2 usage, 1 other errors) with one-line reasons.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "run_qvl.h"

namespace qvl {
namespace {

using test::run_qvl;

const std::string kModel = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";

std::string temp_file(const std::string& name, const std::string& bytes) {
  std::string path = ::testing::TempDir() + "qvl_tokenize_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

TEST(TokenizeCli, TextToIdsAndBack) {
  auto r = run_qvl({"tokenize", "--model", kModel, "--text", "Hello world<|im_end|>"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "[9707,1879,151645]\n");
  r = run_qvl({"tokenize", "--model", kModel, "--decode", "--text", "[9707, 1879, 151645]"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "Hello world<|im_end|>");
  r = run_qvl({"tokenize", "--model", kModel, "--decode", "--skip-special", "--text", "[9707,1879,151645]"});
  EXPECT_EQ(r.out, "Hello world");
}

TEST(TokenizeCli, FileIsTokenizedByteForByte) {
  // The cases file says "end with newline\n" is [408, 448, 39027, 198].
  auto r = run_qvl({"tokenize", "--model", kModel, "--file", temp_file("nl.txt", "end with newline\n")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), nlohmann::json::parse("[408, 448, 39027, 198]"));
  r = run_qvl({"tokenize", "--model", kModel, "--decode", "--file", temp_file("ids.json", "[408,448,39027,198]")});
  EXPECT_EQ(r.out, "end with newline\n");
  r = run_qvl({"tokenize", "--model", kModel, "--file", temp_file("empty.txt", "")});
  EXPECT_EQ(r.out, "[]\n");
}

TEST(TokenizeCli, UsageErrorsExit2) {
  for (std::vector<std::string> args : {std::vector<std::string>{"tokenize", "--text", "x"},
                                        {"tokenize", "--model", kModel},
                                        {"tokenize", "--model", kModel, "--text", "a", "--file", "b"},
                                        {"tokenize", "--model", kModel, "--text", "a", "--skip-special"},
                                        {"tokenize", "--model", kModel, "--text"},
                                        {"tokenize", "--model", kModel, "--text", "a", "--frobnicate"}}) {
    auto r = run_qvl(args);
    EXPECT_EQ(r.code, 2) << args.back() << ": " << r.err;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
}

TEST(TokenizeCli, OtherErrorsExit1WithReason) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  std::string bad_utf8 = temp_file("bad.txt", "ok \xff");
  for (const Case& c : {Case{{"tokenize", "--model", "/nonexistent/model/dir", "--text", "x"}, "nonexistent"},
                        Case{{"tokenize", "--model", kModel, "--file", "/nonexistent.txt"}, "/nonexistent.txt"},
                        Case{{"tokenize", "--model", kModel, "--file", bad_utf8}, "byte 3"},
                        Case{{"tokenize", "--model", kModel, "--decode", "--text", "[1,"}, "not JSON"},
                        Case{{"tokenize", "--model", kModel, "--decode", "--text", "[1,-2]"}, "element 1"},
                        Case{{"tokenize", "--model", QVL_FIXTURES_DIR, "--text", "x"}, "tokenizer.json"}}) {
    auto r = run_qvl(c.args);
    EXPECT_EQ(r.code, 1) << c.says << ": " << r.err;
    EXPECT_TRUE(one_line(r.err)) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace qvl
