// A Thinking model folder for tests: the tiny fixture model (weights linked,
// not copied) with tests/fixtures/templates/qwen3vl_thinking_chat_template.json
// as its chat_template.json, as a Qwen3-VL-*-Thinking folder differs from
// its Instruct twin. Built once per process under `parent`.
#pragma once

#include <filesystem>
#include <string>

namespace qvl::test {

inline std::string make_thinking_model(const std::string& fixtures, const std::filesystem::path& parent) {
  namespace fs = std::filesystem;
  const fs::path dir = parent / "qvl_tiny_thinking_model";
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(fixtures + "/tiny-qwen3vl")) {
    const fs::path dst = dir / e.path().filename();
    fs::remove(dst);
    if (e.path().filename() == "model.safetensors") fs::create_symlink(fs::absolute(e.path()), dst);
    else if (e.path().filename() != "chat_template.json") fs::copy_file(e.path(), dst);
  }
  fs::remove(dir / "chat_template.json");
  fs::copy_file(fixtures + "/templates/qwen3vl_thinking_chat_template.json", dir / "chat_template.json");
  return dir.string();
}

}  // namespace qvl::test
