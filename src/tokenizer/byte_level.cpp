#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace qvl {

ByteLevel::ByteLevel() {
  byte_of_.fill(-1);
  uint32_t extra = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    char_of_[b] = printable ? b : extra++;
    byte_of_[char_of_[b]] = static_cast<int16_t>(b);
  }
}

bool ByteLevel::to_bytes(std::string_view token, std::string& bytes) const {
  bytes.clear();
  for (size_t i = 0; i < token.size();) {
    size_t n = utf8::valid_length(token, i);
    if (n == 0) return false;
    uint32_t cp = utf8::code_point(token, i, n);
    i += n;
    if (cp >= byte_of_.size() || byte_of_[cp] < 0) return false;
    int16_t b = byte_of_[cp];
    bytes.push_back(static_cast<char>(b));
  }
  return true;
}

std::string ByteLevel::to_token(std::string_view bytes) const {
  std::string out;
  for (char c : bytes) utf8::append(out, char_of_[static_cast<unsigned char>(c)]);
  return out;
}

}  // namespace qvl
