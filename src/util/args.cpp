#include "util/args.h"

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "util/error.h"

namespace qvl {

Args::Args(std::string command, std::string usage, std::string summary, std::vector<Flag> flags)
    : command_(std::move(command)),
      usage_(std::move(usage)),
      summary_(std::move(summary)),
      flags_(std::move(flags)) {
  flags_.push_back({"help", "", "show this help and exit"});
}

const Flag& Args::find(const std::string& name) const {
  for (const Flag& f : flags_)
    if (f.name == name) return f;
  throw Error(cat("internal: flag --", name, " is not declared for ", command_));
}

bool Args::parse(int argc, char** argv, int first) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (arg == "--") {
        for (++i; i < argc; ++i) positional_.push_back(argv[i]);
        break;
      }
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
    const Flag* flag = nullptr;
    for (const Flag& f : flags_)
      if (f.name == name) flag = &f;
    if (!flag) throw UsageError(cat(command_, ": unknown option '--", name, "' (see qvl ", command_, " --help)"));
    if (name == "help") {
      std::cout << help();
      return false;
    }
    if (flag->metavar.empty()) {
      if (inline_value) throw UsageError(cat(command_, ": option '--", name, "' takes no value"));
      value = "1";
    } else if (!inline_value) {
      if (i + 1 >= argc) throw UsageError(cat(command_, ": option '--", name, "' needs a value (", flag->metavar, ")"));
      value = argv[++i];
    }
    auto& slot = values_[name];
    if (!slot.empty() && !flag->repeatable)
      throw UsageError(cat(command_, ": option '--", name, "' given more than once"));
    slot.push_back(value);
  }
  return true;
}

bool Args::has(const std::string& name) const {
  const Flag& f = find(name);
  if (values_.count(name)) return true;
  return !f.env.empty() && std::getenv(f.env.c_str()) != nullptr;
}

std::string Args::get(const std::string& name) const {
  const Flag& f = find(name);
  if (auto it = values_.find(name); it != values_.end()) return it->second.back();
  if (!f.env.empty())
    if (const char* v = std::getenv(f.env.c_str())) return v;
  return f.default_value;
}

std::vector<std::string> Args::all(const std::string& name) const {
  find(name);
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

bool Args::on(const std::string& name) const {
  if (!has(name)) return false;
  std::string v = get(name);
  return !(v == "0" || v == "false" || v == "no" || v == "off" || v.empty());
}

long Args::get_int(const std::string& name, long min, long max) const {
  std::string v = get(name);
  char* end = nullptr;
  errno = 0;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError(cat(command_, ": --", name, " expects an integer, got '", v, "'"));
  if (x < min || x > max)
    throw UsageError(cat(command_, ": --", name, " must be in [", min, ", ", max, "], got ", x));
  return x;
}

double Args::get_double(const std::string& name, double min, double max) const {
  std::string v = get(name);
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || x != x)
    throw UsageError(cat(command_, ": --", name, " expects a number, got '", v, "'"));
  if (x < min || x > max)
    throw UsageError(cat(command_, ": --", name, " must be in [", min, ", ", max, "], got ", x));
  return x;
}

std::string Args::help() const {
  std::ostringstream out;
  out << "usage: qvl " << command_ << " " << usage_ << "\n\n" << summary_ << "\n\noptions:\n";
  for (const Flag& f : flags_) {
    std::string left = "  --" + f.name + (f.metavar.empty() ? "" : " " + f.metavar);
    out << left;
    out << std::string(left.size() < 30 ? 30 - left.size() : 1, ' ') << f.help;
    if (!f.default_value.empty()) out << " (default: " << f.default_value << ")";
    if (!f.env.empty()) out << " [env " << f.env << "]";
    if (f.repeatable) out << " (repeatable)";
    out << "\n";
  }
  return out.str();
}

std::vector<Flag> join(std::vector<std::vector<Flag>> groups) {
  std::vector<Flag> out;
  for (auto& g : groups)
    for (auto& f : g) out.push_back(std::move(f));
  return out;
}

}  // namespace qvl
