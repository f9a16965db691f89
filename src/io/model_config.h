// A Qwen3-VL model folder: typed views of config.json (both the transformers
// 4.57 and 5 dialects), preprocessor_config.json, generation_config.json,
// tokenizer_config.json and the chat template. Validation errors name the file
// and the field.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qvl {

struct VisionConfig {
  int depth = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_heads = 0;
  int in_channels = 3;
  int patch_size = 0;
  int spatial_merge_size = 0;
  int temporal_patch_size = 0;
  int out_hidden_size = 0;          // = text hidden size
  int num_position_embeddings = 0;  // a square grid: sqrt of this per side
  std::string hidden_act;           // "gelu_pytorch_tanh" (or gelu_new, gelu_fast: tanh GELU) or "gelu" (erf)
  std::vector<int> deepstack_visual_indexes;
  double layer_norm_eps = 1e-6;  // not in config.json: transformers hard-codes 1e-6
  int head_dim() const { return hidden_size / num_heads; }
  int grid_per_side() const;  // sqrt(num_position_embeddings)
};

struct TextConfig {
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 0;
  std::vector<int> mrope_section;  // sums to head_dim / 2 (t, h, w)
  bool mrope_interleaved = true;
  std::string rope_type = "default";
  std::string hidden_act;  // "silu"
  bool attention_bias = false;

  // Mixture of experts (model_type "qwen3_vl_moe"); num_experts 0: every
  // layer's MLP is dense, of width intermediate_size. A sparse layer routes
  // each token to num_experts_per_tok of num_experts SwiGLU experts of width
  // moe_intermediate_size.
  int num_experts = 0;
  int num_experts_per_tok = 0;
  int moe_intermediate_size = 0;
  // Renormalise the chosen experts' probabilities to sum to 1. transformers'
  // qwen3_vl_moe does so whatever the field says, and every published config
  // says true; qvl follows the field (false: the raw softmax probabilities,
  // as Qwen3-MoE reads it).
  bool norm_topk_prob = true;
  int decoder_sparse_step = 1;
  std::vector<int> mlp_only_layers;  // layers that stay dense
  // Whether layer i's MLP is a mixture of experts: transformers'
  // Qwen3VLMoeTextDecoderLayer rule (not in mlp_only_layers, experts > 0 and
  // (i + 1) % decoder_sparse_step == 0).
  bool sparse_layer(int i) const;
};

// config.json's quantization_config of a fine-grained FP8 checkpoint
// (Qwen/Qwen3-VL-*-FP8; transformers' FineGrainedFP8Config): a quantized
// linear X stores X.weight as F8_E4M3 [out, in] and X.weight_scale_inv
// [⌈out/b0⌉, ⌈in/b1⌉], W[r, c] = e4m3(weight[r, c]) · scale_inv[r / b0, c / b1]
// (model/fp8_weights.h). quant_method "fp8" and fmt "e4m3" are the only ones
// read; activations stay f32 (activation_scheme "dynamic" is the GPU's
// per-token FP8 rounding of a W8A8 kernel, which qvl does not imitate).
struct Fp8Quantization {
  std::array<int, 2> weight_block_size{128, 128};  // [rows, cols] of one scale's block
  std::string activation_scheme = "dynamic";
  // Modules stored unquantized (the vision tower, lm_head, embeddings,
  // routers); informative: each tensor says by its dtype and scale.
  std::vector<std::string> modules_to_not_convert;
};

struct ModelConfig {
  std::string model_type;  // "qwen3_vl" or "qwen3_vl_moe"
  std::vector<std::string> architectures;
  TextConfig text;
  VisionConfig vision;
  int image_token_id = 0;
  int video_token_id = 0;
  int vision_start_token_id = 0;
  int vision_end_token_id = 0;
  // text_config.tie_word_embeddings when present (what transformers 4.57 ties
  // by), else the top-level key; the checkpoint then has no lm_head.weight.
  bool tie_word_embeddings = false;
  std::vector<int> eos_token_ids;  // config.json's eos_token_id; generation_config.json's wins
  // "transformers 4.57" (text_config.rope_scaling) or "transformers 5" (rope_parameters)
  std::string dialect;
  std::optional<Fp8Quantization> fp8;  // a quantization_config (FP8 is the only one read)
};

struct PreprocessorConfig {
  int patch_size = 16;
  int temporal_patch_size = 2;
  int merge_size = 2;
  int64_t min_pixels = 0;  // size.shortest_edge (or min_pixels)
  int64_t max_pixels = 0;  // size.longest_edge (or max_pixels)
  std::array<float, 3> image_mean{0.5f, 0.5f, 0.5f};
  std::array<float, 3> image_std{0.5f, 0.5f, 0.5f};
  double rescale_factor = 1.0 / 255.0;
  bool do_resize = true, do_rescale = true, do_normalize = true, do_convert_rgb = true;
  int factor() const { return patch_size * merge_size; }  // pixels per image token side
};

// video_preprocessor_config.json: the frames' processor (sizes as above, but
// min/max_pixels bound all sampled frames together) and its frame sampling.
// Absent file or keys: transformers' Qwen3VLVideoProcessor class attributes
// (video_processing_qwen3_vl.py).
struct VideoPreprocessorConfig {
  PreprocessorConfig frames{16, 2, 2, 128 * 32 * 32, 768 * 32 * 32};
  double fps = 2.0;
  int min_frames = 4;
  int max_frames = 768;
};

// Generation defaults the model ships with; unset fields stay empty so the
// user's choice, then these, then the engine's own defaults apply in order.
struct GenerationConfig {
  std::vector<int> eos_token_ids;
  std::optional<int> bos_token_id, pad_token_id;
  std::optional<bool> do_sample;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int> top_k;
  std::optional<int> max_new_tokens;
};

struct ModelFolder {
  std::string dir;
  ModelConfig config;
  PreprocessorConfig preprocessor;
  VideoPreprocessorConfig video_preprocessor;
  GenerationConfig generation;
  std::string chat_template;   // Jinja source, from chat_template.json / .jinja / tokenizer_config.json
  std::string tokenizer_json;  // path of tokenizer.json
  std::string weights_path;    // model.safetensors or model.safetensors.index.json
  std::string chat_template_path;  // the file the template came from ("" if none)

  // Requires config.json, preprocessor_config.json, tokenizer.json and the
  // weights file; generation_config.json and the chat template are optional
  // (EOS then comes from config.json). Cross-checks the preprocessor's
  // patch/merge/temporal sizes against vision_config.
  static ModelFolder open(const std::string& dir);
};

// Parsers exposed for tests; `source` names the file in error messages.
// parse_model_config also validates every value (the one place that does: the
// model code trusts a ModelConfig it returns); an error names the field.
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);
PreprocessorConfig parse_preprocessor_config(const std::string& json_text, const std::string& source);
GenerationConfig parse_generation_config(const std::string& json_text, const std::string& source);
VideoPreprocessorConfig parse_video_preprocessor_config(const std::string& json_text, const std::string& source);

}  // namespace qvl
