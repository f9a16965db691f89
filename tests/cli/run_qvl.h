// Runs the qvl binary (QVL_BINARY) with arguments and captures its exit code,
// stdout and stderr separately, for tests of the command line.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace qvl::test {

struct QvlResult {
  int code = -1;  // exit code, -1 when killed by a signal
  std::string out, err;
};

// Single-quotes a word for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `env`: variables set for this run only (NAME, value); `stdin_path`: a
// file read as standard input (qvl chat's lines), else the test's own.
inline QvlResult run_qvl(const std::vector<std::string>& args,
                         const std::vector<std::pair<std::string, std::string>>& env = {},
                         const std::string& stdin_path = "") {
  char err_path[] = "/tmp/qvl_test_stderr_XXXXXX";
  int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  std::string cmd;
  for (const auto& [name, value] : env) {
    cmd.append(name).append("=").append(shell_quote(value)).append(" ");
  }
  cmd += shell_quote(QVL_BINARY);
  // append(), not operator+: GCC 12 warns (-Wrestrict, falsely) on the
  // temporaries once this function is inlined.
  for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
  if (!stdin_path.empty()) cmd.append(" <").append(shell_quote(stdin_path));
  cmd.append(" 2>").append(shell_quote(err_path));
  QvlResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  r.err = s.str();
  std::remove(err_path);
  return r;
}

}  // namespace qvl::test
