// Test and benchmark helper: the Qwen3-VL vocabulary as bytes, read from the
// fixture tokenizer.json (the real 151,643-token byte-level BPE vocabulary
// plus its added tokens), padded to the model's 151,936 ids.
//
// Byte-level BPE spells each byte as one code point (GPT-2's
// bytes_to_unicode); mapping a vocab string's code points back gives the
// token's bytes. Special added tokens (<|im_end|>, …) get no bytes (a grammar
// never matches them); non-special ones (<tool_call>, <think>, …) are their
// literal text.
#pragma once

#include <array>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace qvl::test {

inline constexpr size_t kQwenVocab = 151936;

// Code point -> byte for GPT-2's table (-1: not a byte's spelling).
inline std::vector<int> unicode_to_byte() {
  std::vector<int> map(512, -1);
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    map[static_cast<size_t>(printable ? b : 256 + extra++)] = b;
  }
  return map;
}

inline std::string bpe_to_bytes(const std::string& s, const std::vector<int>& map) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    size_t n = 1;
    if (c >= 0xC0 && c < 0xE0) cp = c & 0x1F, n = 2;
    else if (c >= 0xE0) throw std::runtime_error("vocab: byte-level token with a code point above U+07FF");
    for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    if (cp >= map.size() || map[cp] < 0) throw std::runtime_error("vocab: code point outside GPT-2's byte table");
    out += static_cast<char>(map[cp]);
    i += n;
  }
  return out;
}

inline std::vector<std::string> qwen_token_bytes(const std::string& tokenizer_json) {
  std::ifstream in(tokenizer_json);
  if (!in) throw std::runtime_error("vocab: cannot open " + tokenizer_json);
  const nlohmann::json t = nlohmann::json::parse(in);
  const std::vector<int> map = unicode_to_byte();
  std::vector<std::string> bytes(kQwenVocab);
  for (const auto& [text, id] : t["model"]["vocab"].items()) bytes.at(id.get<size_t>()) = bpe_to_bytes(text, map);
  for (const auto& a : t["added_tokens"])
    bytes.at(a["id"].get<size_t>()) = a["special"].get<bool>() ? "" : a["content"].get<std::string>();
  return bytes;
}

#ifdef QVL_FIXTURES_DIR
// Loaded once per test process: parsing the 11 MB tokenizer takes a while.
inline std::shared_ptr<const TokenVocab> qwen_vocab() {
  static const std::shared_ptr<const TokenVocab> v =
      std::make_shared<TokenVocab>(qwen_token_bytes(std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl/tokenizer.json"));
  return v;
}
#endif

}  // namespace qvl::test
