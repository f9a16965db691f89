// The Hugging Face checkpoint layout derived from a config, and the random
// model generator (tools/make_random_model's logic): the result must load and
// match the fixture checkpoint's tensor names, shapes and dtypes exactly.
#include "io/random_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/checkpoint_layout.h"
#include "io/model_config.h"
#include "io/safetensors.h"
#include "io_test_util.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

using json = nlohmann::json;
using test::TempDir;
namespace fs = std::filesystem;

const std::string kTiny = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";

std::map<std::string, std::vector<int64_t>> shapes_of(const SafeTensors& st) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& [name, v] : st.tensors()) out[name] = v.shape;
  return out;
}

std::map<std::string, std::vector<int64_t>> shapes_of(const std::vector<TensorInfo>& infos) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const TensorInfo& t : infos) out[t.name] = t.shape;
  return out;
}

TEST(CheckpointLayout, MatchesFixture) {
  ModelFolder m = ModelFolder::open(kTiny);
  SafeTensors st = SafeTensors::open(m.weights_path);
  std::vector<TensorInfo> infos = qwen3vl_checkpoint_tensors(m.config);
  EXPECT_EQ(infos.size(), st.tensors().size());
  EXPECT_EQ(shapes_of(infos), shapes_of(st));
  for (size_t i = 1; i < infos.size(); ++i) EXPECT_LT(infos[i - 1].name, infos[i].name);
}

// The mixture-of-experts checkpoint, sharded as published: router and fused
// experts in every layer, an untied lm_head.
TEST(CheckpointLayout, MatchesMixtureOfExpertsFixture) {
  ModelFolder m = ModelFolder::open(std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-moe");
  SafeTensors st = SafeTensors::open(m.weights_path);
  std::vector<TensorInfo> infos = qwen3vl_checkpoint_tensors(m.config);
  EXPECT_EQ(infos.size(), st.tensors().size());
  EXPECT_EQ(shapes_of(infos), shapes_of(st));
  auto shapes = shapes_of(infos);
  EXPECT_EQ(shapes.at("model.language_model.layers.3.mlp.experts.gate_up_proj"), (std::vector<int64_t>{8, 40, 64}));
  EXPECT_FALSE(shapes.count("model.language_model.layers.3.mlp.gate_proj.weight"));
}

TEST(CheckpointLayout, FollowsTheConfig) {
  json c = json::parse(read_file(kTiny + "/config.json"));
  c["text_config"]["num_hidden_layers"] = 3;
  c["text_config"]["num_attention_heads"] = 2;
  c["text_config"]["num_key_value_heads"] = 1;
  c["text_config"]["attention_bias"] = true;
  c["text_config"]["tie_word_embeddings"] = false;
  c["vision_config"]["depth"] = 3;
  c["vision_config"]["deepstack_visual_indexes"] = {0, 2};
  ModelConfig cfg = parse_model_config(c.dump(), "config.json");
  auto shapes = shapes_of(qwen3vl_checkpoint_tensors(cfg));
  // text: embed, norm, lm_head + 15 per layer (11 + 4 biases); vision: 3 + 12 per block + 6 per merger
  EXPECT_EQ(shapes.size(), 3u + 3 * 15 + 3 + 3 * 12 + 3 * 6);
  EXPECT_EQ(shapes.at("lm_head.weight"), (std::vector<int64_t>{151936, 64}));
  EXPECT_EQ(shapes.at("model.language_model.layers.2.self_attn.q_proj.weight"), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(shapes.at("model.language_model.layers.2.self_attn.k_proj.bias"), (std::vector<int64_t>{32}));
  EXPECT_EQ(shapes.at("model.language_model.layers.0.self_attn.o_proj.bias"), (std::vector<int64_t>{64}));
  EXPECT_TRUE(shapes.count("model.visual.deepstack_merger_list.1.norm.weight"));
  EXPECT_FALSE(shapes.count("model.visual.deepstack_merger_list.2.norm.weight"));
  EXPECT_FALSE(shapes.count("model.visual.blocks.3.norm1.weight"));
}

TEST(RandomModel, TinyConfigLoadsLikeTheFixture) {
  TempDir dir;
  RandomModelOptions opt;
  opt.like_dir = kTiny;
  opt.threads = 2;
  opt.chunk_bytes = 1 << 20;  // many chunks, so tensors straddle buffers
  RandomModelStats s = make_random_model(dir.path(), read_file(kTiny + "/config.json"), opt);

  ModelFolder m = ModelFolder::open(dir.path());
  SafeTensors made = SafeTensors::open(m.weights_path);
  SafeTensors fixture = SafeTensors::open(kTiny + "/model.safetensors");
  EXPECT_EQ(shapes_of(made), shapes_of(fixture));
  for (const auto& [name, v] : made.tensors()) EXPECT_EQ(v.dtype, DType::BF16) << name;
  EXPECT_EQ(s.tensors, 145u);
  EXPECT_EQ(s.file_bytes, fs::file_size(dir / "model.safetensors"));
  EXPECT_EQ(made.total_bytes(), s.file_bytes);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "chat_template.json", "generation_config.json"})
    EXPECT_EQ(read_file(dir / f), read_file(kTiny + "/" + f)) << f;
  EXPECT_EQ(m.chat_template, ModelFolder::open(kTiny).chat_template);
  // Both processors' files, so a clip is sampled and sized as the checkpoint's
  // video processor says, not by the class defaults.
  for (const char* f : {"preprocessor_config.json", "video_preprocessor_config.json"})
    EXPECT_EQ(nlohmann::json::parse(read_file(dir / f)), nlohmann::json::parse(read_file(kTiny + "/" + f))) << f;

  // Weights in range: N(0, 0.02) matrices, norms near 1 (bf16 -> float).
  auto values = [&](const std::string& name) {
    const TensorView& v = made.get(name);
    std::vector<float> out(v.numel());
    for (size_t i = 0; i < out.size(); ++i) {
      uint32_t u = uint32_t{reinterpret_cast<const uint16_t*>(v.data)[i]} << 16;
      std::memcpy(&out[i], &u, 4);
    }
    return out;
  };
  auto mean_std = [](const std::vector<float>& x) {
    double m = 0, s = 0;
    for (float f : x) m += f;
    m /= x.size();
    for (float f : x) s += (f - m) * (f - m);
    return std::pair<double, double>(m, std::sqrt(s / x.size()));
  };
  auto [m1, s1] = mean_std(values("model.language_model.layers.0.mlp.down_proj.weight"));
  EXPECT_NEAR(m1, 0.0, 0.002);
  EXPECT_NEAR(s1, 0.02, 0.001);
  auto [m2, s2] = mean_std(values("model.language_model.layers.1.input_layernorm.weight"));
  EXPECT_NEAR(m2, 1.0, 0.01);
  EXPECT_LT(s2, 0.05);
  auto [m3, s3] = mean_std(values("model.visual.blocks.0.norm1.bias"));
  EXPECT_NEAR(m3, 0.0, 0.01);
  EXPECT_GT(s3, 0.005);
}

TEST(RandomModel, UntiedWritesLmHead) {
  TempDir dir;
  RandomModelOptions opt;
  opt.like_dir = kTiny;
  opt.untied = true;
  make_random_model(dir.path(), read_file(kTiny + "/config.json"), opt);
  ModelFolder m = ModelFolder::open(dir.path());
  EXPECT_FALSE(m.config.tie_word_embeddings);
  SafeTensors st = SafeTensors::open(m.weights_path);
  EXPECT_EQ(st.tensors().size(), 146u);
  EXPECT_EQ(st.get("lm_head.weight").shape, (std::vector<int64_t>{151936, 64}));
}

// --layers: the first N text layers of the config, every width and the
// vision tower as they are; the same tensors (and bytes) as the full model's
// for what is kept; mlp_only_layers cut to match; more layers than the
// config has is refused.
TEST(RandomModel, FewerTextLayersKeepTheWidths) {
  const std::string moe = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-moe";
  json c = json::parse(read_file(moe + "/config.json"));
  c["text_config"]["mlp_only_layers"] = {1, 3};
  TempDir dir;
  RandomModelOptions opt;
  opt.like_dir = kTiny;
  make_random_model(dir / "full", c.dump(), opt);
  opt.text_layers = 3;  // DeepStack adds its 3 features to text layers 0-2
  make_random_model(dir / "three", c.dump(), opt);
  ModelFolder three = ModelFolder::open(dir / "three");
  EXPECT_EQ(three.config.text.num_hidden_layers, 3);
  EXPECT_EQ(three.config.text.hidden_size, c["text_config"]["hidden_size"]);
  EXPECT_EQ(three.config.text.mlp_only_layers, std::vector<int>{1});
  EXPECT_TRUE(three.config.text.sparse_layer(0));
  EXPECT_FALSE(three.config.text.sparse_layer(1));
  EXPECT_TRUE(three.config.text.sparse_layer(2));
  SafeTensors full = SafeTensors::open(dir / "full/model.safetensors");
  SafeTensors st = SafeTensors::open(three.weights_path);
  EXPECT_EQ(shapes_of(st), shapes_of(qwen3vl_checkpoint_tensors(three.config)));
  for (const auto& [name, v] : st.tensors()) {
    const TensorView& f = full.get(name);
    ASSERT_EQ(f.shape, v.shape) << name;
    EXPECT_EQ(std::memcmp(f.data, v.data, v.nbytes), 0) << name;
  }
  size_t dropped = 0;
  for (const auto& [name, v] : full.tensors())
    if (!st.find(name)) {
      ++dropped;
      EXPECT_EQ(name.rfind("model.language_model.layers.3.", 0), 0u) << name;
    }
  EXPECT_GT(dropped, 0u);
  opt.text_layers = 5;
  EXPECT_THROW(make_random_model(dir / "five", c.dump(), opt), Error);
  opt.text_layers = 2;  // fewer than DeepStack's features
  EXPECT_THROW(make_random_model(dir / "two", c.dump(), opt), Error);
}

// --fp8: the names, shapes and dtypes of the FP8 fixture (made from the same
// config by the reference), and the block scales' value.
TEST(RandomModel, Fp8HasTheFp8FixturesLayout) {
  TempDir dir;
  RandomModelOptions opt;
  opt.like_dir = kTiny;
  opt.fp8 = true;
  RandomModelStats s = make_random_model(dir.path(), read_file(kTiny + "/config.json"), opt);
  ModelFolder m = ModelFolder::open(dir.path());
  ASSERT_TRUE(m.config.fp8.has_value());
  SafeTensors made = SafeTensors::open(m.weights_path);
  SafeTensors fixture = SafeTensors::open(std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-fp8/model.safetensors");
  EXPECT_EQ(shapes_of(made), shapes_of(fixture));
  for (const auto& [name, v] : fixture.tensors()) EXPECT_EQ(made.get(name).dtype, v.dtype) << name;
  EXPECT_EQ(s.tensors, 173u);
  RandomModelOptions bf16 = opt;
  bf16.fp8 = false;
  EXPECT_EQ(s.parameters, make_random_model(dir / "bf16", read_file(kTiny + "/config.json"), bf16).parameters);
  const TensorView& scale = made.get("model.language_model.layers.0.mlp.down_proj.weight_scale_inv");
  uint16_t bits;
  std::memcpy(&bits, scale.data, 2);
  EXPECT_EQ(bits, 0x3a80);  // bf16 2^-10
  const TensorView& w = made.get("model.language_model.layers.0.mlp.down_proj.weight");
  int nonzero = 0;
  for (int64_t i = 0; i < w.numel(); ++i) nonzero += (w.data[i] & 0x7f) != 0;
  EXPECT_GT(nonzero, w.numel() * 9 / 10);
}

TEST(RandomModel, DeterministicAndChunkIndependent) {
  TensorInfo t{"model.x.weight", DType::BF16, {3, 100003}};
  std::vector<uint8_t> whole(t.nbytes()), pieces(t.nbytes()), other(t.nbytes());
  fill_random_weights(t, 5, 0, whole, 1);
  // Odd element offsets and several threads give the same bytes.
  size_t cut1 = 2 * 12345, cut2 = 2 * 200001;
  fill_random_weights(t, 5, 0, std::span<uint8_t>(pieces.data(), cut1), 2);
  fill_random_weights(t, 5, cut1, std::span<uint8_t>(pieces.data() + cut1, cut2 - cut1), 3);
  fill_random_weights(t, 5, cut2, std::span<uint8_t>(pieces.data() + cut2, pieces.size() - cut2), 2);
  EXPECT_EQ(whole, pieces);
  fill_random_weights(t, 6, 0, other, 1);
  EXPECT_NE(whole, other);
  TensorInfo bad{"i", DType::I32, {4}};
  std::vector<uint8_t> b(16);
  test::expect_error([&] { fill_random_weights(bad, 0, 0, b); }, {"'i'", "I32"});
}

TEST(RandomModel, TwoBillionConfigShapes) {
  ModelConfig c = parse_model_config(qwen3vl_2b_config_json(), "2b");
  EXPECT_EQ(c.text.hidden_size, 2048);
  EXPECT_EQ(c.vision.deepstack_visual_indexes, (std::vector<int>{5, 11, 17}));
  std::vector<TensorInfo> infos = qwen3vl_checkpoint_tensors(c);
  int64_t params = 0;
  for (const TensorInfo& t : infos) params += t.numel();
  EXPECT_EQ(infos.size(), 625u);  // 2 + 28 * 11 text, 3 + 24 * 12 + 4 * 6 vision
  EXPECT_EQ(params, 2127532032);
}

}  // namespace
}  // namespace qvl
