#include "util/json_reader.h"

#include <memory>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "util/error.h"
#include "util/printable.h"

namespace qvl {
namespace {

// Objects of an ordered_json are vectors searched linearly on insert; past
// this many keys a hash index of the keys keeps each insert O(1).
constexpr size_t kIndexKeysAbove = 16;

// nlohmann's messages start with "[json.exception.parse_error.101] ": the
// reader names the failure itself.
std::string reason_of(const nlohmann::detail::exception& e) {
  std::string_view what = e.what();
  if (auto close = what.find("] "); what.rfind("[json.exception.", 0) == 0 && close != std::string_view::npos)
    what.remove_prefix(close + 2);
  return printable(what, 300);
}

template <class Json>
class DomBuilder {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;
  static constexpr bool ordered = std::is_same_v<Json, nlohmann::ordered_json>;

  DomBuilder(Json& root, const JsonReadLimits& limits, JsonReadError& error)
      : root_(root), limits_(limits), error_(error) {}

  bool null() { return tick() && put(Json(nullptr)); }
  bool boolean(bool v) { return tick() && put(Json(v)); }
  bool number_integer(number_integer_t v) { return tick() && put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return tick() && put(Json(v)); }
  // nlohmann refuses non-finite doubles before this event (parse_error 406).
  bool number_float(number_float_t v, const string_t&) { return tick() && put(Json(v)); }
  bool string(string_t& s) {
    if (!tick()) return false;
    if (limits_.max_string_bytes && s.size() > limits_.max_string_bytes)
      return fail(JsonReadError::Kind::string_too_long, cat(s.size(), " bytes"));
    return put(Json(std::move(s)));
  }
  bool binary(binary_t& b) { return tick() && put(Json(std::move(b))); }  // never produced from JSON text

  bool start_object(std::size_t) { return tick() && open(nlohmann::json::value_t::object); }
  bool start_array(std::size_t) { return tick() && open(nlohmann::json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    if (!tick()) return false;
    if (limits_.max_string_bytes && k.size() > limits_.max_string_bytes)
      return fail(JsonReadError::Kind::string_too_long, cat("a key of ", k.size(), " bytes"));
    stack_.back().key = std::move(k);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // out_of_range: "number overflow parsing '1e400'"
      error_.byte = position >= token.size() ? position - token.size() : 0;
      fail(JsonReadError::Kind::number_out_of_range, printable(token, 40));
    } else {
      error_.byte = position;
      fail(JsonReadError::Kind::syntax, reason_of(e));
    }
    error_.has_byte = true;
    return false;
  }

 private:
  struct Frame {
    Json* container;
    string_t key;  // objects: the key of the value being read
    std::unique_ptr<std::unordered_map<string_t, size_t>> index;  // ordered objects past kIndexKeysAbove keys
  };

  // Every event counts toward the stop check; values toward the element cap.
  bool tick() {
    if (++events_ % kJsonStopCheckEvents == 0 && limits_.should_stop && limits_.should_stop())
      return fail(JsonReadError::Kind::stopped, "");
    return true;
  }

  bool open(nlohmann::json::value_t type) {
    if (limits_.max_depth && static_cast<int>(stack_.size()) >= limits_.max_depth)
      return fail(JsonReadError::Kind::too_deep, cat(limits_.max_depth, " levels"));
    Json* c = put(Json(type));
    if (!c) return false;
    stack_.push_back(Frame{c, {}, nullptr});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  // Adds `v` where the parse is (the root, an array's end, an object's key);
  // the address stays valid while `v` is the innermost open container, as
  // nothing else is added to its parent meanwhile.
  Json* put(Json&& v) {
    if (limits_.max_elements && ++elements_ > limits_.max_elements) {
      fail(JsonReadError::Kind::too_many_elements, cat(limits_.max_elements, " values"));
      return nullptr;
    }
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Frame& f = stack_.back();
    if (f.container->is_array()) {
      auto& a = f.container->template get_ref<typename Json::array_t&>();
      a.push_back(std::move(v));
      return &a.back();
    }
    return insert(f, std::move(v));
  }

  Json* insert(Frame& f, Json&& v) {
    auto& obj = f.container->template get_ref<typename Json::object_t&>();
    if constexpr (ordered) {
      using Container = typename Json::object_t::Container;
      Container& pairs = obj;  // indexed access; ordered_map's own [] takes keys
      size_t at = pairs.size();
      if (f.index) {
        if (auto it = f.index->find(f.key); it != f.index->end()) at = it->second;
      } else {
        for (size_t i = 0; i < pairs.size(); ++i)
          if (pairs[i].first == f.key) at = i;
      }
      if (at < pairs.size()) return repeated(pairs[at].second, std::move(v));
      if (f.index) f.index->emplace(f.key, at);
      pairs.emplace_back(f.key, std::move(v));  // the key is known to be new: no search
      if (!f.index && pairs.size() > kIndexKeysAbove) {
        f.index = std::make_unique<std::unordered_map<string_t, size_t>>();
        for (size_t i = 0; i < pairs.size(); ++i) f.index->emplace(pairs[i].first, i);
      }
      return &pairs.back().second;
    } else {
      auto [it, inserted] = obj.emplace(f.key, nullptr);
      if (!inserted) return repeated(it->second, std::move(v));
      it->second = std::move(v);
      return &it->second;
    }
  }

  Json* repeated(Json& slot, Json&& v) {
    if (limits_.refuse_duplicate_keys) {
      fail(JsonReadError::Kind::duplicate_key, printable(stack_.back().key), /*in_container=*/true);
      return nullptr;
    }
    slot = std::move(v);
    return &slot;
  }

  // `in_container`: the path of the innermost open container (a repeated
  // key names its object), else of the value being read.
  bool fail(JsonReadError::Kind kind, std::string detail, bool in_container = false) {
    error_.kind = kind;
    error_.detail = std::move(detail);
    error_.path = path(in_container ? stack_.size() - 1 : stack_.size());
    return false;
  }

  // Where the value being read is, through the first `levels` open
  // containers: each one's position, the innermost one's being the value not
  // yet added.
  std::string path(size_t levels) const {
    std::string p;
    for (size_t i = 0; i < levels; ++i) {
      const Json& c = *stack_[i].container;
      if (c.is_array()) {
        const size_t n = c.size();
        p += cat("[", i + 1 < stack_.size() ? n - 1 : n, "]");
      } else {
        if (!p.empty()) p += '.';
        p += printable(stack_[i].key, 60);
      }
    }
    return p;
  }

  Json& root_;
  const JsonReadLimits& limits_;
  JsonReadError& error_;
  std::vector<Frame> stack_;
  size_t events_ = 0;
  size_t elements_ = 0;
};

}  // namespace

std::string JsonReadError::describe() const {
  using K = Kind;
  const std::string at = has_byte ? cat(" (byte ", byte, ")") : "";
  const std::string in = path.empty() ? "" : cat(" in field ", path);
  switch (kind) {
    case K::none: return "no error";
    case K::syntax: return cat("not valid JSON at byte ", byte, in, ": ", detail);
    case K::number_out_of_range:
      return cat(path.empty() ? "the number " : cat("field ", path, ": the number "), detail,
                 " is outside the range of a double", at);
    case K::too_deep: return cat("JSON nested deeper than ", detail, in);
    case K::too_many_elements: return cat("JSON with more than ", detail, in);
    case K::string_too_long: return cat("a JSON string of ", detail, " is over the limit", in);
    case K::duplicate_key: return cat("key \"", detail, "\" appears twice", in);
    case K::stopped: return "parsing stopped";
  }
  return "unknown JSON error";
}

template <class Json>
bool read_json(std::string_view text, const JsonReadLimits& limits, Json& out, JsonReadError& error) {
  error = JsonReadError{};
  Json root;
  DomBuilder<Json> builder(root, limits, error);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder);
  if (ok && error.kind == JsonReadError::Kind::none) {
    out = std::move(root);
    return true;
  }
  if (error.kind == JsonReadError::Kind::none) error.kind = JsonReadError::Kind::syntax;
  return false;
}

template bool read_json<nlohmann::json>(std::string_view, const JsonReadLimits&, nlohmann::json&, JsonReadError&);
template bool read_json<nlohmann::ordered_json>(std::string_view, const JsonReadLimits&, nlohmann::ordered_json&,
                                                JsonReadError&);

nlohmann::json read_json_file(std::string_view text, const std::string& source, size_t base_offset,
                              bool refuse_duplicate_keys) {
  JsonReadLimits limits;
  limits.max_depth = 512;
  limits.refuse_duplicate_keys = refuse_duplicate_keys;
  nlohmann::json out;
  JsonReadError error;
  if (read_json(text, limits, out, error)) return out;
  error.byte += base_offset;
  fail(source, ": ", error.describe());
}

}  // namespace qvl
