// make_random_model: writes a Qwen3-VL model folder with deterministic random
// bf16 weights in the exact tensor names and shapes of a config (default: the
// real Qwen3-VL-2B-Instruct), so speed is measured without the real checkpoint.
//
//   make_random_model --out /tmp/qwen3vl-2b-random
//   make_random_model --out DIR --config other/config.json --untied --seed 7
//   make_random_model --out /tmp/qwen3vl-8b-random --size 8b
//   make_random_model --out /tmp/qwen3vl-2b-fp8 --fp8
//   make_random_model --out /tmp/qwen3vl-30b-a3b-4l --size 30b-a3b --layers 4
#include <climits>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "io/random_model.h"
#include "util/args.h"
#include "util/error.h"
#include "util/mapped_file.h"

namespace {

namespace fs = std::filesystem;

// A folder of tests/fixtures (the tokenizer files to copy, the family's
// configs): relative to the working directory (the source tree) or to this
// executable (build-*/ inside it).
std::string fixture_dir(const char* argv0, const std::string& name) {
  const fs::path rel = fs::path("tests") / "fixtures" / name;
  std::error_code ec;
  if (fs::is_directory(rel, ec)) return rel.string();
  fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (ec) exe = fs::absolute(argv0, ec);
  for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path())
    if (fs::is_directory(p / rel, ec)) return (p / rel).string();
  return rel.string();
}

int run(int argc, char** argv) {
  qvl::Args args("make_random_model", "--out DIR [options]",
                 "Write a Qwen3-VL folder with random bf16 weights in the shapes of a config.");
  std::string out, config_path;
  qvl::RandomModelOptions opt;
  opt.like_dir = fixture_dir(argv[0], "tiny-qwen3vl");
  args(out, "out", "DIR", "folder to write (created if needed)");
  args(config_path, "config", "FILE", "config.json to take the shapes from").unset("Qwen3-VL-2B-Instruct's");
  std::string size;
  args(size, "size", "NAME", "a family member's real shapes (tests/fixtures/configs): instead of --config")
      .choices({"2b", "4b", "8b", "32b", "30b-a3b"});
  args(opt.like_dir, "like", "DIR", "copy tokenizer/template/preprocessor/generation files from this folder");
  args(opt.untied, "untied", "untie the embeddings: write lm_head.weight");
  args(opt.fp8, "fp8",
       "an FP8 folder as Qwen's -FP8 releases: text linears F8_E4M3 with 128x128 block scales, a quantization_config");
  args(opt.text_layers, "layers", "N",
       "keep only the first N text layers (real widths, whole vision tower; N at least the 3 DeepStack\n"
       "features): a model too big for the machine measured per layer")
      .range(1, 1000);
  args(opt.seed, "seed", "N", "random seed").range(0, LONG_MAX);
  args(opt.threads, "threads", "N", "generator threads (0: every core)").range(0, 1024);
  if (!args.parse(argc, argv)) return 0;
  if (!args.has("out")) throw qvl::UsageError("make_random_model: --out DIR is required");
  if (args.has("config") && args.has("size")) throw qvl::UsageError("make_random_model: give --config or --size, not both");
  if (args.has("size") && size != "2b")
    config_path = (fs::path(fixture_dir(argv[0], "configs")) / ("qwen3-vl-" + size) / "config.json").string();
  const std::string config = !config_path.empty() ? qvl::read_file(config_path) : qvl::qwen3vl_2b_config_json();

  qvl::RandomModelStats s = qvl::make_random_model(out, config, opt);
  nlohmann::ordered_json j = {{"out", out},
                              {"tensors", s.tensors},
                              {"parameters", s.parameters},
                              {"bytes", s.file_bytes},
                              {"seconds", s.seconds},
                              {"gb_per_s", s.seconds > 0 ? s.file_bytes / s.seconds / 1e9 : 0.0}};
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const qvl::UsageError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "make_random_model: " << e.what() << "\n";
    return 1;
  }
}
