#include "tokenizer/json_scan.h"

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace qvl {

void JsonScanner::error(const std::string& what) const { fail(source_, ": invalid JSON at byte ", i_, ": ", what); }

void JsonScanner::skip_ws() {
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
}

bool JsonScanner::peek_is(char c) {
  skip_ws();
  return i_ < s_.size() && s_[i_] == c;
}

void JsonScanner::expect(char c) {
  if (!peek_is(c)) error(cat("expected '", c, "'"));
  ++i_;
}

bool JsonScanner::consume(char c) {
  if (!peek_is(c)) return false;
  ++i_;
  return true;
}

void JsonScanner::at_end() {
  skip_ws();
  if (i_ != s_.size()) error("unexpected text after the value");
}

namespace {

int hex4(std::string_view s, size_t i) {
  if (i + 4 > s.size()) return -1;
  int v = 0;
  for (size_t k = i; k < i + 4; ++k) {
    char c = s[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace

void JsonScanner::read_string(std::string& out) {
  expect('"');
  out.clear();
  while (true) {
    size_t run = i_;
    while (i_ < s_.size() && s_[i_] != '"' && s_[i_] != '\\' && static_cast<unsigned char>(s_[i_]) >= 0x20) ++i_;
    out.append(s_.data() + run, i_ - run);
    if (i_ >= s_.size()) error("unterminated string");
    char c = s_[i_];
    if (c == '"') {
      ++i_;
      break;
    }
    if (c != '\\') error("control character in string");
    if (++i_ >= s_.size()) error("unterminated string");
    char e = s_[i_++];
    switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        int u = hex4(s_, i_);
        if (u < 0) error("bad \\u escape");
        i_ += 4;
        uint32_t cp = static_cast<uint32_t>(u);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          int lo = i_ + 1 < s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u' ? hex4(s_, i_ + 2) : -1;
          if (lo < 0xDC00 || lo > 0xDFFF) error("unpaired surrogate in \\u escape");
          i_ += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          error("unpaired surrogate in \\u escape");
        }
        utf8::append(out, cp);
        break;
      }
      default: error("bad escape in string");
    }
  }
  if (size_t bad = utf8::first_invalid(out); bad != std::string::npos) error("string is not valid UTF-8");
}

int64_t JsonScanner::read_int() {
  skip_ws();
  size_t start = i_;
  bool neg = i_ < s_.size() && s_[i_] == '-';
  if (neg) ++i_;
  int64_t v = 0;
  size_t digits = 0;
  while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
    if (++digits > 15) error("integer too large");
    v = v * 10 + (s_[i_++] - '0');
  }
  if (digits == 0 || (i_ < s_.size() && (s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E'))) {
    i_ = start;
    error("expected an integer");
  }
  return neg ? -v : v;
}

std::string_view JsonScanner::raw_value() {
  skip_ws();
  size_t start = i_;
  if (i_ >= s_.size()) error("expected a value");
  char c = s_[i_];
  if (c == '"') {
    std::string ignored;
    read_string(ignored);
  } else if (c == '{' || c == '[') {
    // Depth counting is enough here: the caller hands the text to a full
    // parser, which validates it.
    int depth = 0;
    do {
      char d = s_[i_];
      if (d == '"') {
        std::string ignored;
        read_string(ignored);
        continue;
      }
      if (d == '{' || d == '[') ++depth;
      if (d == '}' || d == ']') --depth;
      ++i_;
    } while (depth > 0 && i_ < s_.size());
    if (depth > 0) error("unterminated value");
  } else {
    while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}' && s_[i_] != ']' && s_[i_] != ' ' && s_[i_] != '\n' &&
           s_[i_] != '\r' && s_[i_] != '\t')
      ++i_;
  }
  return s_.substr(start, i_ - start);
}

bool JsonScanner::next_key(std::string& key, bool first) {
  if (first) expect('{');
  if (consume('}')) return false;
  if (!first) {
    expect(',');
  }
  skip_ws();
  read_string(key);
  expect(':');
  return true;
}

bool JsonScanner::next_element(bool first) {
  if (first) expect('[');
  if (consume(']')) return false;
  if (!first) expect(',');
  skip_ws();
  return true;
}

}  // namespace qvl
