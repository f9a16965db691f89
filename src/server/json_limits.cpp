#include "server/json_limits.h"

#include "server/api_error.h"
#include "util/error.h"

namespace qvl {

nlohmann::ordered_json parse_json_body(std::string_view body, const JsonLimits& limits) {
  using json = nlohmann::ordered_json;
  if (body.empty()) throw ApiError(400, "invalid_json", "the request body is empty; expected a JSON object");
  // The callback sees each container as it opens, before its contents are
  // parsed, so depth is refused before the recursion goes any deeper.
  json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= limits.max_depth)
      throw ApiError(400, "json_too_deep", cat("JSON nesting deeper than ", limits.max_depth, " levels"));
    if ((event == json::parse_event_t::value || event == json::parse_event_t::key) && parsed.is_string() &&
        parsed.get_ref<const std::string&>().size() > limits.max_string_bytes)
      throw ApiError(400, "string_too_long",
                     cat("a JSON string is ", parsed.get_ref<const std::string&>().size(),
                         " bytes, over the limit of ", limits.max_string_bytes));
    return true;
  };
  try {
    return json::parse(body.begin(), body.end(), check);
  } catch (const json::parse_error& e) {
    throw ApiError(400, "invalid_json", cat("the request body is not valid JSON (byte ", e.byte, ")"));
  }
}

}  // namespace qvl
