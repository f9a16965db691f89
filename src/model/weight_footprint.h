// What a model's weights come to, from config.json alone: parameters (all,
// and those one token passes through), the checkpoint's bytes as published,
// and per weight format the bytes of its matrices and of what one decode step
// reads. `qvl info` shows these for a folder without weights (a model not
// downloaded yet, or too big for the machine), and the default weight rule
// (default_weights.h) is applied to the bytes. The matrices and their
// formats are ModelWeights::load's (weights.h): a test loads the fixture
// models and compares.
#pragma once

#include <cstddef>
#include <cstdint>

#include "io/model_config.h"
#include "util/formats.h"

namespace qvl {

struct ParameterCounts {
  int64_t vision = 0, text = 0;
  // Text parameters one token passes through: a sparse layer's unchosen
  // experts left out (= text for a dense model).
  int64_t text_active = 0;
  int64_t total() const { return vision + text; }
};

// From the tensors config.json implies (io/checkpoint_layout.h).
ParameterCounts parameter_counts(const ModelConfig& config);

// The safetensors files' bytes as a checkpoint of this config is published:
// bf16, or with config.json's quantization_config (FP8) its text linears one
// byte per weight (their block scales, under 0.01 %, left out).
uint64_t published_checkpoint_bytes(const ModelConfig& config);

struct FormatFootprint {
  size_t matrix_bytes = 0;  // ModelWeights::matrix_bytes
  size_t decode_bytes = 0;  // ModelWeights::decode_bytes: what one decode step reads
  // The weights in memory: the matrices, the embedding tables as published
  // (bf16), the norm and bias vectors (f32); a tied bf16 lm_head is the
  // embedding table itself.
  size_t memory_bytes = 0;
};

FormatFootprint weight_footprint(const ModelConfig& config, WeightFormat format);

}  // namespace qvl
