// The tensors of a Qwen3-VL checkpoint as transformers saves it
// (Qwen3VLForConditionalGeneration.state_dict()): Hugging Face names and
// shapes derived from config.json alone. tools/make_random_model writes exactly
// these; the fixture checkpoint is the authority the test compares with.
#pragma once

#include <vector>

#include "io/model_config.h"
#include "io/safetensors_writer.h"

namespace qvl {

// The MLP tensors of text layer `layer`, named after its "layers.N." prefix:
// the one table of them, which qwen3vl_checkpoint_tensors lists and the
// weight loader (model/weights.cpp) binds, in this order. Dense:
// mlp.{gate,up,down}_proj.weight [I, H], [I, H], [H, I]. Sparse
// (config.sparse_layer): the router mlp.gate.weight [E, H] and the experts
// fused as mlp.experts.gate_up_proj [E, H, 2I] (the gate half first) and
// mlp.experts.down_proj [E, I, H], each expert's x·W (not x·Wᵀ): 3-D, no
// ".weight" suffix, as Qwen publishes them.
std::vector<TensorInfo> text_mlp_tensors(const TextConfig& t, int layer, DType dtype = DType::BF16);

// Expert `expert` of a sparse layer stored on its own, as Qwen's FP8 releases
// of MoE models do (the bf16 masters fuse them, above): nn.Linear weights
// mlp.experts.N.{gate,up}_proj.weight [I, H] and mlp.experts.N.down_proj.weight
// [H, I], in this order (each with a weight_scale_inv when FP8).
std::vector<TensorInfo> moe_expert_tensors(const TextConfig& t, int expert, DType dtype = DType::BF16);

// How a sparse layer's experts are stored: fused (the bf16 masters) or one
// by one (Qwen's FP8 MoE releases).
enum class ExpertLayout { Fused, PerExpert };

// Sorted by name. lm_head.weight only when the embeddings are untied; q/k/v/o
// biases only with text_config.attention_bias.
std::vector<TensorInfo> qwen3vl_checkpoint_tensors(const ModelConfig& config, DType dtype = DType::BF16,
                                                   ExpertLayout experts = ExpertLayout::Fused);

// Whether layer `layer`'s experts are stored one by one in a checkpoint with
// these tensor names (its expert 0's gate_proj is there).
template <typename HasTensor>
ExpertLayout expert_layout(const TextConfig& t, const HasTensor& has) {
  for (int i = 0; i < t.num_hidden_layers; ++i)
    if (t.sparse_layer(i))
      return has("model.language_model.layers." + std::to_string(i) + "." + moe_expert_tensors(t, 0)[0].name)
                 ? ExpertLayout::PerExpert
                 : ExpertLayout::Fused;
  return ExpertLayout::Fused;
}

}  // namespace qvl
