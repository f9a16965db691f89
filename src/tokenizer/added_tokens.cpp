#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"

namespace qvl {
namespace {

// The character before byte `end` / at byte `begin` of valid UTF-8 text.
uint32_t char_before(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return utf8::code_point(s, i, end - i);
}

uint32_t char_at(std::string_view s, size_t begin, size_t* len) {
  *len = utf8::valid_length(s, begin);
  if (*len == 0) *len = 1;
  return utf8::code_point(s, begin, *len);
}

}  // namespace

void AddedTokenMatcher::add(const AddedToken* token, std::string content) {
  if (content.empty()) return;  // an empty content matches nothing in `tokenizers` either
  first_byte_[static_cast<unsigned char>(content[0])] = true;
  Entry e{std::move(content), token};
  auto at = std::lower_bound(entries_.begin(), entries_.end(), e,
                             [](const Entry& a, const Entry& b) { return a.content < b.content; });
  if (at != entries_.end() && at->content == e.content) return;  // first declared wins
  entries_.insert(at, std::move(e));
}

int AddedTokenMatcher::longest_at(std::string_view text, size_t i) const {
  // Entries are sorted, so those starting with text[i..i+k) form a range that
  // narrows as k grows; the last exact hit is the longest.
  int best = -1;
  size_t lo = 0, hi = entries_.size();
  for (size_t k = 0; i + k < text.size() && lo < hi; ++k) {
    char c = text[i + k];
    // In the range, entries equal to the prefix so far sort first, then the
    // rest by their k-th byte.
    auto first = std::partition_point(entries_.begin() + lo, entries_.begin() + hi, [&](const Entry& e) {
      return e.content.size() <= k || static_cast<unsigned char>(e.content[k]) < static_cast<unsigned char>(c);
    });
    auto last = std::partition_point(first, entries_.begin() + hi, [&](const Entry& e) {
      return static_cast<unsigned char>(e.content[k]) == static_cast<unsigned char>(c);
    });
    lo = static_cast<size_t>(first - entries_.begin());
    hi = static_cast<size_t>(last - entries_.begin());
    if (lo < hi && entries_[lo].content.size() == k + 1) best = static_cast<int>(lo);
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Span>& out) const {
  size_t start = 0;  // end of the previous token match
  size_t i = 0;
  while (i < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    int e = longest_at(text, i);
    if (e < 0) {
      ++i;
      continue;
    }
    const AddedToken& tok = *entries_[e].token;
    size_t begin = i, end = i + entries_[e].content.size();
    // The automaton resumes after the raw match whatever the rules below do.
    i = end;
    if (tok.single_word) {
      size_t len = 0;
      bool word_before = begin > 0 && unicode::is_word_char(char_before(text, begin));
      bool word_after = end < text.size() && unicode::is_word_char(char_at(text, end, &len));
      if (word_before || word_after) continue;
    }
    if (tok.lstrip) {
      size_t b = begin;
      while (b > 0 && unicode::is_space(char_before(text, b))) {
        size_t k = b - 1;
        while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
        b = k;
      }
      begin = std::max(b, start);
    }
    if (tok.rstrip) {
      size_t len = 0;
      while (end < text.size() && unicode::is_space(char_at(text, end, &len))) end += len;
    }
    if (start < begin) out.push_back({start, begin, -1});
    out.push_back({begin, end, tok.id});
    start = end;
  }
  if (start < text.size()) out.push_back({start, text.size(), -1});
}

}  // namespace qvl
