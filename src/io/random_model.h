// A complete Qwen3-VL model folder with deterministic random bf16 weights in
// the exact tensor names and shapes of a config: speed can be measured on the
// real 2B shapes without the real checkpoint (tools/make_random_model).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/safetensors_writer.h"

namespace qvl {

// Qwen/Qwen3-VL-2B-Instruct's config.json (transformers 4.57 dialect).
const std::string& qwen3vl_2b_config_json();

struct RandomModelOptions {
  uint64_t seed = 0;
  int threads = 0;          // generator threads; 0: every core
  bool untied = false;      // set tie_word_embeddings false and write lm_head.weight
  // A fine-grained FP8 folder, as Qwen's -FP8 releases: every text decoder
  // linear F8_E4M3 with BF16 128×128 block scales (kRandomFp8Scale), a
  // quantization_config, and a MoE's experts stored one by one.
  bool fp8 = false;
  // When > 0, the text decoder keeps only its first `text_layers` layers
  // (config.json's num_hidden_layers, and mlp_only_layers / layer_types cut
  // to match), every width and the vision tower as the config has them: a
  // model too big for the machine is measured layer by layer.
  int text_layers = 0;
  std::string like_dir;     // tokenizer, template, preprocessor and generation files come from here
  size_t chunk_bytes = 64u << 20;
};

struct RandomModelStats {
  size_t tensors = 0;
  int64_t parameters = 0;
  size_t file_bytes = 0;
  double seconds = 0;
};

// The block scale of every FP8 weight of a random model: 2^-10, so the
// N(0, 0.02) weights span ±~90 of E4M3's ±448 (a real checkpoint scales
// each block to its own maximum; the cost of reading it is the same).
inline constexpr float kRandomFp8Scale = 1.0f / 1024;

// Fills bytes [byte_offset, byte_offset + out.size()) of tensor `t` (BF16,
// F32, F8_E4M3: the same values over kRandomFp8Scale, rounded; a BF16
// "..._scale_inv" is kRandomFp8Scale). Element i depends only on (seed, t.name, i): N(0, 0.02) for matrices,
// embeddings and biases, 1 + N(0, 0.02) for norm weights, so activations stay
// in a sane range through every layer.
void fill_random_weights(const TensorInfo& t, uint64_t seed, size_t byte_offset, std::span<uint8_t> out, int threads = 1);

// Writes `out_dir` (created if needed): config.json, model.safetensors and the
// files copied from options.like_dir; the result opens with ModelFolder::open.
RandomModelStats make_random_model(const std::string& out_dir, const std::string& config_json,
                                   const RandomModelOptions& options);

}  // namespace qvl
