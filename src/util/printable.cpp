#include "util/printable.h"

#include <cstdio>

namespace qvl {
namespace {

void append_escaped(std::string& out, std::string_view text) {
  for (const char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u != 0x7f) {
      out += c;
      continue;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: {
        char b[8];
        std::snprintf(b, sizeof b, "\\u%04x", u);
        out += b;
      }
    }
  }
}

}  // namespace

std::string printable(std::string_view text, size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  if (cut) {
    size_t end = max_bytes;
    // Back up over UTF-8 continuation bytes so a character is never split.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text = text.substr(0, end);
  }
  std::string out;
  out.reserve(text.size() + 3);
  append_escaped(out, text);
  if (cut) out += "...";
  return out;
}

std::string printable_message(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  append_escaped(out, message);
  return out;
}

}  // namespace qvl
