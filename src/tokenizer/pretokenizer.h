// The split step of Qwen2/Qwen3's pre-tokenizer, written out by hand instead
// of run through a regex engine. tokenizer.json declares it as the regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
//   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with behaviour "Isolated", which Hugging Face `tokenizers` matches with
// Oniguruma (leftmost-first alternation, backtracking). Every character is
// matched by some alternative, so the matches tile the text. Llama-3-style
// files differ only in matching \p{N}{1,3}; `max_digits` covers both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

struct SplitPattern {
  int max_digits = 1;  // \p{N} (1) or \p{N}{1,3} (3)

  // The pattern of a tokenizer.json "Split" pre-tokenizer, or throws when it
  // is not one this code reproduces.
  static SplitPattern from_regex(const std::string& regex);
};

// Per-call scratch of split(): the text's characters, their classes and byte
// offsets. Reusing one across calls saves the allocations.
struct SplitWorkspace {
  std::vector<uint8_t> cls;
  std::vector<uint32_t> cp;
  std::vector<size_t> off;  // one entry per character, plus the end
};

class PreTokenizer {
 public:
  explicit PreTokenizer(SplitPattern pattern) : pattern_(pattern) {}

  // Appends the end offsets (exclusive) of the pieces of valid UTF-8 text to
  // `ends`; pieces are contiguous and start at 0.
  void split(std::string_view text, SplitWorkspace& work, std::vector<size_t>& ends) const;

 private:
  SplitPattern pattern_;
};

}  // namespace qvl
