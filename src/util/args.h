// Command-line options bound to typed members. A group of options is declared
// once, by a function that visits the struct they set (after gemma.cpp's
// ArgsBase visitors):
//
//   void visit_options(EngineParams& p, Args& v) {
//     v(p.ctx_size, "ctx-size", "N", "context (KV cache) size in tokens").range(16, 1 << 24).env("QVL_CTX_SIZE");
//     v(p.weights, "weights", "FORMAT", "weight format in memory")
//         .choices({WeightFormat::BF16, WeightFormat::F32}, weight_format_name);
//   }
//
// The member's value when it is declared is the option's default, which
// --help shows: a default is written once, as the struct's member
// initialiser, and a command that wants another one sets the member before
// declaring it. parse() reads each option from the command line, else from
// its environment variable, as the member's type, checks it against the
// declared range or choices and stores it; a bad value is one line naming the
// flag, the value and what is allowed ("run: --ctx-size: 5 is out of range
// [16, 16777216]"). Members may be bool (a switch), an integer, double,
// std::string, an enum (with choices), std::optional of those (left unset
// unless given) or std::vector<std::string> (an option given several times).
//
// --help prints every option with its value kind, range, default and
// environment variable; the hidden --help-markdown prints the same as a
// Markdown table (docs/api.md holds serve's, checked by a test).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "util/error.h"

namespace qvl {

// One declared option, whatever the type of its member.
class Option {
 public:
  Option(std::string name, std::string metavar, std::string help)
      : name_(std::move(name)), metavar_(std::move(metavar)), help_(std::move(help)) {}
  virtual ~Option() = default;

  const std::string& name() const { return name_; }        // without the leading "--"
  const std::string& metavar() const { return metavar_; }  // empty for a switch
  const std::string& help() const { return help_; }
  const std::string& env_var() const { return env_; }  // empty: none
  bool is_switch() const { return metavar_.empty(); }
  virtual bool repeatable() const = 0;
  // The kind of value and what is allowed: "integer in [16, 16777216]",
  // "number in [0, 100]", "one of text, json", "text"; "" for a switch.
  virtual std::string allowed() const = 0;
  // The member's present value as the flag would give it ("8192", "bf16"),
  // the declared .unset() text, or "" when there is nothing to show.
  virtual std::string default_text() const = 0;
  // Reads one value (a switch's: "1", or its environment variable's text)
  // into the member; returns "" or why the value is refused ("is out of range
  // [16, 16777216]"). A repeatable option's first value replaces the default.
  virtual std::string store(const std::string& value) = 0;

 protected:
  std::string name_, metavar_, help_, env_;
};

namespace args_detail {

template <class T>
struct Member {
  using Value = T;
  static constexpr bool optional = false, list = false;
};
template <class U>
struct Member<std::optional<U>> {
  using Value = U;
  static constexpr bool optional = true, list = false;
};
template <>
struct Member<std::vector<std::string>> {
  using Value = std::string;
  static constexpr bool optional = false, list = true;
};

bool parse_integer(const std::string& text, long long& out);  // decimal, the whole text
bool parse_number(const std::string& text, double& out);      // finite, the whole text
bool switch_value(const std::string& text);                   // false for "", 0, false, no, off
std::string show_number(double x);                            // shortest form: 180, 0.1, 1e-09
std::string join(const std::vector<std::string>& words, const char* separator);

}  // namespace args_detail

// An option whose member is a T (see the top of the file). The setters
// return *this so a declaration reads as one statement.
template <class T>
class TypedOption final : public Option {
  using M = args_detail::Member<T>;

 public:
  using Value = typename M::Value;
  using Bound = std::conditional_t<std::is_floating_point_v<Value>, double, long long>;

  TypedOption(T& member, std::string name, std::string metavar, std::string help)
      : Option(std::move(name), std::move(metavar), std::move(help)), member_(member) {
    static_assert(std::is_same_v<Value, bool> || std::is_arithmetic_v<Value> || std::is_enum_v<Value> ||
                      std::is_same_v<Value, std::string>,
                  "an option's member is bool, a number, an enum, a string, an optional of one, or a list of strings");
    if constexpr (std::is_arithmetic_v<Value> && !std::is_same_v<Value, bool>) {
      min_ = std::max<long double>(std::numeric_limits<Value>::lowest(), std::numeric_limits<Bound>::lowest());
      max_ = std::min<long double>(std::numeric_limits<Value>::max(), std::numeric_limits<Bound>::max());
    }
  }

  // Consulted when the flag is not on the command line.
  TypedOption& env(std::string variable) {
    env_ = std::move(variable);
    return *this;
  }
  // Integers and numbers: the values allowed, both ends included (in the
  // flag's units, see unit()).
  TypedOption& range(Bound min, Bound max) {
    static_assert(std::is_arithmetic_v<Value> && !std::is_same_v<Value, bool>, "range() is for numbers");
    min_ = min;
    max_ = max;
    has_range_ = true;
    check_fits();
    return *this;
  }
  // Integers: the member holds the given value times `factor`
  // (--image-cache-mb into bytes); the default is shown divided by it.
  TypedOption& unit(long long factor) {
    static_assert(std::is_integral_v<Value> && !std::is_same_v<Value, bool>, "unit() is for integers");
    unit_ = factor;
    check_fits();
    return *this;
  }
  // Enums: the values allowed, named by `name` (the names come from where the
  // enum is declared, e.g. weight_format_name).
  TypedOption& choices(std::initializer_list<Value> values, const char* (*name)(Value)) {
    static_assert(std::is_enum_v<Value>, "choices(values, name) is for enums");
    for (Value v : values) choices_.emplace_back(name(v), v);
    return *this;
  }
  // Strings: the values allowed.
  TypedOption& choices(std::initializer_list<const char*> values) {
    static_assert(std::is_same_v<Value, std::string>, "choices(names) is for strings");
    for (const char* v : values) choices_.emplace_back(v, v);
    return *this;
  }
  // The member's present value (or an empty optional) means "not set": help
  // shows `text` as the default ("the model's") instead of the value.
  TypedOption& unset(std::string text) {
    unset_text_ = std::move(text);
    if constexpr (!M::optional && !M::list) sentinel_ = member_;
    return *this;
  }
  // A check beyond type and range: returns "" or why the value is refused
  // ("is not a folder").
  TypedOption& check(std::function<std::string(const Value&)> fn) {
    check_ = std::move(fn);
    return *this;
  }

  bool repeatable() const override { return M::list; }

  std::string allowed() const override {
    if constexpr (std::is_same_v<Value, bool>) {
      return "";
    } else if constexpr (std::is_enum_v<Value> || std::is_same_v<Value, std::string>) {
      if (choices_.empty()) return "text";
      std::vector<std::string> names;
      for (const auto& c : choices_) names.push_back(c.first);
      return cat("one of ", args_detail::join(names, ", "));
    } else {
      const char* kind = std::is_integral_v<Value> ? "integer" : "number";
      if (!has_range_) return kind;
      return cat(kind, " in [", show(min_), ", ", show(max_), "]");
    }
  }

  std::string default_text() const override {
    if constexpr (M::list) {
      return "";
    } else if constexpr (M::optional) {
      return member_ ? show_value(*member_) : unset_text_;
    } else {
      if (sentinel_ && member_ == *sentinel_) return unset_text_;
      return show_value(member_);
    }
  }

  std::string store(const std::string& text) override {
    Value v{};
    if (std::string why = read(text, v); !why.empty()) return why;
    if (check_)
      if (std::string why = check_(v); !why.empty()) return why;
    if constexpr (M::list) {
      if (!stored_) member_.clear();
      member_.push_back(std::move(v));
    } else {
      member_ = std::move(v);
    }
    stored_ = true;
    return "";
  }

 private:
  std::string read(const std::string& text, Value& out) const {
    if constexpr (std::is_same_v<Value, bool>) {
      out = args_detail::switch_value(text);
    } else if constexpr (std::is_integral_v<Value>) {
      long long x = 0;
      if (!args_detail::parse_integer(text, x)) return "is not an integer";
      if (x < min_ || x > max_) return cat("is out of range [", min_, ", ", max_, "]");
      out = static_cast<Value>(x * unit_);
    } else if constexpr (std::is_floating_point_v<Value>) {
      double x = 0;
      if (!args_detail::parse_number(text, x)) return "is not a number";
      if (x < min_ || x > max_) return cat("is out of range [", show(min_), ", ", show(max_), "]");
      out = static_cast<Value>(x);
    } else {
      for (const auto& c : choices_)
        if (c.first == text) {
          out = c.second;
          return "";
        }
      if constexpr (std::is_enum_v<Value>) {
        return cat("is not ", allowed());
      } else {
        if (!choices_.empty()) return cat("is not ", allowed());
        out = text;
      }
    }
    return "";
  }

  std::string show_value(const Value& v) const {
    if constexpr (std::is_same_v<Value, bool>) {
      return v ? "on" : "";
    } else if constexpr (std::is_integral_v<Value>) {
      return cat(static_cast<long long>(v / unit_));
    } else if constexpr (std::is_floating_point_v<Value>) {
      return args_detail::show_number(v);
    } else if constexpr (std::is_enum_v<Value>) {
      for (const auto& c : choices_)
        if (c.second == v) return c.first;
      return "?";
    } else {
      return v;
    }
  }

  static std::string show(Bound b) {
    if constexpr (std::is_floating_point_v<Bound>) return args_detail::show_number(b);
    else return cat(b);
  }

  // The declared range, times the unit, must fit the member.
  void check_fits() const {
    if constexpr (std::is_integral_v<Value> && !std::is_same_v<Value, bool>) {
      const long double lo = static_cast<long double>(min_) * unit_, hi = static_cast<long double>(max_) * unit_;
      if (lo < std::numeric_limits<Value>::lowest() || hi > std::numeric_limits<Value>::max() || unit_ < 1)
        throw Error(cat("internal: --", name_, "'s range (times its unit) does not fit its member"));
    }
  }

  T& member_;
  Bound min_{}, max_{};
  bool has_range_ = false;
  long long unit_ = 1;
  std::vector<std::pair<std::string, Value>> choices_;
  std::string unset_text_;
  std::optional<T> sentinel_;
  std::function<std::string(const Value&)> check_;
  bool stored_ = false;
};

class Args {
 public:
  Args(std::string command, std::string usage, std::string summary);
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  // Declares --name, stored in `member` (see the top of the file). A name
  // declared twice for one command is an internal error (qvl::Error).
  template <class T>
  TypedOption<T>& operator()(T& member, std::string name, std::string metavar, std::string help) {
    static_assert(!std::is_same_v<T, bool>, "a switch is declared without a metavar: v(member, name, help)");
    return add(std::make_unique<TypedOption<T>>(member, std::move(name), std::move(metavar), std::move(help)));
  }
  // A switch: true when given (or when its environment variable is set to
  // anything but "", 0, false, no, off).
  TypedOption<bool>& operator()(bool& member, std::string name, std::string help) {
    return add(std::make_unique<TypedOption<bool>>(member, std::move(name), "", std::move(help)));
  }

  // Parses argv[first..argc) and stores every option given there or in its
  // environment variable. Throws UsageError on an unknown flag, a missing or
  // refused value, or a repeated non-repeatable flag. Returns false when
  // --help (or --help-markdown) was asked for: the text is already on stdout.
  bool parse(int argc, char** argv, int first = 1);

  bool has(const std::string& name) const;  // given on the line or via its environment variable
  // The names of the options given on the line, one per occurrence, in
  // command-line order (e.g. how --image and --video files interleave).
  std::vector<std::string> given_order() const;
  const std::vector<std::string>& positional() const { return positional_; }

  std::string help() const;
  std::string markdown() const;  // | Option | Value | Default | Environment | Meaning |
  const std::vector<std::unique_ptr<Option>>& options() const { return options_; }

 private:
  template <class O>
  O& add(std::unique_ptr<O> option) {
    O& o = *option;
    declare(std::move(option));
    return o;
  }
  void declare(std::unique_ptr<Option> option);
  const Option* find(const std::string& name) const;
  void store(Option& option, const std::string& value, const std::string& from) const;

  std::string command_, usage_, summary_;
  std::vector<std::unique_ptr<Option>> options_;
  std::vector<std::pair<const Option*, std::string>> given_;  // in command-line order
  std::vector<std::string> positional_;
};

}  // namespace qvl
