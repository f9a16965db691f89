// A Thinking model folder for tests: the tiny fixture model's files (linked,
// not copied) with tests/fixtures/templates/qwen3vl_thinking_chat_template.json
// as its chat_template.json, as a Qwen3-VL-*-Thinking folder differs from
// its Instruct twin. One folder per process under `parent` (CTest runs each
// test in a process of its own, several at once).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>

namespace qvl::test {

inline std::string make_thinking_model(const std::string& fixtures, const std::filesystem::path& parent) {
  namespace fs = std::filesystem;
  const fs::path dir = parent / ("qvl_tiny_thinking_model_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(fixtures + "/tiny-qwen3vl")) {
    const fs::path dst = dir / e.path().filename();
    fs::remove(dst);
    if (e.path().filename() != "chat_template.json") fs::create_symlink(fs::absolute(e.path()), dst);
  }
  fs::copy_file(fixtures + "/templates/qwen3vl_thinking_chat_template.json", dir / "chat_template.json");
  return dir.string();
}

}  // namespace qvl::test
