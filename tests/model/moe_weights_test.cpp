// Loading the mixture-of-experts checkpoint: every expert's gate, up and down
// are the fused tensors' slices, transposed into the matrices y = x·Wᵀ
// reads, in every weight format; the router stays exact; decode_bytes counts
// only the experts a token runs.
#include <gtest/gtest.h>

#include <cstring>

#include "golden.h"
#include "ops/ops.h"
#include "ops/scalar.h"
#include "tiny_model.h"

namespace qvl {
namespace {

float bf16_at(const TensorView& t, int64_t flat) {
  uint16_t v;
  std::memcpy(&v, t.data + 2 * flat, 2);
  return bf16_to_f32(v);
}

TEST(MoeWeights, ExpertsAreTheFusedTensorsTransposed) {
  const SafeTensors st = SafeTensors::open(golden::moe_model_dir() + "/model.safetensors.index.json");
  for (WeightFormat f : {WeightFormat::BF16, WeightFormat::F32, WeightFormat::Q8}) {
    SCOPED_TRACE(weight_format_name(f));
    const Model& model = golden::tiny_moe(f);
    const TextConfig& c = model.config().text;
    const int64_t E = c.num_experts, H = c.hidden_size, I = c.moe_intermediate_size;
    for (int l : {0, 3}) {
      const std::string p = "model.language_model.layers." + std::to_string(l) + ".mlp.";
      const TensorView& gate_up = *st.find(p + "experts.gate_up_proj");
      const TensorView& down = *st.find(p + "experts.down_proj");
      const MoeMlpWeights& w = model.weights().text.layers[l].mlp.moe;
      ASSERT_TRUE(model.weights().text.layers[l].mlp.sparse);
      ASSERT_EQ(static_cast<int64_t>(w.gate.size()), E);
      EXPECT_EQ(w.router.format(), f == WeightFormat::F32 ? WeightFormat::F32 : WeightFormat::BF16);
      // Quantized weights are within half a step (matmul.h); bf16/f32 exact.
      const double tol = f == WeightFormat::Q8 ? 0.02 : 0.0;
      for (int64_t e : {int64_t{0}, E - 1}) {
        EXPECT_EQ(w.gate[e].rows(), I);
        EXPECT_EQ(w.gate[e].cols(), H);
        EXPECT_EQ(w.down[e].rows(), H);
        EXPECT_EQ(w.down[e].cols(), I);
        for (int64_t i = 0; i < I; i += 7)
          for (int64_t h = 0; h < H; h += 3) {
            const int64_t row = (e * H + h) * 2 * I;
            EXPECT_NEAR(scalar::weight_at(w.gate[e], i, h), bf16_at(gate_up, row + i), tol);
            EXPECT_NEAR(scalar::weight_at(w.up[e], i, h), bf16_at(gate_up, row + I + i), tol);
            EXPECT_NEAR(scalar::weight_at(w.down[e], h, i), bf16_at(down, (e * I + i) * H + h), tol);
          }
      }
    }
  }
}

TEST(MoeWeights, DecodeBytesCountOnlyTheActiveExperts) {
  const Model& model = golden::tiny_moe(WeightFormat::BF16);
  const TextConfig& c = model.config().text;
  const ModelWeights& w = model.weights();
  size_t unread = 0;
  for (const TextLayerWeights& l : w.text.layers) {
    const MoeMlpWeights& m = l.mlp.moe;
    unread += (c.num_experts - c.num_experts_per_tok) * (m.gate[0].bytes() + m.up[0].bytes() + m.down[0].bytes());
  }
  size_t vision = 0;
  for (const VisionBlockWeights& b : w.vision.blocks)
    for (const Linear* lin : {&b.qkv, &b.proj, &b.fc1, &b.fc2}) vision += lin->w.bytes();
  vision += w.vision.patch_embed.w.bytes() + w.vision.merger.fc1.w.bytes() + w.vision.merger.fc2.w.bytes();
  for (const MergerWeights& m : w.vision.deepstack) vision += m.fc1.w.bytes() + m.fc2.w.bytes();
  const size_t embed_row = static_cast<size_t>(c.hidden_size) * 2;
  EXPECT_EQ(w.decode_bytes, w.matrix_bytes - vision - unread + embed_row);
}

}  // namespace
}  // namespace qvl
