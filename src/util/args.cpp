#include "util/args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace qvl {
namespace args_detail {

bool parse_integer(const std::string& text, long long& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtoll(text.c_str(), &end, 10);
  return *end == '\0' && errno != ERANGE;
}

bool parse_number(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return *end == '\0' && errno != ERANGE && std::isfinite(out);
}

bool switch_value(const std::string& text) {
  return !(text.empty() || text == "0" || text == "false" || text == "no" || text == "off");
}

std::string show_number(double x) {
  std::ostringstream out;
  out.precision(15);  // 1e7 as 10000000, 0.1 as 0.1
  out << x;
  return out.str();
}

std::string join(const std::vector<std::string>& words, const char* separator) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i) out += separator;
    out += words[i];
  }
  return out;
}

}  // namespace args_detail

namespace {

// A value as an error message shows it: quoted when it would not read as one word.
std::string shown(const std::string& value) {
  if (!value.empty() && value.find_first_of(" \t\n'") == std::string::npos) return value;
  return cat("'", value, "'");
}

// `text` in lines of at most `width` columns, each after `indent` spaces but
// the first (which continues a line already `indent` wide).
std::string wrap(const std::string& text, size_t indent, size_t width) {
  std::string out, word;
  size_t column = indent;
  std::istringstream words(text);
  bool first = true;
  while (words >> word) {
    if (!first && column + 1 + word.size() > width) {
      out += '\n';
      out.append(indent, ' ');
      column = indent;
    } else if (!first) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    first = false;
  }
  return out;
}

// What --help says about an option besides its help: kind and range, default,
// environment variable, repeatable.
std::string details(const Option& o) {
  std::vector<std::string> parts;
  if (!o.allowed().empty()) parts.push_back(o.allowed());
  if (!o.default_text().empty()) parts.push_back(cat("default: ", o.default_text()));
  if (!o.env_var().empty()) parts.push_back(cat("env ", o.env_var()));
  if (o.repeatable()) parts.push_back("repeatable");
  return args_detail::join(parts, "; ");
}

// "--ctx-size N", "--offline".
std::string flag_text(const Option& o) {
  return o.is_switch() ? cat("--", o.name()) : cat("--", o.name(), " ", o.metavar());
}

std::string cell(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

constexpr size_t kHelpColumn = 32, kHelpWidth = 100;

}  // namespace

Args::Args(std::string command, std::string usage, std::string summary)
    : command_(std::move(command)), usage_(std::move(usage)), summary_(std::move(summary)) {}

void Args::declare(std::unique_ptr<Option> option) {
  if (option->name() == "help" || option->name() == "help-markdown" || find(option->name()))
    throw Error(cat("internal: --", option->name(), " is declared twice for ", command_));
  options_.push_back(std::move(option));
}

const Option* Args::find(const std::string& name) const {
  for (const auto& o : options_)
    if (o->name() == name) return o.get();
  return nullptr;
}

void Args::store(Option& option, const std::string& value, const std::string& from) const {
  if (std::string why = option.store(value); !why.empty())
    throw UsageError(cat(command_, ": --", option.name(), ": ", shown(value), from, " ", why));
}

bool Args::parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) positional_.push_back(argv[i]);
      break;
    }
    if (arg.rfind("--", 0) != 0) {
      if (arg.size() > 1 && arg[0] == '-')
        throw UsageError(cat(command_, ": unknown option '", arg, "' (see qvl ", command_, " --help)"));
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    bool inline_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "help" || name == "help-markdown") {
      if (inline_value) throw UsageError(cat(command_, ": option '--", name, "' takes no value"));
      std::cout << (name == "help" ? help() : markdown());
      return false;
    }
    const Option* option = find(name);
    if (!option) throw UsageError(cat(command_, ": unknown option '--", name, "' (see qvl ", command_, " --help)"));
    if (option->is_switch()) {
      if (inline_value) throw UsageError(cat(command_, ": option '--", name, "' takes no value"));
      value.assign(1, '1');  // "1" (assigning the literal trips a GCC 12 -Wrestrict false positive)
    } else if (!inline_value) {
      if (i + 1 >= argc)
        throw UsageError(cat(command_, ": option '--", name, "' needs a value (", option->metavar(), ")"));
      value = argv[++i];
    }
    if (!option->repeatable())
      for (const auto& g : given_)
        if (g.first == option) throw UsageError(cat(command_, ": option '--", name, "' given more than once"));
    given_.emplace_back(option, value);
  }
  // Stored after the whole line is read, so --help anywhere wins over a bad value.
  for (const auto& o : options_) {
    bool on_line = false;
    for (const auto& g : given_)
      if (g.first == o.get()) {
        store(*o, g.second, "");
        on_line = true;
      }
    if (!on_line && !o->env_var().empty())
      if (const char* v = std::getenv(o->env_var().c_str())) store(*o, v, cat(" (from ", o->env_var(), ")"));
  }
  return true;
}

bool Args::has(const std::string& name) const {
  const Option* o = find(name);
  if (!o) throw Error(cat("internal: flag --", name, " is not declared for ", command_));
  for (const auto& g : given_)
    if (g.first == o) return true;
  return !o->env_var().empty() && std::getenv(o->env_var().c_str()) != nullptr;
}

std::vector<std::string> Args::given_order() const {
  std::vector<std::string> names;
  names.reserve(given_.size());
  for (const auto& g : given_) names.push_back(g.first->name());
  return names;
}

std::string Args::help() const {
  std::ostringstream out;
  out << "usage: qvl " << command_ << " " << usage_ << "\n\n" << summary_ << "\n\noptions:\n";
  auto entry = [&](const std::string& left, const std::string& help, const std::string& more) {
    out << left << std::string(left.size() < kHelpColumn ? kHelpColumn - left.size() : 1, ' ')
        << wrap(help, kHelpColumn, kHelpWidth) << "\n";
    if (!more.empty()) out << std::string(kHelpColumn, ' ') << wrap(more, kHelpColumn, kHelpWidth) << "\n";
  };
  for (const auto& o : options_) entry(cat("  ", flag_text(*o)), o->help(), details(*o));
  entry("  --help", "show this help and exit", "");
  return out.str();
}

std::string Args::markdown() const {
  std::ostringstream out;
  out << "| Option | Value | Default | Environment | Meaning |\n|---|---|---|---|---|\n";
  for (const auto& o : options_) {
    std::string value = o->is_switch() ? "switch" : o->allowed();
    if (o->repeatable()) value += ", repeatable";
    out << "| " << cell(cat("`", flag_text(*o), "`")) << " | " << cell(value) << " | " << cell(o->default_text())
        << " | " << (o->env_var().empty() ? "" : cat("`", o->env_var(), "`")) << " | " << cell(o->help()) << " |\n";
  }
  return out.str();
}

}  // namespace qvl
