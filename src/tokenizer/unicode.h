// Unicode character classes and NFC, from libutf8proc (no tables of our own).
// The classes are the ones the pre-tokenizer regex uses under Oniguruma, the
// regex engine of Hugging Face `tokenizers`: \p{L}, \p{N}, and \s = White_Space
// (Cc 9..13 and U+0085, plus the Zs, Zl and Zp categories).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qvl::unicode {

enum Class : uint8_t {
  kLetter = 1,      // \p{L}
  kNumber = 2,      // \p{N}
  kSpace = 4,       // \s
  kLineBreak = 8,   // \r or \n (also kSpace)
};

uint8_t classify(uint32_t cp);

// The \w of Rust's regex crate, which the added-token single_word rule uses:
// Alphabetic, marks, decimal digits, connector punctuation, joiners. utf8proc
// has no Alphabetic property; letters and Nl stand in for it (the rest of
// Alphabetic, Other_Alphabetic, is marks, which \w includes anyway).
bool is_word_char(uint32_t cp);
bool is_space(uint32_t cp);
// General category P* (Pc, Pd, Ps, Pe, Pi, Pf, Po): Python's
// unicodedata.category(c).startswith("P"), which the Qwen3-VL-Embedding
// script's instruction rule asks.
bool is_punctuation(uint32_t cp);

// NFC of valid UTF-8 text. Text whose every character is a starter that no
// composition can touch is returned unchanged without calling utf8proc.
std::string nfc(std::string_view text);

}  // namespace qvl::unicode
