// `qvl info` through the binary: the summary of the fixture folder (text and
// --json) agrees with the checkpoint itself, and a bad folder is one line on
// stderr with exit code 1.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/random_model.h"
#include "io/safetensors.h"
#include "run_qvl.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

using json = nlohmann::json;
using test::run_qvl;
namespace fs = std::filesystem;

const std::string kTiny = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";

class ScratchDir {
 public:
  ScratchDir() {
    std::string t = (fs::temp_directory_path() / "qvl_info_test_XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& n) const { return (fs::path(path_) / n).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The fixture folder with big files linked, to mutate.
void copy_fixture(const std::string& to) {
  for (const auto& e : fs::directory_iterator(kTiny)) {
    fs::path dst = fs::path(to) / e.path().filename();
    if (fs::file_size(e.path()) > (1 << 20))
      fs::create_symlink(e.path(), dst);
    else
      fs::copy_file(e.path(), dst);
  }
}

void expect_one_line_failure(const test::QvlResult& r, const std::vector<std::string>& needles) {
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "'" << n << "' not in: " << r.err;
}

TEST(InfoCli, TextSummaryOfFixture) {
  auto r = run_qvl({"info", "--model", kTiny});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"Qwen3VLForConditionalGeneration", "qwen3_vl", "transformers 4.57", "vision 1.29 M", "text 9.97 M",
                        "BF16", "145 tensors", "22547080 bytes", "1 token per 32x32 pixels", "64 to 16384 tokens",
                        "262144 tokens", "4 layers, hidden 64", "4 query / 2 key-value, head dim 32", "theta 5000000",
                        "[8, 4, 4]", "6 blocks, hidden 96", "8x8 position grid", "vision layers [1, 3, 4]",
                        "tied to the input embeddings", "[151645, 151643]", "chat_template.json"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(InfoCli, JsonMatchesTheCheckpoint) {
  auto r = run_qvl({"info", "--model", kTiny, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  SafeTensors st = SafeTensors::open(kTiny + "/model.safetensors");
  int64_t vision = 0, text = 0;
  for (const auto& [name, v] : st.tensors()) (name.rfind("model.visual.", 0) == 0 ? vision : text) += v.numel();
  EXPECT_EQ(j["parameters"]["vision"], vision);
  EXPECT_EQ(j["parameters"]["text"], text);
  EXPECT_EQ(j["parameters"]["total"], vision + text);
  EXPECT_EQ(j["dtypes"], json::array({"BF16"}));
  EXPECT_EQ(j["tensors"], 145);
  EXPECT_EQ(j["weight_bytes"], fs::file_size(kTiny + "/model.safetensors"));
  EXPECT_EQ(j["context_length"], 262144);
  EXPECT_EQ(j["config_dialect"], "transformers 4.57");
  EXPECT_EQ(j["image"]["pixels_per_token_side"], 32);
  EXPECT_EQ(j["image"]["min_pixels"], 65536);
  EXPECT_EQ(j["image"]["max_tokens"], 16384);
  EXPECT_EQ(j["text"]["num_hidden_layers"], 4);
  EXPECT_EQ(j["text"]["num_key_value_heads"], 2);
  EXPECT_EQ(j["text"]["head_dim"], 32);
  EXPECT_EQ(j["text"]["mrope_section"], json::array({8, 4, 4}));
  EXPECT_EQ(j["vision"]["depth"], 6);
  EXPECT_EQ(j["deepstack_visual_indexes"], json::array({1, 3, 4}));
  EXPECT_EQ(j["lm_head"], "tied");
  EXPECT_EQ(j["token_ids"]["image"], 151655);
  EXPECT_TRUE(j["unused_tensors"].empty());
}

// An FP8 folder: the quantization shown, scales not counted as parameters
// (the same counts as the bf16 model it was made from), q8 the default.
TEST(InfoCli, Fp8FolderShowsItsQuantization) {
  const std::string fp8 = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-fp8";
  auto r = run_qvl({"info", "--model", fp8, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  json dense = json::parse(run_qvl({"info", "--model", kTiny, "--json"}).out);
  EXPECT_EQ(j["parameters"], dense["parameters"]);
  EXPECT_EQ(j["dtypes"], json::array({"BF16", "F8_E4M3"}));
  EXPECT_TRUE(j["unused_tensors"].empty());
  EXPECT_EQ(j["default_weights"], "q8");
  EXPECT_EQ(dense["default_weights"], "bf16");
  EXPECT_EQ(dense["quantization"], nullptr);
  const json& q = j["quantization"];
  EXPECT_EQ(q["quant_method"], "fp8");
  EXPECT_EQ(q["weight_block_size"], json::array({128, 128}));
  EXPECT_EQ(q["quantized_tensors"], 28);
  EXPECT_EQ(q["scale_dtypes"], json::array({"BF16"}));
  r = run_qvl({"info", "--model", fp8});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("quantization  FP8 E4M3 (quant_method fp8, activations dynamic), 128x128 block scales (BF16); "
                       "28 weight tensors quantized"),
            std::string::npos)
      << r.out;
  // The MoE with FP8 experts stored one by one: all expected, none unused.
  const std::string moe = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-moe-fp8";
  j = json::parse(run_qvl({"info", "--model", moe, "--json"}).out);
  json fused = json::parse(run_qvl({"info", "--model", std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-moe", "--json"}).out);
  EXPECT_EQ(j["parameters"], fused["parameters"]);
  EXPECT_TRUE(j["unused_tensors"].empty()) << j["unused_tensors"].dump();
  EXPECT_EQ(j["quantization"]["experts"], "per_expert");
  EXPECT_EQ(j["quantization"]["quantized_tensors"], 4 * 8 * 3);
  EXPECT_EQ(j["quantization"]["scale_dtypes"], json::array({"BF16", "F16", "F32"}));
}

TEST(InfoCli, UntiedTransformers5Folder) {
  ScratchDir dir;
  RandomModelOptions opt;
  opt.like_dir = kTiny;
  opt.untied = true;
  json c = json::parse(read_file(kTiny + "/config.json"));
  json& t = c["text_config"];
  t["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}, {"mrope_section", {8, 4, 4}}, {"mrope_interleaved", true}};
  t.erase("rope_scaling");
  t.erase("rope_theta");
  make_random_model(dir.path(), c.dump(), opt);
  auto r = run_qvl({"info", "--model", dir.path(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["lm_head"], "untied");
  EXPECT_EQ(j["config_dialect"], "transformers 5");
  EXPECT_EQ(j["text"]["rope_theta"], 1e6);
  EXPECT_EQ(j["tensors"], 146);
  // lm_head.weight [151936, 64] counts as text.
  SafeTensors st = SafeTensors::open(kTiny + "/model.safetensors");
  int64_t fixture_text = 0;
  for (const auto& [name, v] : st.tensors())
    if (name.rfind("model.visual.", 0) != 0) fixture_text += v.numel();
  EXPECT_EQ(j["parameters"]["text"], fixture_text + 151936 * 64);
}

// A folder holding only config.json (the family's real configs): parameters,
// layers, bytes per format and the default format come from config.json
// alone, and agree with what a folder with weights reports.
TEST(InfoCli, ConfigOnlyFoldersOfTheFamily) {
  struct Member {
    const char* size;
    int layers;
    int64_t experts;
  };
  for (const Member& m : {Member{"4b", 36, 0}, Member{"8b", 36, 0}, Member{"32b", 64, 0}, Member{"30b-a3b", 48, 128}}) {
    SCOPED_TRACE(m.size);
    ScratchDir dir;
    fs::copy_file(std::string(QVL_FIXTURES_DIR) + "/configs/qwen3-vl-" + m.size + "/config.json", dir / "config.json");
    // A machine of 24 GB, this one's size, so the default is the same everywhere.
    auto r = run_qvl({"info", "--model", dir.path(), "--json"}, {{"QVL_MEMORY_BYTES", "25769803776"}});
    ASSERT_EQ(r.code, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_FALSE(j["has_weights"]);
    EXPECT_EQ(j["text"]["num_hidden_layers"], m.layers);
    EXPECT_EQ(j["weight_files"], json::array());
    EXPECT_EQ(j["image"], nullptr);
    const int64_t total = j["parameters"]["total"], text = j["parameters"]["text"],
                  active = j["parameters"]["text_active_per_token"];
    EXPECT_EQ(total, j["parameters"]["vision"].get<int64_t>() + text);
    const uint64_t bf16 = j["formats"]["bf16"]["matrix_bytes"], q8 = j["formats"]["q8"]["matrix_bytes"],
                   q4 = j["formats"]["q4"]["matrix_bytes"];
    // q8 is 34 and q4 18 bytes per 32 weights, against 64 of bf16; the
    // router (MoE) stays bf16.
    EXPECT_NEAR(double(q8) / bf16, 34.0 / 64, 0.01);
    EXPECT_NEAR(double(q4) / bf16, 18.0 / 64, 0.01);
    const uint64_t checkpoint = j["checkpoint_bytes_from_config"];
    EXPECT_EQ(checkpoint, uint64_t(total) * 2);
    // The default rule (docs/weights.md): bf16 if the checkpoint fits half
    // the memory, else q8 if that does, else q4: 4B bf16, 8B q8, 32B and
    // 30B-A3B q4 on 24 GB.
    const char* want = checkpoint <= 12884901888ull ? "bf16" : checkpoint / 64 * 34 <= 12884901888ull ? "q8" : "q4";
    EXPECT_EQ(j["default_weights"], want);
    EXPECT_EQ(j["default_weights"], std::string(m.size) == "4b" ? "bf16" : std::string(m.size) == "8b" ? "q8" : "q4");
    if (m.experts) {
      EXPECT_EQ(j["experts"]["num_experts"], m.experts);
      EXPECT_LT(active * 8, text);  // ~3.3B of 30.5B
      EXPECT_LT(j["formats"]["q4"]["decode_bytes"].get<uint64_t>() * 5, q4);
    } else {
      EXPECT_EQ(active, text);
    }
    r = run_qvl({"info", "--model", dir.path()}, {{"QVL_MEMORY_BYTES", "25769803776"}});
    ASSERT_EQ(r.code, 0) << r.err;
    const std::string default_row = std::string("default       ") + want + " on this machine";
    for (const std::string& s : {std::string("none in the folder (config.json only)"),
                                 std::string("from config.json's shapes"), std::string("formats"),
                                 std::string("q4: matrices"), std::string("a decode step reads"), default_row})
      EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    EXPECT_EQ(r.out.find("image tokens"), std::string::npos);
  }
  // The tiny fixture's config alone gives the counts and bytes its folder
  // with weights gives.
  ScratchDir dir;
  fs::copy_file(kTiny + "/config.json", dir / "config.json");
  fs::copy_file(kTiny + "/preprocessor_config.json", dir / "preprocessor_config.json");
  json alone = json::parse(run_qvl({"info", "--model", dir.path(), "--json"}).out);
  json full = json::parse(run_qvl({"info", "--model", kTiny, "--json"}).out);
  EXPECT_EQ(alone["parameters"], full["parameters"]);
  EXPECT_EQ(alone["formats"], full["formats"]);
  EXPECT_EQ(alone["tensors"], full["tensors"]);
  EXPECT_EQ(alone["checkpoint_bytes_from_config"], full["checkpoint_bytes_from_config"]);
  EXPECT_EQ(alone["image"], full["image"]);
  EXPECT_TRUE(full["has_weights"]);
}

TEST(InfoCli, BadFoldersFailWithOneLine) {
  expect_one_line_failure(run_qvl({"info", "--model", "/nonexistent/qvl-model-dir"}), {"/nonexistent/qvl-model-dir"});
  {
    ScratchDir dir;
    copy_fixture(dir.path());
    fs::remove(dir / "config.json");
    expect_one_line_failure(run_qvl({"info", "--model", dir.path()}), {"config.json", "missing"});
  }
  {
    ScratchDir dir;
    copy_fixture(dir.path());
    std::ofstream(dir / "config.json") << "{\"model_type\": \"qwen2_5_vl\"}";
    expect_one_line_failure(run_qvl({"info", "--model", dir.path()}), {"config.json", "qwen2_5_vl"});
  }
  {
    ScratchDir dir;  // a truncated checkpoint
    copy_fixture(dir.path());
    fs::remove(dir / "model.safetensors");
    fs::copy_file(kTiny + "/model.safetensors", dir / "model.safetensors");
    fs::resize_file(dir / "model.safetensors", 1 << 20);
    expect_one_line_failure(run_qvl({"info", "--model", dir.path()}), {"model.safetensors", "tensor '", "truncated"});
  }
  {
    ScratchDir dir;  // config.json implies a fifth layer the checkpoint lacks
    copy_fixture(dir.path());
    json c = json::parse(read_file(kTiny + "/config.json"));
    c["text_config"]["num_hidden_layers"] = 5;
    std::ofstream(dir / "config.json") << c.dump();
    expect_one_line_failure(run_qvl({"info", "--model", dir.path()}), {"model.language_model.layers.4.", "missing"});
  }
  {
    ScratchDir dir;  // untied in config.json, but no lm_head.weight
    copy_fixture(dir.path());
    json c = json::parse(read_file(kTiny + "/config.json"));
    c["tie_word_embeddings"] = false;
    c["text_config"]["tie_word_embeddings"] = false;
    std::ofstream(dir / "config.json") << c.dump();
    expect_one_line_failure(run_qvl({"info", "--model", dir.path()}), {"lm_head.weight", "missing"});
  }
  {
    ScratchDir dir;  // a mis-shaped tensor
    copy_fixture(dir.path());
    json c = json::parse(read_file(kTiny + "/config.json"));
    c["text_config"]["intermediate_size"] = 128;
    std::ofstream(dir / "config.json") << c.dump();
    expect_one_line_failure(run_qvl({"info", "--model", dir.path()}), {"mlp.down_proj.weight", "[64,192]", "[64,128]"});
  }
}

TEST(InfoCli, UsageErrors) {
  EXPECT_EQ(run_qvl({"info"}).code, 2);
  EXPECT_EQ(run_qvl({"info", "--model", kTiny, "--frobnicate"}).code, 2);
  auto help = run_qvl({"info", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--json"), std::string::npos);
}

}  // namespace
}  // namespace qvl
