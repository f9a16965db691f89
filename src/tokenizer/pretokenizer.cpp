#include "tokenizer/pretokenizer.h"

#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace qvl {

SplitPattern SplitPattern::from_regex(const std::string& regex) {
  const std::string qwen2 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  if (regex == qwen2) return SplitPattern{1};
  if (regex == llama3) return SplitPattern{3};
  fail("pre-tokenizer split regex is not the Qwen2 (or Llama-3) pattern qvl implements: ", regex);
}

namespace {

// Decodes text into t: per character its code point, class and byte offset.
void load(std::string_view text, SplitWorkspace& t) {
  t.cls.clear();
  t.cp.clear();
  t.off.clear();
  for (size_t i = 0; i < text.size();) {
    size_t n = 1;
    uint32_t c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      n = utf8::valid_length(text, i);
      if (n == 0) fail("text is not valid UTF-8 at byte ", i);
      c = utf8::code_point(text, i, n);
    }
    t.off.push_back(i);
    t.cp.push_back(c);
    t.cls.push_back(unicode::classify(c));
    i += n;
  }
  t.off.push_back(text.size());
}

uint32_t lower_ascii(uint32_t c) { return c < 0x80 ? (c | 0x20) : c; }

// (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: characters matched, or 0. Under Unicode
// case folding U+017F (long s) and U+212A (Kelvin) fold to s and k; only the
// former can appear here.
size_t contraction(const SplitWorkspace& t, size_t i) {
  if (t.cp[i] != '\'' || i + 1 >= t.cls.size()) return 0;
  uint32_t a = lower_ascii(t.cp[i + 1]);
  if (a == 's' || a == 0x17F || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= t.cls.size()) return 0;
  uint32_t b = lower_ascii(t.cp[i + 2]);
  if ((a == 'r' || a == 'v') && b == 'e') return 3;
  if (a == 'l' && b == 'l') return 3;
  return 0;
}

}  // namespace

void PreTokenizer::split(std::string_view text, SplitWorkspace& t, std::vector<size_t>& ends) const {
  load(text, t);
  const size_t n = t.cls.size();
  using namespace unicode;
  auto is = [&](size_t k, uint8_t c) { return k < n && (t.cls[k] & c) != 0; };
  // [^\s\p{L}\p{N}]
  auto other = [&](size_t k) { return k < n && (t.cls[k] & (kSpace | kLetter | kNumber)) == 0; };

  size_t i = 0;
  while (i < n) {
    size_t j;
    if (size_t c = contraction(t, i)) {
      j = i + c;
    } else if (is(i, kLetter) || (!is(i, kLineBreak | kLetter | kNumber) && is(i + 1, kLetter))) {
      // [^\r\n\p{L}\p{N}]?\p{L}+
      j = i + 1;
      while (is(j, kLetter)) ++j;
    } else if (is(i, kNumber)) {
      j = i + 1;
      while (j < n && j - i < static_cast<size_t>(pattern_.max_digits) && is(j, kNumber)) ++j;
    } else if (other(i) || (t.cp[i] == ' ' && other(i + 1))) {
      //  ?[^\s\p{L}\p{N}]+[\r\n]*
      j = i + 1;
      while (other(j)) ++j;
      while (is(j, kLineBreak)) ++j;
    } else {
      // i starts a run of whitespace [i, end).
      size_t end = i + 1;
      size_t last_break = is(i, kLineBreak) ? i + 1 : 0;
      while (is(end, kSpace)) {
        if (is(end, kLineBreak)) last_break = end + 1;
        ++end;
      }
      if (last_break) {
        j = last_break;  // \s*[\r\n]+ backtracks to the last line break
      } else if (end == n || end - i == 1) {
        j = end;  // \s+(?!\S) at the end of text, or the lone \s+
      } else {
        j = end - 1;  // \s+(?!\S) leaves the last space to the next word
      }
    }
    ends.push_back(t.off[j]);
    i = j;
  }
}

}  // namespace qvl
