#include "model/weight_footprint.h"

#include <vector>

#include "io/checkpoint_layout.h"
#include "ops/matmul.h"

namespace qvl {

ParameterCounts parameter_counts(const ModelConfig& config) {
  ParameterCounts p;
  for (const TensorInfo& t : qwen3vl_checkpoint_tensors(config))
    (t.name.rfind("model.visual.", 0) == 0 ? p.vision : p.text) += t.numel();
  // Of each sparse layer's experts (the fused table's last two tensors), a
  // token runs num_experts_per_tok of num_experts.
  const TextConfig& t = config.text;
  p.text_active = p.text;
  for (int i = 0; i < t.num_hidden_layers; ++i) {
    if (!t.sparse_layer(i)) continue;
    const std::vector<TensorInfo> mlp = text_mlp_tensors(t, i);
    const int64_t experts = mlp[1].numel() + mlp[2].numel();
    p.text_active -= experts / t.num_experts * (t.num_experts - t.num_experts_per_tok);
  }
  return p;
}

uint64_t published_checkpoint_bytes(const ModelConfig& config) {
  // FP8 releases store a MoE's experts one by one, as nn.Linear weights.
  const bool fp8 = config.fp8.has_value();
  const std::string text = "model.language_model.layers.", linear = "_proj.weight";
  uint64_t bytes = 0;
  for (const TensorInfo& t : qwen3vl_checkpoint_tensors(config, DType::BF16, fp8 ? ExpertLayout::PerExpert : ExpertLayout::Fused)) {
    const bool one_byte = fp8 && t.name.rfind(text, 0) == 0 && t.name.size() > linear.size() &&
                          t.name.compare(t.name.size() - linear.size(), linear.size(), linear) == 0;
    bytes += static_cast<uint64_t>(t.numel()) * (one_byte ? 1 : 2);
  }
  return bytes;
}

FormatFootprint weight_footprint(const ModelConfig& config, WeightFormat format) {
  const VisionConfig& vc = config.vision;
  const TextConfig& tc = config.text;
  auto bytes = [&](int64_t rows, int64_t cols, WeightFormat f = WeightFormat::F32) {
    return WeightMatrix::storage_bytes(f == WeightFormat::F32 ? format : f, rows, cols);
  };
  FormatFootprint fp;
  size_t vectors = 0;  // norm weights and biases, held as f32
  for (const TensorInfo& t : qwen3vl_checkpoint_tensors(config))
    if (t.shape.size() == 1) vectors += static_cast<size_t>(t.numel());
  // Vision: the patch embedding, each block's four linears, the merger and
  // the DeepStack mergers (as ModelWeights::load binds them).
  const int64_t vh = vc.hidden_size, vi = vc.intermediate_size;
  const int64_t patch_dim = int64_t{vc.in_channels} * vc.temporal_patch_size * vc.patch_size * vc.patch_size;
  const int64_t merged = vh * vc.spatial_merge_size * vc.spatial_merge_size;
  fp.matrix_bytes += bytes(vh, patch_dim);
  fp.matrix_bytes += vc.depth * (bytes(3 * vh, vh) + bytes(vh, vh) + bytes(vi, vh) + bytes(vh, vi));
  const int64_t mergers = 1 + static_cast<int64_t>(vc.deepstack_visual_indexes.size());
  fp.matrix_bytes += mergers * (bytes(merged, merged) + bytes(vc.out_hidden_size, merged));
  // Text: attention and MLP per layer, what one token reads of them, lm_head.
  const int64_t th = tc.hidden_size, hd = tc.head_dim;
  const int64_t qd = int64_t{tc.num_attention_heads} * hd, kvd = int64_t{tc.num_key_value_heads} * hd;
  // The router decides which experts run: never quantized (weights.cpp).
  const WeightFormat exact = format == WeightFormat::F32 ? WeightFormat::F32 : WeightFormat::BF16;
  for (int i = 0; i < tc.num_hidden_layers; ++i) {
    const size_t attention = bytes(qd, th) + 2 * bytes(kvd, th) + bytes(th, qd);
    size_t mlp = 0, token = 0;
    const std::vector<TensorInfo> t = text_mlp_tensors(tc, i);
    if (tc.sparse_layer(i)) {
      const int64_t im = tc.moe_intermediate_size;
      const size_t router = bytes(tc.num_experts, th, exact), expert = 2 * bytes(im, th) + bytes(th, im);
      mlp = router + tc.num_experts * expert;
      token = router + tc.num_experts_per_tok * expert;
    } else {
      mlp = token = bytes(t[0].shape[0], t[0].shape[1]) + bytes(t[1].shape[0], t[1].shape[1]) +
                    bytes(t[2].shape[0], t[2].shape[1]);
    }
    fp.matrix_bytes += attention + mlp;
    fp.decode_bytes += attention + token;
  }
  const size_t lm_head = bytes(tc.vocab_size, th);
  fp.matrix_bytes += lm_head;
  fp.decode_bytes += lm_head + static_cast<size_t>(th) * 2;  // and one bf16 embedding row
  const size_t embeddings = static_cast<size_t>(tc.vocab_size * th + vc.num_position_embeddings * vh) * 2;
  const bool shared_head = config.tie_word_embeddings && format == WeightFormat::BF16;
  fp.memory_bytes = fp.matrix_bytes - (shared_head ? lm_head : 0) + embeddings + vectors * 4;
  return fp;
}

}  // namespace qvl
