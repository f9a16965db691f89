// Errors the API returns to clients, in OpenAI's shape:
// {"error": {"message", "type", "param", "code"}} with an HTTP status.
// Messages are one line for the client: never a stack trace, never a server path.
// Control characters in the message and param (a NUL or newline quoted from
// the request) are escaped at construction (util/printable.h), so what(), a
// C string, carries the whole message.
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "util/printable.h"

namespace qvl {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string code, std::string message, std::string param = {})
      : std::runtime_error(printable_message(message)),
        status_(status),
        code_(std::move(code)),
        param_(printable_message(param)) {}

  int status() const { return status_; }
  const std::string& code() const { return code_; }
  const std::string& param() const { return param_; }
  // OpenAI's error "type" for the status.
  const char* type() const;
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string code_;
  std::string param_;
};

// 400 invalid_request_error naming the offending field.
[[noreturn]] void bad_request(const std::string& param, const std::string& message,
                              const std::string& code = "invalid_value");

}  // namespace qvl
