// The int8 vision attention (ops/int8_attention.h: Q·Kᵀ and P·V in int8)
// at model level. The fixture's vision heads are 24 wide, which that kernel
// does not tile, so the same weights are read here as 3 heads of 32 (config
// num_heads 4 -> 3):
// the q8 model's vision output against the f32 model's (f32 attention) must
// stay as close as the q8 model of the unchanged fixture, whose attention
// stays f32, is to its own f32 reference: the int8 products add little to
// what the 8-bit weights already cost (0.02161 against 0.02058 measured;
// 0.02156 with P·V in bf16). Where AMX runs attention (ops/attention.cpp
// prefers it), the vision call takes the AMX bf16 kernel instead, and the same
// bound holds it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "tiny_model.h"
#include "model/model.h"
#include "ops/int8_attention.h"
#include "ops/ops.h"

namespace qvl {
namespace {

namespace fs = std::filesystem;

// A copy of the fixture folder (links to its files) whose config.json gives
// the vision tower `heads` heads.
fs::path with_vision_heads(int heads) {
  const fs::path dir = fs::temp_directory_path() / ("qvl-int8-vision-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(golden::model_dir())) {
    if (e.path().filename() == "config.json") continue;
    fs::create_symlink(fs::absolute(e.path()), dir / e.path().filename());
  }
  nlohmann::json config = nlohmann::json::parse(std::ifstream(fs::path(golden::model_dir()) / "config.json"));
  config["vision_config"]["num_heads"] = heads;
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir;
}

std::unique_ptr<Model> load(const fs::path& dir, WeightFormat format) {
  ModelLoadOptions o;
  o.format = format;
  return Model::load(dir.string(), o, golden::pool());
}

// rel_rms of the q8 model's merger output against the f32 model's.
double q8_vision_error(const fs::path& dir, const VisionInput& in) {
  const VisionFeatures want = load(dir, WeightFormat::F32)->vision().encode({&in, 1}, golden::pool());
  const VisionFeatures got = load(dir, WeightFormat::Q8)->vision().encode({&in, 1}, golden::pool());
  return golden::rel_rms(got.embeds.data(), want.embeds);
}

TEST(Int8VisionAttention, AddsLittleToTheQ8VisionError) {
  if (!int8dot::attention_usable()) GTEST_SKIP() << "no AVX512-VNNI with AVX512-BF16 on this CPU";
  const golden::File& f = golden::file("vision_gradient_320x240.safetensors");
  const VisionInput in{f["pixel_values"].f.data(), golden::grids_of(f["image_grid_thw"])[0]};
  const fs::path dir = with_vision_heads(3);
  AttentionParams p;  // a vision call of the 3-head reading
  p.nq = p.nkv = 300, p.q_heads = p.kv_heads = 3, p.head_dim = 32;
  p.q_stride = p.kv_stride = p.out_stride = 96, p.scale = 0.17f, p.precision = MatmulPrecision::Fast;
  const bool amx = std::string(attention_amx_status()) == "used";
  ASSERT_NE(std::string(attention_kernel_name(p)).find(amx ? "AMX" : "vpdpbusd"), std::string::npos)
      << attention_kernel_name(p);
  const double int8_attention = q8_vision_error(dir, in);
  const double f32_attention = q8_vision_error(golden::model_dir(), in);
  fs::remove_all(dir);
  std::printf("q8 vision merger relative rms error: %s attention %.5f, f32 attention %.5f\n",
              amx ? "AMX bf16" : "int8", int8_attention, f32_attention);
  EXPECT_LT(int8_attention, 1.5 * f32_attention + 0.002);
}

}  // namespace
}  // namespace qvl
