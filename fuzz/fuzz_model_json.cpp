// libFuzzer target: the model folder's JSON files as qvl reads them. The
// first byte picks which file the rest replaces in a copy of the tiny
// fixture model (the other files are links to the fixture's), then the folder
// is opened with ModelFolder::open as `qvl info` / `qvl serve` do:
//   0 config.json   1 preprocessor_config.json   2 generation_config.json
//   3 chat_template.json   4 tokenizer_config.json (no chat_template.json beside it)
//   5 tokenizer.json, parsed by Tokenizer::from_json
// Only success or a qvl::Error is allowed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_scratch.h"
#include "io/model_config.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace {

constexpr const char* kFiles[] = {"config.json", "preprocessor_config.json", "generation_config.json",
                                  "chat_template.json", "tokenizer_config.json"};

// A folder of links to the fixture's files, without `except`.
fs::path linked_folder(const std::string& name, const std::string& except) {
  const fs::path fixture = fs::path(QVL_SOURCE_DIR) / "tests/fixtures/tiny-qwen3vl";
  const fs::path dir = qvl::fuzz::scratch_dir() / name;
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(fixture))
    if (e.path().filename() != except) fs::create_symlink(e.path(), dir / e.path().filename());
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const fs::path with_template = linked_folder("with_template", "");
  static const fs::path without_template = linked_folder("without_template", "chat_template.json");
  const unsigned which = data[0] % 6;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (which == 5) {
      qvl::Tokenizer::from_json(text, "tokenizer.json");
      return 0;
    }
    const fs::path& dir = which == 4 ? without_template : with_template;
    const fs::path file = dir / kFiles[which];
    fs::remove(file);
    qvl::fuzz::write_file(file, text.data(), text.size());
    qvl::ModelFolder::open(dir.string());
  } catch (const qvl::Error&) {
  }
  return 0;
}
