// Text from outside (a client's field name, a file's key, a token) made safe
// to quote inside a one-line error message: control characters become
// visible escapes (\u0000, \n, ...) so nothing downstream cuts the message at
// a NUL or splits it across lines, and long text is shortened on a UTF-8
// character boundary.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace qvl {

// `max_bytes` bounds the input taken (before escaping); longer text ends in "...".
std::string printable(std::string_view text, size_t max_bytes = 80);

// The same escaping for a whole message, without shortening it.
std::string printable_message(std::string_view message);

}  // namespace qvl
