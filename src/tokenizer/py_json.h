// Python's json.dumps(x, ensure_ascii=False), byte for byte: what
// transformers' `tojson` filter writes when a chat template renders a tool
// (default separators ", " and ": ", keys in insertion order, no indent).
// Strings keep every non-ASCII character as UTF-8 and escape only '"', '\\'
// and the control characters below 0x20 (\n \r \t \b \f by name, the others
// as \u00xx, lowercase hex); floats print as Python's repr (shortest
// round-trip digits: 12.5, 3.0, 1e+20, 1.5e-07, Infinity, NaN).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace qvl {

std::string python_json_dumps(const nlohmann::ordered_json& value);

// json.dumps(json.loads(text), ensure_ascii=False) for a JSON text as a
// client sent it. Unlike a parse into nlohmann::json followed by the
// overload above, integers of any length keep their digits (Python's ints
// are exact) and a duplicated key keeps its first position with its last
// value (a dict's update). Throws Error on text that is not JSON, and on a
// number beyond double's range (Python would write Infinity; nlohmann's
// parser refuses it).
std::string python_json_dumps_text(std::string_view text);

// repr(float) in Python 3.
std::string python_float_repr(double x);

}  // namespace qvl
