// Errors: one exception type whose message is one line a user can act on,
// naming what failed and where (file, tensor, field, byte offset).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace qvl {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A bad command line: reported as one line, exit code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

// Concatenates anything streamable: cat("tensor ", name, " at byte ", off).
template <typename... Args>
std::string cat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(cat(std::forward<Args>(args)...));
}

}  // namespace qvl
