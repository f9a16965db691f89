// Byte-level BPE exactly as Hugging Face `tokenizers` runs Qwen's tokenizer.json:
// added/special tokens split out first, NFC normalization, the Qwen2 split
// regex, byte-to-unicode mapping, ranked merges. encode() is add_special_tokens
// = false (Qwen adds none anyway). A tokenizer.json using anything else
// (another model type, normalizer or split pattern) is refused at load.
// All methods are const and safe to call from several threads; encode() shares
// a bounded cache of encoded words between calls.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

class Tokenizer {
 public:
  static Tokenizer load(const std::string& tokenizer_json_path);
  static Tokenizer from_json(const std::string& json_text, const std::string& source);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  std::vector<int32_t> encode(std::string_view text) const;  // added tokens recognised in text
  // Bytes that do not form valid UTF-8 become U+FFFD, one per maximal invalid
  // subsequence (Python's errors="replace").
  std::string decode(std::span<const int32_t> ids, bool skip_special = false) const;
  std::string token_bytes(int32_t id) const;  // the raw bytes a token stands for ("" if unknown)
  // The id of a vocabulary string ("Ġworld") or added token ("<|im_end|>"),
  // -1 when unknown. Added tokens get their ids as `tokenizers` assigns them.
  int32_t token_id(std::string_view token) const;
  bool is_special(int32_t id) const;
  size_t vocab_size() const;  // largest id + 1, added tokens included

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Turns a stream of token ids into text pieces that are always valid UTF-8:
// an incomplete sequence is held back until it completes or finish() is called.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special = true);
  std::string push(int32_t id);
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace qvl
