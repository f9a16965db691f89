// JSON Schema (a draft 2020-12 subset) -> grammar nodes.
//
// Supported: type (one or a list), properties / required /
// additionalProperties, enum, const, items, prefixItems, minItems, maxItems,
// string format (date, time, date-time, uuid), minLength / maxLength,
// minimum / maximum / exclusiveMinimum / exclusiveMaximum (integer bounds for
// numbers; number_range.h), anyOf,
// oneOf, allOf with one schema, $ref to "#", "#/$defs/NAME" or
// "#/definitions/NAME" (recursion allowed), and the annotations. Everything
// else is refused with a FieldError naming the keyword's path: a keyword the
// grammar cannot enforce would otherwise be silently dropped from the answer.
//
// Layout: as json_grammar.h (an optional space after ':' and ','); properties
// appear in the schema's order; an optional property may be left out.
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "grammar/grammar_builder.h"
#include "grammar/json_grammar.h"
#include "grammar/number_range.h"
#include "util/error.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;
using Node = GrammarBuilder::Node;

constexpr int64_t kMaxLength = 256;  // minLength/maxLength: one rule and one automaton state per code point
constexpr int64_t kMaxItems = 1024;  // minItems/maxItems/prefixItems: one rule per counted item

const std::set<std::string, std::less<>> kAnnotations = {
    "title", "description", "$schema", "$id", "$comment", "default", "examples", "deprecated", "readOnly", "writeOnly"};
const std::set<std::string, std::less<>> kKeywords = {
    "type",  "properties", "required", "additionalProperties", "enum",      "const",     "items", "prefixItems",
    "minItems", "maxItems", "uniqueItems", "format", "minLength", "maxLength", "anyOf", "oneOf", "allOf", "$ref",
    "$defs", "definitions", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
// Keywords that only say which defs exist: harmless beside anything.
const std::set<std::string, std::less<>> kDefs = {"$defs", "definitions"};
const std::set<std::string, std::less<>> kTypes = {"string", "number", "integer", "boolean", "null", "object", "array"};

class SchemaCompiler {
 public:
  SchemaCompiler(GrammarBuilder& g, const ojson& root, std::string field)
      : g_(g), root_(root), field_(std::move(field)) {}

  Node run() { return ref_target("#", root_, field_, field_); }

 private:
  [[noreturn]] void unsupported(const std::string& at, std::string_view keyword) const {
    throw FieldError(at, cat("response schema keyword '", keyword,
                             "' is not supported by qvl's constrained decoding (at ", at, ")"));
  }
  [[noreturn]] void invalid(const std::string& at, const std::string& why) const {
    throw FieldError(at, cat("invalid response schema at ", at, ": ", why));
  }
  // Only annotations and `allowed` may stand beside `keyword`.
  void only_beside(const ojson& s, const std::string& path, std::string_view keyword,
                   const std::set<std::string, std::less<>>& allowed) const {
    for (const auto& [k, v] : s.items())
      if (k != keyword && !kAnnotations.count(k) && !kDefs.count(k) && !allowed.count(k))
        throw FieldError(path + "." + k, cat("response schema keyword '", k, "' beside '", keyword,
                                             "' is not supported by qvl's constrained decoding (at ", path, ".", k, ")"));
  }

  int64_t count(const ojson& s, const std::string& path, const char* key, int64_t cap) const {
    const ojson& v = s.at(key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0) invalid(path + "." + key, cat("'", key, "' must be a non-negative integer"));
    if (v.get<int64_t>() > cap)
      throw FieldError(path + "." + key, cat("response schema keyword '", key, "' above ", cap,
                                             " is not supported by qvl's constrained decoding (at ", path, ".", key, ")"));
    return v.get<int64_t>();
  }

  Node compile(const ojson& s, const std::string& path) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return json::value(g_);
      invalid(path, "the schema 'false' matches no value");
    }
    if (!s.is_object()) invalid(path, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items())
      if (!kAnnotations.count(k) && !kKeywords.count(k)) unsupported(path + "." + k, k);
    for (const char* k : {"$defs", "definitions"})
      if (s.contains(k) && !s[k].is_object()) invalid(path + "." + k, cat("'", k, "' must be an object"));

    if (s.contains("$ref")) {
      only_beside(s, path, "$ref", {});
      return ref(s["$ref"], path + ".$ref");
    }
    for (const char* k : {"anyOf", "oneOf", "allOf"})
      if (s.contains(k)) {
        only_beside(s, path, k, {});
        return combination(s[k], path + "." + k, k);
      }
    if (s.contains("enum") || s.contains("const")) {
      only_beside(s, path, s.contains("enum") ? "enum" : "const", {"type", "enum", "const"});
      return values(s, path);
    }

    std::vector<std::string> types;
    if (s.contains("type")) {
      types = type_list(s["type"], path + ".type");
    } else {
      static const std::set<std::string, std::less<>> kTyped = {
          "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
          "uniqueItems", "format", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum",
          "exclusiveMaximum"};
      bool typed = false;
      for (const auto& [k, v] : s.items()) typed = typed || kTyped.count(k);
      if (!typed) return json::value(g_);
      // Without "type" the keywords apply to their own type and any other type is fine.
      types = {"null", "boolean", "number", "string", "array", "object"};
    }
    const bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
    std::vector<Node> alts;
    for (const std::string& t : types) {
      if (t == "null") alts.push_back(g_.literal("null"));
      else if (t == "boolean") alts.push_back(g_.choice({g_.literal("true"), g_.literal("false")}));
      else if (t == "integer") {
        if (!has_number) alts.push_back(number_node(s, path, true));  // every integer is a number already
      } else if (t == "number") alts.push_back(number_node(s, path, false));
      else if (t == "string") alts.push_back(string(s, path));
      else if (t == "array") alts.push_back(array(s, path));
      else alts.push_back(object(s, path));
    }
    return alts.size() == 1 ? alts[0] : g_.choice(std::move(alts));
  }

  // An integer or number, within the schema's bounds if it has any.
  Node number_node(const ojson& s, const std::string& path, bool integer) {
    const std::optional<json::Bound> lo = bound(s, path, true, integer), hi = bound(s, path, false, integer);
    if (!lo && !hi) return integer ? json::integer(g_) : json::number(g_);
    const Node n = integer ? json::integer_in(g_, lo, hi) : json::number_in(g_, lo, hi);
    if (n < 0) invalid(path + (s.contains("maximum") ? ".maximum" : ".exclusiveMaximum"), "no number lies within the bounds");
    return n;
  }

  // The lower (or upper) bound from minimum/exclusiveMinimum (maximum/
  // exclusiveMaximum; the draft-4 boolean exclusive forms too), the tighter
  // when both are given. Integers round a fractional bound inwards; for
  // numbers a bound must be a whole number.
  std::optional<json::Bound> bound(const ojson& s, const std::string& path, bool lower, bool integer) const {
    const char* inclusive_key = lower ? "minimum" : "maximum";
    const char* exclusive_key = lower ? "exclusiveMinimum" : "exclusiveMaximum";
    std::optional<json::Bound> best;
    auto take = [&](const char* key, bool inclusive) {
      const ojson& v = s[key];
      const std::string at = path + "." + key;
      if (!v.is_number()) invalid(at, cat("'", key, "' must be a number"));
      const double x = v.get<double>();
      if (!std::isfinite(x)) invalid(at, cat("'", key, "' must be finite"));
      json::Bound b;
      b.inclusive = inclusive;
      if (std::abs(x) > 1e19) {
        b = {x > 0 ? json::kMaxBound + 1 : -json::kMaxBound - 1, true};  // tightened to 18 digits
      } else if (v.is_number_integer()) {
        b.value = v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), json::kMaxBound + 1))
                                         : v.get<int64_t>();
      } else if (x == std::floor(x)) {
        b.value = static_cast<int64_t>(x);
      } else if (integer) {
        b = {static_cast<int64_t>(lower ? std::ceil(x) : std::floor(x)), true};  // no integer lies at x itself
      } else {
        throw FieldError(at, cat("response schema keyword '", key, "' with a fractional bound (", v.dump(),
                                 ") is not supported by qvl's constrained decoding (at ", at, ")"));
      }
      const bool tighter = !best || (lower ? b.value > best->value : b.value < best->value) ||
                           (b.value == best->value && !b.inclusive);
      if (tighter) best = b;
    };
    bool exclusive_flag = false;  // draft 4: "exclusiveMinimum": true modifies "minimum"
    if (s.contains(exclusive_key)) {
      if (s[exclusive_key].is_boolean()) exclusive_flag = s[exclusive_key].get<bool>();
      else take(exclusive_key, false);
    }
    if (s.contains(inclusive_key)) take(inclusive_key, !exclusive_flag);
    return best;
  }

  std::vector<std::string> type_list(const ojson& t, const std::string& path) const {
    std::vector<std::string> out;
    auto add = [&](const ojson& name) {
      if (!name.is_string() || !kTypes.count(name.get<std::string>()))
        invalid(path, cat("'type' must name JSON types (string, number, integer, boolean, null, object, array), got ", name.dump()));
      if (std::find(out.begin(), out.end(), name.get<std::string>()) == out.end()) out.push_back(name.get<std::string>());
    };
    if (t.is_array()) {
      if (t.empty()) invalid(path, "'type' must not be an empty list");
      for (const ojson& name : t) add(name);
    } else {
      add(t);
    }
    return out;
  }

  // oneOf is treated as anyOf: exclusivity is not enforced, which is exact
  // for the usual disjoint alternatives (different types or const tags).
  Node combination(const ojson& list, const std::string& path, std::string_view keyword) {
    if (!list.is_array() || list.empty()) invalid(path, cat("'", keyword, "' must be a non-empty array of schemas"));
    if (keyword == "allOf") {
      if (list.size() != 1)
        throw FieldError(path, cat("response schema keyword 'allOf' with more than one schema is not supported by qvl's "
                                   "constrained decoding (at ", path, ")"));
      return compile(list[0], path + "[0]");
    }
    std::vector<Node> alts;
    for (size_t i = 0; i < list.size(); ++i) alts.push_back(compile(list[i], cat(path, "[", i, "]")));
    return g_.choice(std::move(alts));
  }

  static bool has_type(const ojson& v, const std::string& t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "number") return v.is_number();
    if (t == "integer")
      return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<int64_t>(v.get<double>())));
    if (t == "string") return v.is_string();
    if (t == "array") return v.is_array();
    return v.is_object();
  }

  // enum and/or const: the listed values that fit `type`, each spelled compactly.
  Node values(const ojson& s, const std::string& path) {
    std::vector<ojson> vals;
    const std::string at = path + (s.contains("enum") ? ".enum" : ".const");
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) invalid(path + ".enum", "'enum' must be a non-empty array");
      for (const ojson& v : s["enum"])
        if (!s.contains("const") || v == s["const"]) vals.push_back(v);
    } else {
      vals.push_back(s["const"]);
    }
    if (s.contains("type")) {
      const std::vector<std::string> types = type_list(s["type"], path + ".type");
      std::erase_if(vals, [&](const ojson& v) {
        return std::none_of(types.begin(), types.end(), [&](const std::string& t) { return has_type(v, t); });
      });
    }
    if (vals.empty()) invalid(at, "no listed value fits the schema (type, enum and const leave nothing)");
    std::vector<Node> alts;
    for (const ojson& v : vals) {
      try {
        alts.push_back(g_.literal(v.dump()));
      } catch (const ojson::type_error&) {
        invalid(at, "a listed value holds a string that is not valid UTF-8");
      }
    }
    return g_.choice(std::move(alts));
  }

  Node string(const ojson& s, const std::string& path) {
    if (s.contains("format")) {
      if (!s["format"].is_string()) invalid(path + ".format", "'format' must be a string");
      for (const char* k : {"minLength", "maxLength"})
        if (s.contains(k))
          throw FieldError(path + "." + k, cat("response schema keyword '", k, "' beside 'format' is not supported by qvl's "
                                               "constrained decoding (at ", path, ".", k, ")"));
      const std::string name = s["format"].get<std::string>();
      const Node f = json::format(g_, name);
      if (f < 0)
        throw FieldError(path + ".format", cat("response schema keyword 'format' with value '", name,
                                               "' is not supported by qvl's constrained decoding (at ", path,
                                               ".format; supported: date, time, date-time, uuid)"));
      return f;
    }
    if (!s.contains("minLength") && !s.contains("maxLength")) return json::string(g_);
    const int64_t min = s.contains("minLength") ? count(s, path, "minLength", kMaxLength) : 0;
    const int64_t max = s.contains("maxLength") ? count(s, path, "maxLength", kMaxLength) : -1;
    if (max >= 0 && max < min) invalid(path + ".maxLength", "'maxLength' is below 'minLength'");
    return g_.sequence({g_.literal("\""), g_.repeat(json::string_char(g_), static_cast<int>(min), static_cast<int>(max)),
                        g_.literal("\"")});
  }

  Node array(const ojson& s, const std::string& path) {
    if (s.contains("uniqueItems") && !(s["uniqueItems"].is_boolean() && !s["uniqueItems"].get<bool>()))
      unsupported(path + ".uniqueItems", "uniqueItems");
    const int64_t min = s.contains("minItems") ? count(s, path, "minItems", kMaxItems) : 0;
    int64_t max = s.contains("maxItems") ? count(s, path, "maxItems", kMaxItems) : -1;
    if (max >= 0 && max < min) invalid(path + ".maxItems", "'maxItems' is below 'minItems'");

    ++depth_;
    std::vector<Node> prefix;
    if (s.contains("prefixItems")) {
      const ojson& p = s["prefixItems"];
      if (!p.is_array()) invalid(path + ".prefixItems", "'prefixItems' must be an array of schemas");
      if (static_cast<int64_t>(p.size()) > kMaxItems) unsupported(path + ".prefixItems", "prefixItems");
      for (size_t i = 0; i < p.size(); ++i) prefix.push_back(compile(p[i], cat(path, ".prefixItems[", i, "]")));
    }
    Node rest = -1;  // the schema of the items after the prefix; -1: none may follow
    if (!s.contains("items") || s["items"].is_boolean()) {
      if (!s.contains("items") || s["items"].get<bool>()) rest = json::value(g_);
    } else if (s["items"].is_object()) {
      rest = compile(s["items"], path + ".items");
    } else {
      invalid(path + ".items", "'items' must be a schema (tuples are written with 'prefixItems')");
    }
    --depth_;

    const auto k = static_cast<int64_t>(prefix.size());
    if (rest < 0) {
      if (min > k) invalid(path + ".minItems", "'minItems' asks for more items than 'prefixItems' allows");
      max = max < 0 ? k : std::min(max, k);
    }
    if (max == 0) return g_.literal("[]");
    auto item = [&](int64_t i) { return i < k ? prefix[static_cast<size_t>(i)] : rest; };
    const Node comma = json::comma(g_);
    // tail(i): what may follow once i items are out; built from the last one back.
    int64_t i = max >= 0 ? max : std::max({k, min, int64_t{1}});
    Node tail;
    if (max >= 0) {
      tail = g_.literal("");
    } else {
      tail = g_.forward();  // T -> "" | ", " item T
      g_.define(tail, g_.choice({g_.literal(""), g_.sequence({comma, rest, tail})}));
    }
    for (--i; i >= 1; --i) {
      const Node more = g_.sequence({comma, item(i), tail});
      tail = i >= min ? g_.choice({g_.literal(""), more}) : more;
    }
    const Node items = g_.sequence({item(0), tail, g_.literal("]")});
    return g_.sequence({g_.literal("["), min == 0 ? g_.choice({g_.literal("]"), items}) : items});
  }

  Node object(const ojson& s, const std::string& path) {
    const bool has_ap = s.contains("additionalProperties");
    const ojson* ap = has_ap ? &s["additionalProperties"] : nullptr;
    if (ap && !ap->is_boolean() && !ap->is_object())
      invalid(path + ".additionalProperties", "'additionalProperties' must be a boolean or a schema");
    std::vector<std::string> required;
    if (s.contains("required")) {
      const ojson& r = s["required"];
      if (!r.is_array()) invalid(path + ".required", "'required' must be an array of property names");
      for (const ojson& name : r) {
        if (!name.is_string()) invalid(path + ".required", "'required' must be an array of property names");
        if (std::find(required.begin(), required.end(), name.get<std::string>()) != required.end())
          invalid(path + ".required", cat("'required' names '", name.get<std::string>(), "' twice"));
        required.push_back(name.get<std::string>());
      }
    }

    if (!s.contains("properties")) {
      if (!required.empty())
        throw FieldError(path + ".required", cat("response schema keyword 'required' without 'properties' is not supported by "
                                                 "qvl's constrained decoding (at ", path, ".required)"));
      if (!ap || ap->is_boolean()) return ap && !ap->get<bool>() ? g_.literal("{}") : json::object(g_);
      // A map: any keys, every value valid against the schema.
      ++depth_;
      const Node v = compile(*ap, path + ".additionalProperties");
      --depth_;
      const Node member = g_.sequence({json::string(g_), json::colon(g_), v});
      return g_.sequence({g_.literal("{"), g_.choice({g_.literal("}"), g_.sequence({g_.repeat(member, 1, -1, json::comma(g_)),
                                                                                   g_.literal("}")})})});
    }

    const ojson& props = s["properties"];
    if (!props.is_object()) invalid(path + ".properties", "'properties' must be an object of schemas");
    // Beside 'properties', qvl writes the declared properties only, whatever
    // additionalProperties allows besides: such an object is valid against
    // the schema either way (extra properties are permitted, never required),
    // and a model given a schema means its declared fields.
    for (const std::string& name : required)
      if (!props.contains(name)) invalid(path + ".required", cat("required property '", name, "' is not in 'properties'"));

    struct Member {
      Node node;
      bool required;
    };
    std::vector<Member> members;
    ++depth_;
    for (const auto& [name, sub] : props.items()) {
      std::string key;
      try {
        key = ojson(name).dump();
      } catch (const ojson::type_error&) {
        invalid(path + ".properties", "a property name is not valid UTF-8");
      }
      const Node v = compile(sub, path + ".properties." + name);
      members.push_back({g_.sequence({g_.literal(key), json::colon(g_), v}),
                         std::find(required.begin(), required.end(), name) != required.end()});
    }
    --depth_;
    // From the last property back: none_i = nothing written yet, properties
    // i.. to go; some_i = something written (the next one needs a comma).
    Node none = g_.literal(""), some = g_.literal("");
    for (size_t i = members.size(); i-- > 0;) {
      const Member& m = members[i];
      const Node first = g_.sequence({m.node, some});
      const Node later = g_.sequence({json::comma(g_), m.node, some});
      none = m.required ? first : g_.choice({first, none});
      some = m.required ? later : g_.choice({later, some});
    }
    return g_.sequence({g_.literal("{"), none, g_.literal("}")});
  }

  // Resolves "#", "#/$defs/NAME" or "#/definitions/NAME" to a rule; the same
  // target is one rule however often (or recursively) it is referenced.
  Node ref(const ojson& target, const std::string& path) {
    if (!target.is_string()) invalid(path, "'$ref' must be a string");
    const std::string t = target.get<std::string>();
    if (t == "#") return ref_target(t, root_, field_, path);
    for (const char* dir : {"$defs", "definitions"}) {
      const std::string lead = cat("#/", dir, "/");
      if (t.rfind(lead, 0) != 0) continue;
      std::string name;  // JSON pointer unescaping: ~1 is '/', ~0 is '~'
      const std::string raw = t.substr(lead.size());
      for (size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '/') name.clear(), i = raw.size();  // nested pointers are not supported
        else if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1'))
          name += raw[++i] == '0' ? '~' : '/';
        else name += raw[i];
      }
      if (!name.empty() && raw.find('/') == std::string::npos && root_.is_object() && root_.contains(dir) &&
          root_[dir].is_object() && root_[dir].contains(name))
        return ref_target(t, root_[dir][name], cat(field_, ".", dir, ".", name), path);
      break;
    }
    throw FieldError(path, cat("response schema '$ref' \"", t, "\" is not supported by qvl's constrained decoding (at ", path,
                               "; only '#', '#/$defs/NAME' and '#/definitions/NAME' of this schema are)"));
  }

  Node ref_target(const std::string& key, const ojson& schema, const std::string& schema_path, const std::string& ref_path) {
    if (auto it = refs_.find(key); it != refs_.end()) {
      // Still being compiled at this container depth: the reference would be
      // reached again before any byte is written (a schema such as
      // {"$ref": "#"}), which has no finite value.
      if (auto open = open_.find(key); open != open_.end() && open->second == depth_)
        invalid(ref_path, cat("'$ref' \"", key, "\" refers back to itself before any value is written"));
      return it->second;
    }
    const Node f = g_.forward();
    refs_.emplace(key, f);
    open_[key] = depth_;
    const Node body = compile(schema, schema_path);
    open_.erase(key);
    g_.define(f, body);
    return f;
  }

  GrammarBuilder& g_;
  const ojson& root_;
  std::string field_;
  std::map<std::string, Node> refs_;  // $ref target -> its rule
  std::map<std::string, int> open_;   // targets being compiled -> depth_ when they were entered
  int depth_ = 0;                     // objects and arrays entered: a $ref below one has written a byte
};

}  // namespace

GrammarBuilder::Node GrammarBuilder::json_schema(const nlohmann::ordered_json& schema, const std::string& field) {
  return SchemaCompiler(*this, schema, field).run();
}

}  // namespace qvl
