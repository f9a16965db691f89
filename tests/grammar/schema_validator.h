// Test helper: an independent validator for the JSON Schema subset qvl
// enforces, to check what the grammar generates. Written from the
// specification, sharing no code with src/grammar. Stricter than JSON Schema
// where qvl promises more: with "properties", no other key may appear and the
// keys come in the schema's order; oneOf means exactly one.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

namespace qvl::test {

using ojson = nlohmann::ordered_json;

class SchemaValidator {
 public:
  explicit SchemaValidator(ojson root) : root_(std::move(root)) {}
  // "" if `v` is valid, else what is wrong and where.
  std::string check(const ojson& v) const { return check(v, root_, "$"); }

 private:
  static size_t code_points(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  }
  static bool is_type(const ojson& v, const std::string& t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "number") return v.is_number();
    // 1e2 or a 25-digit integer parse as doubles, yet are integers.
    if (t == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    if (t == "string") return v.is_string();
    if (t == "array") return v.is_array();
    if (t == "object") return v.is_object();
    return false;
  }
  const ojson& resolve(const std::string& ref) const {
    if (ref == "#") return root_;
    for (const char* dir : {"#/$defs/", "#/definitions/"})
      if (ref.rfind(dir, 0) == 0) return root_.at(std::string(dir).substr(2, std::string(dir).size() - 3)).at(ref.substr(std::string(dir).size()));
    throw std::runtime_error("validator: unresolvable " + ref);
  }

  std::string check(const ojson& v, const ojson& s, const std::string& at) const {
    if (s.is_boolean()) return s.get<bool>() ? "" : at + ": false schema";
    if (s.contains("$ref")) return check(v, resolve(s["$ref"]), at);
    if (s.contains("anyOf")) {
      for (const ojson& alt : s["anyOf"])
        if (check(v, alt, at).empty()) return "";
      return at + ": matches no anyOf alternative";
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const ojson& alt : s["oneOf"]) n += check(v, alt, at).empty();
      return n == 1 ? "" : at + ": matches " + std::to_string(n) + " oneOf alternatives";
    }
    if (s.contains("allOf"))
      for (const ojson& alt : s["allOf"])
        if (auto e = check(v, alt, at); !e.empty()) return e;
    if (s.contains("enum")) {
      bool found = false;
      for (const ojson& e : s["enum"]) found = found || e == v;
      if (!found) return at + ": not in enum";
    }
    if (s.contains("const") && s["const"] != v) return at + ": not the const";
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array()) {
        for (const ojson& t : s["type"]) ok = ok || is_type(v, t.get<std::string>());
      } else {
        ok = is_type(v, s["type"].get<std::string>());
      }
      if (!ok) return at + ": wrong type " + std::string(v.type_name());
    }
    if (v.is_number()) return check_number(v, s, at);
    if (v.is_string()) return check_string(v.get<std::string>(), s, at);
    if (v.is_array()) return check_array(v, s, at);
    if (v.is_object()) return check_object(v, s, at);
    return "";
  }

  // Draft 2020-12's numeric bounds, and draft 4's boolean exclusive forms.
  static std::string check_number(const ojson& v, const ojson& s, const std::string& at) {
    const double x = v.get<double>();
    const bool ex_min_flag = s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_boolean() &&
                             s["exclusiveMinimum"].get<bool>();
    const bool ex_max_flag = s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_boolean() &&
                             s["exclusiveMaximum"].get<bool>();
    if (s.contains("minimum") && (ex_min_flag ? x <= s["minimum"].get<double>() : x < s["minimum"].get<double>()))
      return at + ": below minimum";
    if (s.contains("maximum") && (ex_max_flag ? x >= s["maximum"].get<double>() : x > s["maximum"].get<double>()))
      return at + ": above maximum";
    if (s.contains("exclusiveMinimum") && s["exclusiveMinimum"].is_number() && x <= s["exclusiveMinimum"].get<double>())
      return at + ": not above exclusiveMinimum";
    if (s.contains("exclusiveMaximum") && s["exclusiveMaximum"].is_number() && x >= s["exclusiveMaximum"].get<double>())
      return at + ": not below exclusiveMaximum";
    return "";
  }

  static std::string check_string(const std::string& str, const ojson& s, const std::string& at) {
    const size_t n = code_points(str);
    if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return at + ": shorter than minLength";
    if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return at + ": longer than maxLength";
    if (!s.contains("format")) return "";
    static const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))";
    static const std::string time = R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
    static const std::regex re_date("^" + date + "$"), re_time("^" + time + "$"), re_dt("^" + date + "T" + time + "$"),
        re_uuid("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
    const std::string f = s["format"];
    const std::regex& re = f == "date" ? re_date : f == "time" ? re_time : f == "date-time" ? re_dt : re_uuid;
    return std::regex_match(str, re) ? "" : at + ": not a " + f;
  }

  std::string check_array(const ojson& v, const ojson& s, const std::string& at) const {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return at + ": fewer than minItems";
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return at + ": more than maxItems";
    size_t prefix = 0;
    if (s.contains("prefixItems")) prefix = s["prefixItems"].size();
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string here = at + "[" + std::to_string(i) + "]";
      std::string e;
      if (i < prefix) e = check(v[i], s["prefixItems"][i], here);
      else if (s.contains("items")) e = check(v[i], s["items"], here);
      if (!e.empty()) return e;
    }
    return "";
  }

  std::string check_object(const ojson& v, const ojson& s, const std::string& at) const {
    if (s.contains("required"))
      for (const ojson& r : s["required"])
        if (!v.contains(r.get<std::string>())) return at + ": missing required " + r.get<std::string>();
    const bool has_props = s.contains("properties");
    size_t last = 0;  // index in properties of the previous key: keys come in schema order
    for (const auto& [k, x] : v.items()) {
      const std::string here = at + "." + k;
      if (has_props && s["properties"].contains(k)) {
        size_t idx = 0;
        for (const auto& [pk, pv] : s["properties"].items()) {
          if (pk == k) break;
          ++idx;
        }
        if (idx < last) return here + ": out of schema order";
        last = idx + 1;
        if (auto e = check(x, s["properties"][k], here); !e.empty()) return e;
        continue;
      }
      if (has_props) return here + ": undeclared property";
      if (s.contains("additionalProperties")) {
        if (auto e = check(x, s["additionalProperties"], here); !e.empty()) return e;
      }
    }
    return "";
  }

  ojson root_;
};

// The layout qvl promises: outside strings, no whitespace but one optional
// space after ':' or ','.
inline bool compact_layout(const std::string& text) {
  bool in_string = false, escaped = false;
  char prev = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == ' ') {
      if ((prev != ':' && prev != ',') || (i > 0 && text[i - 1] == ' ')) return false;
    } else if (c == '\n' || c == '\r' || c == '\t') {
      return false;
    }
    prev = c;
  }
  return true;
}

}  // namespace qvl::test
