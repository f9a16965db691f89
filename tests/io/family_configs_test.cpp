// The family's real configs (tests/fixtures/configs) parse, and the tensors
// they imply (the one table qvl info checks a checkpoint against and
// make_random_model writes) add up to each model's published size, from the
// shapes alone.
#include <gtest/gtest.h>

#include "io/checkpoint_layout.h"
#include "io/model_config.h"
#include "util/mapped_file.h"

namespace qvl {
namespace {

struct Member {
  const char* name;
  int64_t params;     // published size, hub model cards (4.44B, 8.77B, 31.1B, 33.4B)
  int64_t tolerance;  // the card's rounding
  bool sparse;
};

ModelConfig family_config(const std::string& name) {
  const std::string path = std::string(QVL_FIXTURES_DIR) + "/configs/qwen3-vl-" + name + "/config.json";
  return parse_model_config(read_file(path), path);
}

int64_t parameters(const ModelConfig& c) {
  int64_t n = 0;
  for (const TensorInfo& t : qwen3vl_checkpoint_tensors(c)) n += t.numel();
  return n;
}

TEST(FamilyConfigs, ParameterCountsFromShapes) {
  for (const Member& m : {Member{"4b", 4'440'000'000, 5'000'000, false}, Member{"8b", 8'770'000'000, 5'000'000, false},
                          Member{"30b-a3b", 31'100'000'000, 50'000'000, true},
                          Member{"32b", 33'400'000'000, 50'000'000, false}}) {
    SCOPED_TRACE(m.name);
    const ModelConfig c = family_config(m.name);
    EXPECT_NEAR(static_cast<double>(parameters(c)), static_cast<double>(m.params), static_cast<double>(m.tolerance));
    EXPECT_EQ(c.text.sparse_layer(0), m.sparse);
  }
}

// The shapes that set each member apart (the configs' own numbers, so a
// mistyped copy fails here and names the field).
TEST(FamilyConfigs, DenseWidths) {
  const ModelConfig b4 = family_config("4b"), b8 = family_config("8b"), b32 = family_config("32b");
  EXPECT_EQ(b4.text.hidden_size, 2560);
  EXPECT_EQ(b4.text.num_hidden_layers, 36);
  EXPECT_TRUE(b4.tie_word_embeddings);
  EXPECT_EQ(b8.text.hidden_size, 4096);
  EXPECT_EQ(b8.text.intermediate_size, 12288);
  EXPECT_FALSE(b8.tie_word_embeddings);
  EXPECT_EQ(b32.text.hidden_size, 5120);
  EXPECT_EQ(b32.text.intermediate_size, 25600);
  EXPECT_EQ(b32.text.num_hidden_layers, 64);
  EXPECT_EQ(b32.text.num_attention_heads, 64);
  EXPECT_EQ(b32.text.num_key_value_heads, 8);
  EXPECT_EQ(b32.text.head_dim, 128);  // not hidden / heads (80)
  EXPECT_EQ(b32.vision.out_hidden_size, 5120);
  EXPECT_EQ(b32.vision.depth, 27);
  EXPECT_FALSE(b32.tie_word_embeddings);
}

}  // namespace
}  // namespace qvl
