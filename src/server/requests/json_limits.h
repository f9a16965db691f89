// Parsing untrusted JSON bodies in one linear pass (util/json_reader) with
// caps on nesting depth, on values in total and on string length, each
// refused as the value arrives, so a hostile body can neither exhaust the
// stack or memory nor pin a core. Failures are ApiError 400 naming the field
// (param) and, for syntax and numbers, the byte offset. Objects keep their
// keys in the client's order (tools and schemas are used as sent).
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>

namespace qvl {

struct JsonLimits {
  int max_depth = 32;
  // Values of every kind in one body: a /v1/detokenize list of a whole 256K
  // context fits twice; a body of empty objects is refused after ~1.5 MB.
  size_t max_elements = 1u << 19;
  size_t max_string_bytes = 32u << 20;  // a data: URI of the largest image must fit
};

// What the server uses for `max_depth` (--json-max-depth) and the largest
// image it accepts: strings hold a data: URI of that image.
JsonLimits request_json_limits(int max_depth, size_t max_image_bytes);

// `should_stop` is polled every few thousand values (kJsonStopCheckEvents);
// when it answers true (the client left, the server drains) parsing ends
// with ApiError 503 "parse_stopped".
nlohmann::ordered_json parse_json_body(std::string_view body, const JsonLimits& limits,
                                       const std::function<bool()>& should_stop = {});

}  // namespace qvl
