#include "pdf/pdf_structure.h"

#include <string_view>

#include "util/error.h"

namespace qvl {
namespace {

// ISO 32000-1 7.2.2: white-space and delimiter characters.
bool is_space(uint8_t c) { return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '; }
bool is_delimiter(uint8_t c) {
  return c == '(' || c == ')' || c == '<' || c == '>' || c == '[' || c == ']' || c == '{' || c == '}' || c == '/' ||
         c == '%';
}
bool is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
bool is_regular(uint8_t c) { return !is_space(c) && !is_delimiter(c); }

class Scanner {
 public:
  Scanner(std::span<const uint8_t> bytes, int64_t max) : b_(bytes), max_(max) {}

  void run() {
    for (size_t i = 0; i < b_.size(); ++i) {
      const uint8_t c = b_[i];
      if (c == '/') {  // a delimiter: always a new token ("/Type/XRef/Size 9")
        name(i);
        continue;
      }
      if (i > 0 && is_regular(b_[i - 1])) continue;  // numbers and keywords only at the start of a token
      if (is_digit(c))
        object_header(i);
      else if (c == 'x' && keyword(i, "xref"))
        xref_table(i + 4);
    }
  }

 private:
  // An unsigned integer token at i: its value (saturating) and end.
  bool integer(size_t i, int64_t& value, size_t& end) const {
    if (i >= b_.size() || !is_digit(b_[i])) return false;
    value = 0;
    for (end = i; end < b_.size() && is_digit(b_[end]); ++end)
      value = value > (INT64_MAX - 9) / 10 ? INT64_MAX : value * 10 + (b_[end] - '0');
    return end == b_.size() || !is_regular(b_[end]);
  }
  size_t skip_space(size_t i) const {
    while (i < b_.size() && is_space(b_[i])) ++i;
    return i;
  }
  bool keyword(size_t i, std::string_view word) const {
    if (b_.size() - i < word.size()) return false;
    if (std::string_view(reinterpret_cast<const char*>(b_.data() + i), word.size()) != word) return false;
    const size_t end = i + word.size();
    return end == b_.size() || !is_regular(b_[end]);
  }

  void check(int64_t value, const char* what, size_t at) const {
    if (value > max_)
      fail("the PDF declares ", what, " ", value, " at byte ", at, ", over the limit of ", max_,
           " objects (a reader allocates for each up front)");
  }

  // "N G obj": an object definition, which a reader reconstructing a
  // damaged file numbers its table by.
  void object_header(size_t i) const {
    int64_t num, gen;
    size_t end;
    if (!integer(i, num, end)) return;
    size_t j = skip_space(end);
    if (j == end || !integer(j, gen, end)) return;
    j = skip_space(end);
    if (j > end && keyword(j, "obj")) check(num, "object number", i);
  }

  void name(size_t i) {
    if (keyword(i, "/Size")) return count_after(i + 5, "/Size", i);
    if (keyword(i, "/N")) return count_after(i + 2, "an object stream /N of", i);
    if (keyword(i, "/Index")) return index_array(i + 6, i);
  }
  void count_after(size_t j, const char* what, size_t at) const {
    int64_t v;
    size_t end;
    if (integer(skip_space(j), v, end)) check(v, what, at);
  }
  // /Index [first count first count …]
  void index_array(size_t j, size_t at) const {
    j = skip_space(j);
    if (j >= b_.size() || b_[j] != '[') return;
    for (j = skip_space(j + 1);;) {
      int64_t first, count;
      size_t end;
      if (!integer(j, first, end)) return;
      j = skip_space(end);
      if (!integer(j, count, end)) return;
      check(first > INT64_MAX - count ? INT64_MAX : first + count, "an /Index section ending at", at);
      j = skip_space(end);
    }
  }
  // xref, then sections: "first count" and count 20-byte entries each.
  void xref_table(size_t j) const {
    for (;;) {
      j = skip_space(j);
      int64_t first, count;
      size_t end;
      const size_t at = j;
      if (!integer(j, first, end)) return;
      size_t k = end;
      while (k < b_.size() && (b_[k] == ' ' || b_[k] == '\t')) ++k;  // the two numbers share a line
      if (!integer(k, count, end)) return;
      check(first > INT64_MAX - count ? INT64_MAX : first + count, "an xref section ending at", at);
      // Past the section's entries, each "oooooooooo ggggg n" on its own line.
      j = end;
      for (int64_t e = 0; e < count && j < b_.size(); ++e) {
        j = skip_space(j);
        while (j < b_.size() && b_[j] != '\n' && b_[j] != '\r') ++j;
      }
    }
  }

  std::span<const uint8_t> b_;
  int64_t max_;
};

}  // namespace

void check_pdf_object_counts(std::span<const uint8_t> bytes, int64_t max_objects) {
  Scanner(bytes, max_objects).run();
}

}  // namespace qvl
