// Typed reading of a request body's fields, each with its dotted path
// ("messages[2].content[0].image_url.url"), the way io/json_fields.h reads a
// model's config files. Every refusal is a 400 ApiError whose param is the
// path and whose message names it, in one form per fault:
//
//   missing        'messages[2].role' is required                   missing_field
//   wrong type     'stream' must be a boolean, not a string          invalid_type
//   out of range   'temperature' must be in [0, 2], got 9            invalid_value
//   unknown key    unknown field 'x' in 'stream_options'             unsupported_parameter
//
// A null counts as not sent (OpenAI's clients send null for "the default").
// The value read is the body's own: nothing is copied until the caller
// takes it (a data: URL can be megabytes).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace qvl {

class RequestField {
 public:
  using json = nlohmann::ordered_json;

  // The whole body (path ""): its keys are named bare ("model").
  explicit RequestField(const json& value, std::string path = {}) : v_(&value), path_(std::move(path)) {}
  // A value refused as one field: its keys and elements are named by `path`
  // alone (a stored conversation, named by the previous_response_id it came by).
  static RequestField whole(const json& value, std::string path);

  const json& value() const { return *v_; }
  const std::string& path() const { return path_; }
  std::string path_of(std::string_view key) const;
  std::string path_of(size_t index) const;

  // The key, when it is present and not null.
  std::optional<RequestField> find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key).has_value(); }
  // The key, which must be there (400 missing_field).
  RequestField at(std::string_view key) const;
  // Element `index` of an array (array() checked by the caller).
  RequestField operator[](size_t index) const;
  size_t size() const { return v_->size(); }

  // This value, type-checked (400 invalid_type), a number also ranged (400 invalid_value).
  const std::string& string() const;
  bool boolean() const;
  double number(double lo, double hi) const;
  // 5.0 is 5 (JavaScript clients have only doubles).
  int64_t integer(int64_t lo, int64_t hi) const;
  const RequestField& object() const;
  const RequestField& array() const;

  // Optional keys of this object, type-checked when present.
  std::optional<double> number(std::string_view key, double lo, double hi) const;
  std::optional<int64_t> integer(std::string_view key, int64_t lo, int64_t hi) const;
  bool boolean(std::string_view key, bool fallback) const;
  // A required string key.
  const std::string& string(std::string_view key) const { return at(key).string(); }
  // An optional string key; nullptr when absent.
  const std::string* optional_string(std::string_view key) const;

  // Any key of this object outside `known` is refused, naming it.
  void only_keys(std::initializer_list<std::string_view> known) const;

  // Refusals naming this value.
  [[noreturn]] void wrong_type(std::string_view want) const;
  [[noreturn]] void refuse(const std::string& message, const std::string& code = "invalid_value") const;
  [[noreturn]] void unsupported(const std::string& message) const { refuse(message, "unsupported_parameter"); }

  // "a string", "an integer", … as the messages say it.
  static const char* type_name(const json& v);

 private:
  RequestField(const json& value, std::string path, bool whole) : v_(&value), path_(std::move(path)), whole_(whole) {}
  RequestField child(const json& value, std::string path) const { return RequestField(value, std::move(path), whole_); }

  const json* v_;
  std::string path_;
  bool whole_ = false;
};

}  // namespace qvl
