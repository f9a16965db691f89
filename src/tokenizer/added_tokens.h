// Finding added tokens (special or not) in text the way Hugging Face
// `tokenizers` does (AddedVocabulary::find_matches): leftmost-longest matches
// of all contents at once, then per token the single_word, lstrip and rstrip
// rules. Tokens with normalized=false are matched in the raw text, the others
// in the normalized text; each set gets its own matcher.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

class AddedTokenMatcher {
 public:
  struct Span {
    size_t begin, end;  // byte range of text
    int32_t id;         // the added token, or -1 for text between tokens
  };

  AddedTokenMatcher() = default;
  // `token` must outlive the matcher; `content` is what to look for (the
  // token's content, normalized for the normalized set). A content added
  // twice keeps its first token.
  void add(const AddedToken* token, std::string content);
  bool empty() const { return entries_.empty(); }

  // Splits text into token and text spans, in order, covering all of text.
  void split(std::string_view text, std::vector<Span>& out) const;

 private:
  struct Entry {
    std::string content;
    const AddedToken* token;
  };
  // Index of the longest entry matching at text[i], or -1.
  int longest_at(std::string_view text, size_t i) const;

  std::vector<Entry> entries_;  // sorted by content
  bool first_byte_[256] = {};
};

}  // namespace qvl
