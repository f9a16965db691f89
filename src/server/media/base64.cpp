#include "server/media/base64.h"

#include <array>

namespace qvl {
namespace {

constexpr const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr std::array<int8_t, 256> kTable = make_table();

}  // namespace

size_t base64_decoded_size(std::string_view s) { return (s.size() + 3) / 4 * 3; }

std::optional<std::vector<uint8_t>> base64_decode(std::string_view s, size_t* bad_offset) {
  size_t n = s.size();
  size_t pad = 0;
  while (n > 0 && pad < 2 && s[n - 1] == '=') --n, ++pad;
  auto bad = [&](size_t at) {
    if (bad_offset) *bad_offset = at;
    return std::nullopt;
  };
  if (n % 4 == 1) return bad(n - 1);  // one leftover sextet cannot make a byte
  if (pad && (n + pad) % 4 != 0) return bad(n);
  std::vector<uint8_t> out;
  out.reserve(n / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    const int8_t v = kTable[static_cast<uint8_t>(s[i])];
    if (v < 0) return bad(i);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

std::string base64_encode(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = uint32_t{bytes[i]} << 16 | uint32_t{bytes[i + 1]} << 8 | bytes[i + 2];
    for (int k = 3; k >= 0; --k) out += kAlphabet[(v >> (6 * k)) & 63];
  }
  const size_t left = bytes.size() - i;  // 0, 1 or 2 bytes, padded to a group of 4
  if (left > 0) {
    const uint32_t v = uint32_t{bytes[i]} << 16 | (left == 2 ? uint32_t{bytes[i + 1]} << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += left == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace qvl
