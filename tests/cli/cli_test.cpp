// The qvl binary's command-line contract: help, version, usage errors (exit 2).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

struct Result {
  int code;
  std::string out;  // stdout and stderr together
};

Result run_qvl(const std::string& args) {
  std::string cmd = std::string(QVL_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST(Cli, HelpListsCommands) {
  Result r = run_qvl("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* c : {"run", "serve", "info", "tokenize", "bench"}) EXPECT_NE(r.out.find(c), std::string::npos) << c;
}

TEST(Cli, Version) {
  Result r = run_qvl("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("qvl ", 0), 0u);
}

TEST(Cli, UnknownCommandExits2) {
  Result r = run_qvl("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(Cli, NoArgumentsExits2) { EXPECT_EQ(run_qvl("").code, 2); }

}  // namespace
