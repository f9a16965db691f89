#include "server/base64.h"

#include <array>

namespace qvl {
namespace {

constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(abc[i])] = static_cast<int8_t>(i);
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

}  // namespace qvl
