#include "tokenizer/utf8.h"

namespace qvl::utf8 {
namespace {

// Bounds of the second byte after a lead byte (Unicode Table 3-7, "Well-Formed
// UTF-8 Byte Sequences"); every later byte is 0x80..0xBF. lo > hi: not a lead.
struct Lead {
  unsigned char len, lo, hi;
};

Lead lead(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // <= U+10FFFF
  return {0, 1, 0};
}

// How many bytes from s[i] form the longest prefix of a valid sequence
// (complete or not): the "maximal subpart" when it is not complete. *full is
// the length the sequence needs, 0 when s[i] cannot start one.
size_t prefix_length(std::string_view s, size_t i, size_t* full) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  Lead l = lead(p[i]);
  *full = l.len;
  if (l.len <= 1) return l.len;
  size_t n = 1;
  if (i + 1 >= s.size() || p[i + 1] < l.lo || p[i + 1] > l.hi) return n;
  ++n;
  while (n < l.len && i + n < s.size() && p[i + n] >= 0x80 && p[i + n] <= 0xBF) ++n;
  return n;
}

}  // namespace

size_t valid_length(std::string_view s, size_t i) {
  size_t full = 0;
  size_t n = prefix_length(s, i, &full);
  return n == full ? n : 0;
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t first_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = valid_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t full = 0;
    size_t n = prefix_length(s, i, &full);
    if (full > 0 && n == full) {
      out.append(s.data() + i, n);
      i += n;
    } else {
      out.append("\xEF\xBF\xBD");
      i += n == 0 ? 1 : n;
    }
  }
  return out;
}

size_t incomplete_tail(std::string_view s) {
  // A sequence is at most 4 bytes, so only the last 3 can start one that is
  // still open.
  size_t start = s.size() > 3 ? s.size() - 3 : 0;
  for (size_t i = start; i < s.size(); ++i) {
    size_t full = 0;
    size_t n = prefix_length(s, i, &full);
    if (full > 1 && n < full && i + n == s.size()) return s.size() - i;
  }
  return 0;
}

}  // namespace qvl::utf8
