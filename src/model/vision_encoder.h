// The Qwen3-VL vision tower: patch embedding (Conv3d as a matmul), learned
// position embeddings bilinearly resampled to each image's grid, 2-D rotary,
// ViT blocks with attention confined to each image, the 2×2 patch merger and
// the DeepStack mergers. Several images of different sizes go in one call.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "io/model_config.h"
#include "model/positions.h"
#include "model/rope_tables.h"
#include "model/weights.h"
#include "ops/thread_pool.h"

namespace qvl {

struct VisionInput {
  const float* pixels = nullptr;  // [grid.patches(), patch_dim], merge-window row order
  ImageGrid grid;
};

struct VisionFeatures {
  int64_t tokens = 0;                          // sum over images of grid.tokens(merge)
  std::vector<float> embeds;                   // [tokens, out_hidden]: the image tokens' input embeddings
  std::vector<std::vector<float>> deepstack;   // [k][tokens, out_hidden]: added after text layer k
  std::vector<int64_t> image_tokens;           // per image
};

// Intermediates for the golden tests; rows in merge-window order [patches, hidden].
struct VisionTrace {
  std::vector<float> patch_embed, patch_embed_pos;
  std::vector<std::vector<float>> blocks;  // output of every block
};

class VisionEncoder {
 public:
  VisionEncoder(const VisionConfig& config, const VisionWeights& weights);
  VisionFeatures encode(std::span<const VisionInput> images, ThreadPool& pool, VisionTrace* trace = nullptr) const;
  // Multiply-adds of one encode, for throughput figures.
  double flops(std::span<const ImageGrid> grids) const;

 private:
  struct Scratch {
    std::vector<float> xn, qkv, tmp;  // [n, hidden], [n, 3*hidden], [n, hidden]; see block()
    std::vector<float> h1;            // [min(n, kMlpChunk), intermediate]
  };
  static constexpr int64_t kMlpChunk = 1024;

  void add_position_embeddings(const ImageGrid& grid, float* x, ThreadPool& pool) const;  // x [patches, hidden] += pos
  void block(const VisionBlockWeights& w, float* x, int64_t n, const float* cos, const float* sin,
             const std::vector<int64_t>& segments, Scratch& scratch, ThreadPool& pool) const;
  void merge(const MergerWeights& w, bool postshuffle_norm, const float* x, int64_t n, float* out,
             ThreadPool& pool) const;

  const VisionConfig& config_;
  const VisionWeights& w_;
  VisionRope rope_;
  int side_;  // the learned position grid is side × side
};

}  // namespace qvl
