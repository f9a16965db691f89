// Every tensor of a Qwen3-VL checkpoint bound by its Hugging Face name, shapes
// checked against config.json. Matrices are WeightMatrix (bf16 views stay
// zero-copy on the mmap; other formats are converted at load); norms, biases
// and the position-embedding table are small and held as f32.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/model_config.h"
#include "io/safetensors.h"
#include "ops/matmul.h"

namespace qvl {

// y = x·Wᵀ + b.
struct Linear {
  WeightMatrix w;           // [out, in]
  std::vector<float> bias;  // [out], empty when the layer has none
  const float* b() const { return bias.empty() ? nullptr : bias.data(); }
};

// The precision of the attention beside a layer whose products use w
// (AttentionParams::precision): the matrix's own, as the load gave it
// (WeightLoadOptions::precision). Fast (int8 or bf16 Q·Kᵀ, bf16 P·V, f32
// softmax, on AMX or AVX512-VNNI/BF16) is the default beside q8/q4
// matrices, whose 8- and 4-bit products already round far more than the
// attention adds (issue 32: "int8 or bf16 products where the precision
// allows (fast, q8/q4 models)"), and --precision exact asks for f32 there
// too; bf16 is exact unless asked for fast; f32 always exact. A repeated
// request recomputes its last prompt token alone, so prompt pieces take the
// many-query kernel at every length (AttentionParams::prompt) and the cached
// and uncached answers keep one set of bits.
inline MatmulPrecision attention_precision(const WeightMatrix& w) { return w.precision(); }

struct NormWeights {
  std::vector<float> weight;  // [dim]
  std::vector<float> bias;    // [dim] (LayerNorm only)
};

// A token-embedding table, bf16 as published (or f32 in an f32 checkpoint).
struct Embedding {
  const uint16_t* bf16 = nullptr;  // [vocab, dim]
  const float* f32 = nullptr;      // [vocab, dim]
  int64_t vocab = 0, dim = 0;
};

struct VisionBlockWeights {
  NormWeights norm1, norm2;  // LayerNorm [hidden]
  Linear qkv;                // [3*hidden, hidden] rows ordered (q|k|v, head, dim)
  Linear proj;               // [hidden, hidden]
  Linear fc1;                // [intermediate, hidden]
  Linear fc2;                // [hidden, intermediate]
};

struct MergerWeights {
  NormWeights norm;  // [hidden] (final merger) or [4*hidden] (DeepStack, post-shuffle)
  Linear fc1;        // [4*hidden, 4*hidden]
  Linear fc2;        // [out_hidden, 4*hidden]
};

struct VisionWeights {
  Linear patch_embed;              // Conv3d as [hidden, in_channels*temporal*patch*patch]
  Embedding pos_embed;             // [num_position_embeddings, hidden], read in place
  std::vector<VisionBlockWeights> blocks;
  MergerWeights merger;
  std::vector<MergerWeights> deepstack;  // one per deepstack_visual_indexes entry
};

// A mixture of SwiGLU experts (model/text_mlp.h). The checkpoint fuses the
// experts as x·W tensors; each is laid out here, per expert, as the [n, k]
// matrix y = x·Wᵀ reads (model/weights.cpp says why that takes a copy).
struct MoeMlpWeights {
  WeightMatrix router;                 // [experts, hidden] (mlp.gate.weight), bf16/f32 in every format
  std::vector<WeightMatrix> gate, up;  // [experts] × [moe_intermediate, hidden]
  std::vector<WeightMatrix> down;      // [experts] × [hidden, moe_intermediate]
};

// A text layer's MLP: dense, or (sparse) a mixture of experts.
struct TextMlpWeights {
  bool sparse = false;
  Linear gate, up;  // dense: [intermediate, hidden]
  Linear down;      // dense: [hidden, intermediate]
  MoeMlpWeights moe;
  // Every matrix, in the order the MLP applies them (sparse: the router,
  // then each expert's gate, up and down).
  std::vector<const WeightMatrix*> matrices() const;
  // Bytes one token's pass reads: every matrix when dense; the router and
  // `experts_per_token` experts when sparse (all experts have one shape and
  // format).
  size_t token_bytes(int experts_per_token) const;
};

struct TextLayerWeights {
  std::vector<float> input_norm, post_norm;  // RMSNorm [hidden]
  std::vector<float> q_norm, k_norm;         // RMSNorm [head_dim]
  Linear q;     // [heads*head_dim, hidden]
  Linear k, v;  // [kv_heads*head_dim, hidden]
  Linear o;     // [hidden, heads*head_dim]
  TextMlpWeights mlp;
  // The attention's four projections, in the order a layer applies them.
  std::array<const Linear*, 4> attention_linears() const { return {&q, &k, &v, &o}; }
  // Every matrix of the layer, in the order it applies them.
  std::vector<const WeightMatrix*> matrices() const;
};

struct TextWeights {
  Embedding embed;  // [vocab, hidden]
  std::vector<TextLayerWeights> layers;
  std::vector<float> norm;  // final RMSNorm [hidden]
  WeightMatrix lm_head;     // [vocab, hidden]; the embedding table when tied; empty when absent (untied)
  bool has_head() const { return lm_head.rows() > 0; }
};

// Converted matrices by name: a tensor's name, or for an expert of a fused
// tensor "<tensor>#<expert>:<first column>".
using MatrixTable = std::map<std::string, WeightMatrix>;

struct WeightLoadOptions {
  WeightFormat format = WeightFormat::BF16;
  // Given to every bf16, q8 and q4 matrix: the precision of bf16 products
  // (prefill/vision, matmul.h) and of the attention beside any of them
  // (attention_precision). Unset: Exact for bf16, Fast for q8/q4.
  std::optional<MatmulPrecision> precision;
  ThreadPool* pool = nullptr;  // parallelises conversion
  // Called after each converted matrix with (bytes done, bytes total) of
  // source weights; lets the CLI print progress for slow conversions.
  std::function<void(size_t, size_t)> progress;
  // q8/q4 matrices an earlier load made (a mapped weight cache file,
  // model/weight_cache.h): one with the asked format and shape is used as is
  // instead of being converted again (the same bytes).
  const MatrixTable* reuse = nullptr;
  // When set, receives every matrix this load converted to q8/q4, so the
  // caller can keep them in the weight cache.
  MatrixTable* converted = nullptr;
};

struct ModelWeights {
  VisionWeights vision;
  TextWeights text;
  std::vector<std::string> unused;  // tensors in the checkpoint that qvl does not read
  // Storage behind views that are not the mapping (an f32 checkpoint's
  // experts, transposed at load into f32; FP8 weights dequantized into f32).
  std::vector<std::shared_ptr<void>> owned;
  size_t matrix_bytes = 0;          // storage of all matrices in their loaded format
  // What one decode step reads: the text matrices a token passes through
  // (of a sparse MLP only the router and num_experts_per_tok experts: the
  // other experts are not read) + one embedding row.
  size_t decode_bytes = 0;

  // Throws qvl::Error naming every missing tensor, or the first mis-shaped one.
  static ModelWeights load(const SafeTensors& st, const ModelConfig& config, const WeightLoadOptions& options);
};

}  // namespace qvl
