#include "tokenizer/py_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/error.h"

namespace qvl {
namespace {

// json.encoder's ESCAPE_DCT: '"', '\\', the five named controls, and
// \u00xx for the other characters below 0x20. Everything else (DEL and all
// non-ASCII included) passes through.
void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void append_dumps(std::string& out, const nlohmann::ordered_json& v) {
  using T = nlohmann::ordered_json::value_t;
  switch (v.type()) {
    case T::null: out += "null"; break;
    case T::boolean: out += v.get<bool>() ? "true" : "false"; break;
    case T::number_integer: out += std::to_string(v.get<int64_t>()); break;
    case T::number_unsigned: out += std::to_string(v.get<uint64_t>()); break;
    case T::number_float: out += python_float_repr(v.get<double>()); break;
    case T::string: append_string(out, v.get_ref<const std::string&>()); break;
    case T::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ", ";
        first = false;
        append_dumps(out, e);
      }
      out += ']';
      break;
    }
    case T::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, e] : v.items()) {
        if (!first) out += ", ";
        first = false;
        append_string(out, k);
        out += ": ";
        append_dumps(out, e);
      }
      out += '}';
      break;
    }
    default: fail("python_json_dumps: a binary or discarded value has no JSON form");
  }
}

// What json.loads builds, as far as dumps can tell: scalars already in
// their Python text, objects with dict semantics.
struct Node {
  enum class Kind { Scalar, String, Array, Object };
  Kind kind = Kind::Scalar;
  std::string text;               // Scalar: its dumps text; String: the decoded value
  std::vector<std::string> keys;  // Object
  std::vector<Node> items;        // Array: elements; Object: values, beside keys
};

void append_node(std::string& out, const Node& n) {
  switch (n.kind) {
    case Node::Kind::Scalar: out += n.text; break;
    case Node::Kind::String: append_string(out, n.text); break;
    case Node::Kind::Array:
    case Node::Kind::Object:
      out += n.kind == Node::Kind::Array ? '[' : '{';
      for (size_t i = 0; i < n.items.size(); ++i) {
        if (i) out += ", ";
        if (n.kind == Node::Kind::Object) {
          append_string(out, n.keys[i]);
          out += ": ";
        }
        append_node(out, n.items[i]);
      }
      out += n.kind == Node::Kind::Array ? ']' : '}';
      break;
  }
}

class Builder {
 public:
  using json = nlohmann::ordered_json;
  bool null() { return scalar("null"); }
  bool boolean(bool b) { return scalar(b ? "true" : "false"); }
  bool number_integer(json::number_integer_t v) { return scalar(std::to_string(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(std::to_string(v)); }
  bool number_float(json::number_float_t v, const std::string& lexeme) {
    // An integer too long for 64 bits reaches here; Python keeps it exact.
    if (lexeme.find_first_of(".eE") == std::string::npos) return scalar(lexeme);
    return scalar(python_float_repr(v));
  }
  bool string(std::string& s) {
    Node n;
    n.kind = Node::Kind::String;
    n.text = std::move(s);
    return attach(std::move(n));
  }
  bool binary(json::binary_t&) { return false; }
  bool start_object(size_t) { return open(Node::Kind::Object); }
  bool start_array(size_t) { return open(Node::Kind::Array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    stack_.back().key = std::move(k);
    return true;
  }
  bool parse_error(size_t position, const std::string& last_token, const nlohmann::detail::exception& e) {
    error_ = cat("at byte ", position, " ('", last_token, "'): ", e.what());
    return false;
  }

  Node root;
  std::string error_;

 private:
  struct Frame {
    Node node;
    std::unordered_map<std::string, size_t> index;  // Object: key -> position
    std::string key;                                // Object: the key of the value to come
  };
  std::vector<Frame> stack_;

  bool scalar(std::string text) {
    Node n;
    n.text = std::move(text);
    return attach(std::move(n));
  }
  bool open(Node::Kind kind) {
    stack_.emplace_back();
    stack_.back().node.kind = kind;
    return true;
  }
  bool close() {
    Node n = std::move(stack_.back().node);
    stack_.pop_back();
    return attach(std::move(n));
  }
  bool attach(Node n) {
    if (stack_.empty()) {
      root = std::move(n);
      return true;
    }
    Frame& f = stack_.back();
    if (f.node.kind == Node::Kind::Array) {
      f.node.items.push_back(std::move(n));
      return true;
    }
    auto [it, fresh] = f.index.try_emplace(f.key, f.node.items.size());
    if (fresh) {
      f.node.keys.push_back(std::move(f.key));
      f.node.items.push_back(std::move(n));
    } else {
      f.node.items[it->second] = std::move(n);  // dict(pairs): first position, last value
    }
    return true;
  }
};

}  // namespace

// float_repr_style 'short': the shortest digits that round-trip, in fixed
// notation when the decimal exponent is in [-4, 16), else d.ddde±XX.
std::string python_float_repr(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x < 0 ? "-Infinity" : "Infinity";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(r.ptr - buf));  // [-]d[.ddd]e±XX
  std::string out;
  if (s[0] == '-') {
    out += '-';
    s.remove_prefix(1);
  }
  size_t e = s.find('e');
  std::string digits;
  for (char c : s.substr(0, e))
    if (c != '.') digits += c;
  int exp = 0;
  std::string_view es = s.substr(e + 1);
  if (es[0] == '+') es.remove_prefix(1);
  std::from_chars(es.data(), es.data() + es.size(), exp);
  const int decpt = exp + 1;  // value = 0.DIGITS * 10^decpt
  const int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= n) {
      out += digits;
      out.append(static_cast<size_t>(decpt - n), '0');
      out += ".0";
    } else {
      out.append(digits, 0, static_cast<size_t>(decpt));
      out += '.';
      out.append(digits, static_cast<size_t>(decpt));
    }
  } else {
    out += digits[0];
    if (n > 1) {
      out += '.';
      out.append(digits, 1);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  }
  return out;
}

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  append_dumps(out, value);
  return out;
}

std::string python_json_dumps_text(std::string_view text) {
  Builder b;
  if (!nlohmann::ordered_json::sax_parse(text, &b)) fail("invalid JSON ", b.error_);
  std::string out;
  append_node(out, b.root);
  return out;
}

}  // namespace qvl
