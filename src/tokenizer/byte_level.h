// GPT-2's byte-to-unicode table, which byte-level BPE vocabularies are written
// in: printable bytes stand for themselves, the others (controls, space,
// 0x7F..0xA0, 0xAD) for U+0100 onwards in byte order (openai/gpt-2 encoder.py,
// bytes_to_unicode).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace qvl {

class ByteLevel {
 public:
  ByteLevel();
  uint32_t char_of(uint8_t byte) const { return char_of_[byte]; }
  // The bytes a vocabulary string stands for. Returns false when a character
  // is not one of the 256 (such a token decodes to its own UTF-8 text).
  bool to_bytes(std::string_view token, std::string& bytes) const;
  std::string to_token(std::string_view bytes) const;

 private:
  std::array<uint32_t, 256> char_of_{};
  std::array<int16_t, 256 + 68> byte_of_{};  // -1: not a byte's character
};

}  // namespace qvl
