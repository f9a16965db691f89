#include "server/requests/request_fields.h"

#include <algorithm>

#include "server/requests/api_error.h"
#include "util/error.h"
#include "util/json_number.h"

namespace qvl {

RequestField RequestField::whole(const json& value, std::string path) { return RequestField(value, std::move(path), true); }

std::string RequestField::path_of(std::string_view key) const {
  if (whole_) return path_;
  return path_.empty() ? std::string(key) : cat(path_, ".", key);
}

std::string RequestField::path_of(size_t index) const { return whole_ ? path_ : cat(path_, "[", index, "]"); }

std::optional<RequestField> RequestField::find(std::string_view key) const {
  if (!v_->is_object()) return std::nullopt;
  auto it = v_->find(key);
  if (it == v_->end() || it->is_null()) return std::nullopt;
  return child(*it, path_of(key));
}

RequestField RequestField::at(std::string_view key) const {
  std::optional<RequestField> f = find(key);
  if (!f) {
    const std::string p = path_of(key);
    bad_request(p, cat("'", p, "' is required"), "missing_field");
  }
  return *f;
}

RequestField RequestField::operator[](size_t index) const { return child((*v_)[index], path_of(index)); }

const std::string& RequestField::string() const {
  if (!v_->is_string()) wrong_type("a string");
  return v_->get_ref<const std::string&>();
}

bool RequestField::boolean() const {
  if (!v_->is_boolean()) wrong_type("a boolean");
  return v_->get<bool>();
}

double RequestField::number(double lo, double hi) const {
  double x = 0;
  switch (json_double(*v_, lo, hi, x)) {
    case NumberCheck::ok: return x;
    case NumberCheck::not_a_number: wrong_type("a number");
    default: refuse(cat("'", path_, "' must be in [", lo, ", ", hi, "], got ", v_->dump()));
  }
}

int64_t RequestField::integer(int64_t lo, int64_t hi) const {
  int64_t x = 0;
  switch (json_integer(*v_, lo, hi, x)) {
    case NumberCheck::ok: return x;
    case NumberCheck::not_a_number:
    case NumberCheck::not_an_integer: wrong_type("an integer");
    default: refuse(cat("'", path_, "' must be in [", lo, ", ", hi, "], got ", v_->dump()));
  }
}

const RequestField& RequestField::object() const {
  if (!v_->is_object()) wrong_type("an object");
  return *this;
}

const RequestField& RequestField::array() const {
  if (!v_->is_array()) wrong_type("an array");
  return *this;
}

std::optional<double> RequestField::number(std::string_view key, double lo, double hi) const {
  if (auto f = find(key)) return f->number(lo, hi);
  return std::nullopt;
}

std::optional<int64_t> RequestField::integer(std::string_view key, int64_t lo, int64_t hi) const {
  if (auto f = find(key)) return f->integer(lo, hi);
  return std::nullopt;
}

bool RequestField::boolean(std::string_view key, bool fallback) const {
  if (auto f = find(key)) return f->boolean();
  return fallback;
}

const std::string* RequestField::optional_string(std::string_view key) const {
  if (auto f = find(key)) return &f->string();
  return nullptr;
}

void RequestField::only_keys(std::initializer_list<std::string_view> known) const {
  for (auto it = v_->begin(); it != v_->end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      const std::string k = it.key().substr(0, 80);
      bad_request(path_of(it.key()), cat("unknown field '", k, "'", path_.empty() ? "" : cat(" in '", path_, "'")),
                  "unsupported_parameter");
    }
}

void RequestField::wrong_type(std::string_view want) const {
  if (path_.empty()) bad_request("", cat("the request body must be ", want, ", not ", type_name(*v_)), "invalid_type");
  bad_request(path_, cat("'", path_, "' must be ", want, ", not ", type_name(*v_)), "invalid_type");
}

void RequestField::refuse(const std::string& message, const std::string& code) const { bad_request(path_, message, code); }

const char* RequestField::type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

}  // namespace qvl
