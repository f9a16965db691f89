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

// Sorted by name. lm_head.weight only when the embeddings are untied; q/k/v/o
// biases only with text_config.attention_bias.
std::vector<TensorInfo> qwen3vl_checkpoint_tensors(const ModelConfig& config, DType dtype = DType::BF16);

}  // namespace qvl
