// The fixture tokenizer, loaded once per test binary (parsing its 11 MB of
// JSON is the slowest step of the suite).
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tokenizer/tokenizer.h"

namespace qvl::test {

inline std::string fixture_path(const std::string& rel) { return std::string(QVL_FIXTURES_DIR) + "/" + rel; }

// tests/tokenizer/data, found beside this header (CMake compiles with
// absolute source paths).
inline std::string data_path(const std::string& name) {
  return (std::filesystem::path(__FILE__).parent_path() / "data" / name).string();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline const Tokenizer& fixture_tokenizer() {
  static const Tokenizer tok = Tokenizer::load(fixture_path("tiny-qwen3vl/tokenizer.json"));
  return tok;
}

inline const nlohmann::json& tokenizer_cases() {
  static const nlohmann::json j = nlohmann::json::parse(read_file(fixture_path("tokenizer/cases.json")));
  return j;
}

}  // namespace qvl::test
