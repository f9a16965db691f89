// The weights' footprint from config.json alone (model/weight_footprint.h)
// is what loading the checkpoint gives: for the dense and the MoE fixture, in
// every format, the same matrix bytes and decode bytes as ModelWeights::load,
// the parameters the checkpoint holds, and its bf16 file's tensor bytes.
#include "model/weight_footprint.h"

#include <gtest/gtest.h>

#include "io/model_config.h"
#include "io/safetensors.h"
#include "model/weights.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

TEST(WeightFootprint, MatchesTheLoadedFixtures) {
  for (const char* name : {"tiny-qwen3vl", "tiny-qwen3vl-moe"}) {
    const std::string dir = std::string(QVL_FIXTURES_DIR) + "/" + name;
    const ModelFolder folder = ModelFolder::open(dir);
    const SafeTensors st = SafeTensors::open(folder.weights_path);
    int64_t vision = 0, text = 0;
    uint64_t tensor_bytes = 0;
    for (const auto& [n, v] : st.tensors()) {
      (n.rfind("model.visual.", 0) == 0 ? vision : text) += v.numel();
      tensor_bytes += v.nbytes;
    }
    const ParameterCounts p = parameter_counts(folder.config);
    EXPECT_EQ(p.vision, vision) << name;
    EXPECT_EQ(p.text, text) << name;
    EXPECT_EQ(published_checkpoint_bytes(folder.config), tensor_bytes) << name;
    for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
      SCOPED_TRACE(::testing::Message() << name << " " << weight_format_name(f));
      WeightLoadOptions lo;
      lo.format = f;
      const ModelWeights w = ModelWeights::load(st, folder.config, lo);
      const FormatFootprint fp = weight_footprint(folder.config, f);
      EXPECT_EQ(fp.matrix_bytes, w.matrix_bytes);
      EXPECT_EQ(fp.decode_bytes, w.decode_bytes);
      EXPECT_GT(fp.memory_bytes, fp.matrix_bytes / 2);
    }
    const FormatFootprint bf16 = weight_footprint(folder.config, WeightFormat::BF16),
                          q8 = weight_footprint(folder.config, WeightFormat::Q8),
                          q4 = weight_footprint(folder.config, WeightFormat::Q4);
    EXPECT_LT(q8.decode_bytes, bf16.decode_bytes);
    EXPECT_LT(q4.decode_bytes, q8.decode_bytes);
  }
  // The MoE: a token reads the router and k of the experts only.
  const ModelConfig moe = ModelFolder::open(std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-moe").config;
  const ParameterCounts p = parameter_counts(moe);
  EXPECT_LT(p.text_active, p.text);
}

// The family's real configs: the 30B-A3B's text model has 30.5B parameters,
// 3.3B of them active per token (the Qwen3-30B-A3B model card's figures);
// its bf16 checkpoint with the vision tower is ~62 GB, the dense 4B's ~9 GB.
TEST(WeightFootprint, FamilyConfigs) {
  auto config = [](const std::string& size) {
    const std::string path = std::string(QVL_FIXTURES_DIR) + "/configs/qwen3-vl-" + size + "/config.json";
    return parse_model_config(read_file(path), path);
  };
  const ModelConfig moe = config("30b-a3b"), b4 = config("4b");
  const ParameterCounts p = parameter_counts(moe);
  EXPECT_NEAR(static_cast<double>(p.text), 30.5e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(p.text_active), 3.3e9, 0.06e9);
  EXPECT_NEAR(static_cast<double>(published_checkpoint_bytes(moe)), 62.1e9, 0.5e9);
  EXPECT_NEAR(static_cast<double>(published_checkpoint_bytes(b4)), 8.9e9, 0.1e9);
  EXPECT_EQ(parameter_counts(b4).text_active, parameter_counts(b4).text);
  // A token of the 30B-A3B in q4 reads ~3B weights' worth, not 30B.
  const FormatFootprint q4 = weight_footprint(moe, WeightFormat::Q4);
  EXPECT_LT(q4.decode_bytes * 5, q4.matrix_bytes);
}

}  // namespace
}  // namespace qvl
