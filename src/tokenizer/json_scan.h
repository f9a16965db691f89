// A minimal strict JSON reader over a text in memory, for the two large parts
// of tokenizer.json (model.vocab and model.merges, ~300k strings) that a DOM
// parser takes over a second to build and free. Everything else is handed to
// nlohmann::json via raw_value(). Errors name the byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace qvl {

class JsonScanner {
 public:
  JsonScanner(std::string_view text, std::string source) : s_(text), source_(std::move(source)) {}

  void skip_ws();
  bool peek_is(char c);  // after whitespace
  void expect(char c);
  bool consume(char c);  // expect c if it is next
  // Reads a string (with escapes, \u surrogate pairs) into out.
  void read_string(std::string& out);
  int64_t read_int();
  // Skips any value and returns its text.
  std::string_view raw_value();
  // Iterates an object: call with first=true, then false; returns false at '}'.
  bool next_key(std::string& key, bool first);
  // Iterates an array the same way; returns false at ']'.
  bool next_element(bool first);
  size_t pos() const { return i_; }
  void at_end();
  [[noreturn]] void error(const std::string& what) const;

 private:
  std::string_view s_;
  std::string source_;
  size_t i_ = 0;
};

}  // namespace qvl
