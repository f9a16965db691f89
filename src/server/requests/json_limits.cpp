#include "server/requests/json_limits.h"

#include "server/requests/api_error.h"
#include "util/error.h"
#include "util/json_reader.h"

namespace qvl {

JsonLimits request_json_limits(int max_depth, size_t max_image_bytes) {
  JsonLimits l;
  l.max_depth = max_depth;
  l.max_string_bytes = (max_image_bytes + 2) / 3 * 4 + 256;  // base64 of the image, plus the data: header
  return l;
}

nlohmann::ordered_json parse_json_body(std::string_view body, const JsonLimits& limits,
                                       const std::function<bool()>& should_stop) {
  if (body.empty()) throw ApiError(400, "invalid_json", "the request body is empty; expected a JSON object");
  JsonReadLimits read;
  read.max_depth = limits.max_depth;
  read.max_elements = limits.max_elements;
  read.max_string_bytes = limits.max_string_bytes;
  read.should_stop = should_stop;
  nlohmann::ordered_json out;
  JsonReadError e;
  if (read_json(body, read, out, e)) return out;

  const std::string in = e.path.empty() ? "" : cat(" (at ", e.path, ")");
  using K = JsonReadError::Kind;
  switch (e.kind) {
    case K::number_out_of_range:
      throw ApiError(400, "number_out_of_range",
                     cat(e.path.empty() ? "the body" : cat("'", e.path, "'"), " is ", e.detail,
                         ", a number outside the range of a double (byte ", e.byte, ")"),
                     e.path);
    case K::too_deep:
      throw ApiError(400, "json_too_deep", cat("JSON nesting deeper than ", limits.max_depth, " levels", in), e.path);
    case K::too_many_elements:
      throw ApiError(400, "json_too_many_values",
                     cat("the request body has more than ", limits.max_elements, " JSON values", in), e.path);
    case K::string_too_long:
      throw ApiError(400, "string_too_long",
                     cat("a JSON string is ", e.detail, ", over the limit of ", limits.max_string_bytes, in), e.path);
    case K::stopped:
      throw ApiError(503, "parse_stopped", "parsing the request body stopped: the client left or the server is shutting down");
    case K::duplicate_key:  // not asked for: the last value of a repeated key wins
    case K::syntax:
    case K::none: break;
  }
  throw ApiError(400, "invalid_json", cat("the request body is not valid JSON (byte ", e.byte, "): ", e.detail));
}

}  // namespace qvl
