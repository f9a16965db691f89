// The tensors of a Qwen3-VL checkpoint as transformers saves it
// (Qwen3VLForConditionalGeneration.state_dict()): Hugging Face names and
// shapes derived from config.json alone. tools/make_random_model writes exactly
// these; the fixture checkpoint is the authority the test compares with.
#pragma once

#include <vector>

#include "io/model_config.h"
#include "io/safetensors_writer.h"

namespace qvl {

// Sorted by name. lm_head.weight only when the embeddings are untied; q/k/v/o
// biases only with text_config.attention_bias.
std::vector<TensorInfo> qwen3vl_checkpoint_tensors(const ModelConfig& config, DType dtype = DType::BF16);

}  // namespace qvl
