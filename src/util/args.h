// Command-line flags. Each flag is declared once (name, value, default, help,
// environment variable) in a Flag list; parsing, --help and defaults all read
// that list (STYLE.md 7). Flag groups shared by several commands live in
// flags.h so `run`, `serve` and `bench` cannot drift apart.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace qvl {

struct Flag {
  std::string name;           // without the leading "--"
  std::string metavar;        // empty: a switch that takes no value
  std::string help;
  std::string default_value;  // shown in --help; returned by get() when unset
  std::string env;            // environment variable consulted when the flag is absent
  bool repeatable = false;    // may be given several times (--image A --image B)
};

class Args {
 public:
  Args(std::string command, std::string usage, std::string summary, std::vector<Flag> flags);

  // Parses argv[first..argc). Throws UsageError on an unknown flag, a missing
  // value, or a repeated non-repeatable flag. Returns false when --help was
  // asked for (help text already printed to stdout).
  bool parse(int argc, char** argv, int first = 1);

  bool has(const std::string& name) const;  // given on the line or via its env var
  std::string get(const std::string& name) const;  // value, env, or default
  std::vector<std::string> all(const std::string& name) const;
  bool on(const std::string& name) const;  // a switch
  long get_int(const std::string& name, long min, long max) const;
  double get_double(const std::string& name, double min, double max) const;
  const std::vector<std::string>& positional() const { return positional_; }

  std::string help() const;

 private:
  const Flag& find(const std::string& name) const;
  std::string command_, usage_, summary_;
  std::vector<Flag> flags_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

// Concatenates flag groups.
std::vector<Flag> join(std::vector<std::vector<Flag>> groups);

}  // namespace qvl
