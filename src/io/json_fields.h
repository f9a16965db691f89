// Typed, validated access to the fields of a JSON object read from a file.
// Every error is one line naming the file and the dotted field path
// ("config.json: field text_config.hidden_size must be an integer (got \"64\")").
// Internal to src/io.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/json_number.h"
#include "util/json_reader.h"

namespace qvl::io_detail {

using json = nlohmann::json;

// Parses a whole JSON document; a syntax error or a number outside a double
// names the source, the field and the byte (util/json_reader.h).
inline json parse_json_text(const std::string& text, const std::string& source) { return read_json_file(text, source); }

class Fields {
 public:
  // `prefix` is the dotted path of this object ("" at the top, "text_config." below).
  Fields(const json& object, std::string source, std::string prefix)
      : j_(&object), source_(std::move(source)), prefix_(std::move(prefix)) {
    if (!j_->is_object()) {
      if (prefix_.empty()) fail(source_, ": the top level is not a JSON object");
      fail(source_, ": field ", prefix_.substr(0, prefix_.size() - 1), " must be an object (got ", kind(*j_), ")");
    }
  }

  // Present and not null (transformers writes null for "use the default").
  bool has(const std::string& key) const { return j_->contains(key) && !j_->at(key).is_null(); }
  const std::string& source() const { return source_; }
  std::string path(const std::string& key) const { return prefix_ + key; }

  [[noreturn]] void error(const std::string& key, const std::string& message) const {
    fail(source_, ": field ", path(key), " ", message);
  }

  Fields object(const std::string& key) const {
    need(key);
    return Fields(j_->at(key), source_, prefix_ + key + ".");
  }
  std::optional<Fields> opt_object(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return object(key);
  }

  int64_t i64(const std::string& key) const { return as_i64(key, at(key)); }
  int64_t i64(const std::string& key, int64_t def) const { return has(key) ? i64(key) : def; }
  int integer(const std::string& key) const {
    int64_t v = i64(key);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) error(key, cat("is out of range (", v, ")"));
    return static_cast<int>(v);
  }
  int integer(const std::string& key, int def) const { return has(key) ? integer(key) : def; }

  double number(const std::string& key) const {
    const json& v = at(key);
    double x = 0;
    const NumberCheck check = json_double(v, -HUGE_VAL, HUGE_VAL, x);
    if (check == NumberCheck::not_a_number) error(key, cat("must be a number (got ", kind(v), ")"));
    if (check != NumberCheck::ok) error(key, "must be finite");
    return x;
  }
  double number(const std::string& key, double def) const { return has(key) ? number(key) : def; }

  bool boolean(const std::string& key, bool def) const {
    if (!has(key)) return def;
    const json& v = j_->at(key);
    if (!v.is_boolean()) error(key, cat("must be true or false (got ", kind(v), ")"));
    return v.get<bool>();
  }

  std::string string(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_string()) error(key, cat("must be a string (got ", kind(v), ")"));
    return v.get<std::string>();
  }
  std::string string(const std::string& key, const std::string& def) const { return has(key) ? string(key) : def; }

  std::vector<int> int_list(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) error(key, cat("must be a list of integers (got ", kind(v), ")"));
    std::vector<int> out;
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t x = as_i64(cat(key, "[", i, "]"), v[i]);
      if (x < std::numeric_limits<int>::min() || x > std::numeric_limits<int>::max())
        error(cat(key, "[", i, "]"), "is out of range");
      out.push_back(static_cast<int>(x));
    }
    return out;
  }
  // An integer or a list of integers (e.g. eos_token_id).
  std::vector<int> int_or_list(const std::string& key) const {
    if (at(key).is_array()) return int_list(key);
    return {integer(key)};
  }
  std::vector<double> number_list(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) error(key, cat("must be a list of numbers (got ", kind(v), ")"));
    std::vector<double> out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number()) error(cat(key, "[", i, "]"), cat("must be a number (got ", kind(v[i]), ")"));
      out.push_back(v[i].get<double>());
    }
    return out;
  }
  std::vector<std::string> string_list(const std::string& key) const {
    const json& v = at(key);
    if (!v.is_array()) error(key, cat("must be a list of strings (got ", kind(v), ")"));
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) error(cat(key, "[", i, "]"), cat("must be a string (got ", kind(v[i]), ")"));
      out.push_back(v[i].get<std::string>());
    }
    return out;
  }

  static std::string kind(const json& v) {
    if (v.is_string()) {
      std::string s = v.dump();
      return s.size() > 40 ? "a string" : s;
    }
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_null()) return "null";
    if (v.is_number()) return v.dump();
    if (v.is_array()) return "a list";
    return "an object";
  }

 private:
  void need(const std::string& key) const {
    if (!has(key)) error(key, "is missing");
  }
  const json& at(const std::string& key) const {
    need(key);
    return j_->at(key);
  }
  // Integral floats (64.0) are accepted: some tools write every number as a float.
  int64_t as_i64(const std::string& key, const json& v) const {
    int64_t x = 0;
    switch (json_integer(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), x)) {
      case NumberCheck::ok: return x;
      case NumberCheck::out_of_range: error(key, cat("is out of range (", kind(v), ")"));
      default: error(key, cat("must be an integer (got ", kind(v), ")"));
    }
  }

  const json* j_;
  std::string source_;
  std::string prefix_;
};

}  // namespace qvl::io_detail
