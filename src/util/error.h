// Errors: one exception type whose message is one line a user can act on,
// naming what failed and where (file, tensor, field, byte offset). The
// message is kept printable (util/printable.h): text quoted from a file or a
// request with a NUL or a newline in it cannot cut or split it, since what()
// is read as a C string.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "util/printable.h"

namespace qvl {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(printable_message(message)) {}
};

// A bad command line: reported as one line, exit code 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message) {}
};

// A request field that cannot be honoured as sent (a schema keyword qvl
// cannot enforce, an unknown tool name): the front end reports it as the
// client's error, naming `field` (a dotted path into the request).
class FieldError : public Error {
 public:
  FieldError(std::string field, const std::string& message) : Error(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
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
