// Parsing untrusted JSON bodies with limits on nesting depth and string
// length, so a hostile body cannot exhaust the stack or memory beyond the
// body cap. Failures are ApiError 400 with the byte offset. Objects keep
// their keys in the client's order (tools and schemas are used as sent).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace qvl {

struct JsonLimits {
  int max_depth = 32;
  size_t max_string_bytes = 32u << 20;  // a data: URI of the largest image must fit
};

nlohmann::ordered_json parse_json_body(std::string_view body, const JsonLimits& limits);

}  // namespace qvl
