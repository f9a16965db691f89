// JSON text to a DOM in one linear pass: nlohmann's SAX events feed a
// builder of our own, so no callback makes the library rescan a container,
// and every cap (nesting depth, values in total, bytes in one string) is
// checked as each value arrives, before the document grows past it. Numbers
// that do not fit a double (1e400) and syntax errors end the parse with
// where they are: the byte offset and the field path ("messages[2].content").
// The front ends turn a JsonReadError into their own error (the server's
// ApiError in server/requests/json_limits, a file's qvl::Error in read_json_file).
#pragma once

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace qvl {

struct JsonReadLimits {
  int max_depth = 0;            // containers inside containers; 0: no cap
  size_t max_elements = 0;      // values of every kind, containers included; 0: no cap
  size_t max_string_bytes = 0;  // one string or key; 0: no cap
  bool refuse_duplicate_keys = false;  // else the last value of a repeated key wins (nlohmann's rule)
  // Polled every kJsonStopCheckEvents events; returning true ends the parse
  // (JsonReadError::Kind::stopped): the client left, the server is draining.
  std::function<bool()> should_stop;
};

inline constexpr size_t kJsonStopCheckEvents = 4096;

struct JsonReadError {
  enum class Kind { none, syntax, number_out_of_range, too_deep, too_many_elements, string_too_long, duplicate_key, stopped };
  Kind kind = Kind::none;
  bool has_byte = false;  // syntax and number errors: nlohmann reports where
  size_t byte = 0;        // offset in the text
  std::string path;       // the value being read: "" at the top, "x[3].name"; control characters escaped
  std::string detail;     // the reason (syntax), the token (numbers), the key (duplicates); escaped

  // One line: "field x[3]: 1e400 is outside the range of a double (byte 12)".
  std::string describe() const;
};

// True and `out` set, or false and `error` set. Instantiated for
// nlohmann::json and nlohmann::ordered_json (which keeps the text's key order).
template <class Json>
bool read_json(std::string_view text, const JsonReadLimits& limits, Json& out, JsonReadError& error);

// A whole file's JSON (config.json, an index, a header): any failure is a
// qvl::Error naming `source`, what failed and the byte (plus `base_offset`,
// where the text starts inside the file). Depth is capped at 512, far above
// any model file, so nothing that walks the document recursively can run out
// of stack.
nlohmann::json read_json_file(std::string_view text, const std::string& source, size_t base_offset = 0,
                              bool refuse_duplicate_keys = false);

}  // namespace qvl
