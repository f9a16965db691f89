// UTF-8 decoding primitives shared by the tokenizer: strict decoding (text to
// encode must be valid), lossy decoding with U+FFFD per maximal invalid
// subsequence (the Unicode "substitution of maximal subparts" practice that
// Python's errors="replace" and Rust's from_utf8_lossy follow), and the length
// of an unfinished trailing sequence for streaming.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qvl::utf8 {

// Length of the valid sequence starting at s[i], 0 when s[i] does not start
// one (invalid lead, bad continuation, overlong, surrogate, > U+10FFFF or cut
// off by the end of s).
size_t valid_length(std::string_view s, size_t i);

// Code point of the valid sequence of length `len` at s[i].
inline uint32_t code_point(std::string_view s, size_t i, size_t len) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + i);
  switch (len) {
    case 1: return p[0];
    case 2: return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
    case 3: return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
    default: return ((p[0] & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
  }
}

void append(std::string& out, uint32_t cp);

// Byte offset of the first invalid sequence, or npos when s is valid UTF-8.
size_t first_invalid(std::string_view s);

// Valid UTF-8: each maximal invalid subsequence of s becomes one U+FFFD.
std::string lossy(std::string_view s);

// Bytes at the end of s that begin a valid sequence which is not complete yet
// (0..3). Everything before them decodes the same whatever follows.
size_t incomplete_tail(std::string_view s);

}  // namespace qvl::utf8
