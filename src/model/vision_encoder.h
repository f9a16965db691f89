// The Qwen3-VL vision tower: patch embedding (Conv3d as a matmul), learned
// position embeddings bilinearly resampled to each image's grid, 2-D rotary,
// ViT blocks with attention confined to each image, the 2×2 patch merger and
// the DeepStack mergers. Several images of different sizes go in one call.
//
// encode() runs the whole tower; begin() / step() / finish() run the same
// stages one piece at a time, so a caller can put other work between pieces
// (the engine decodes other requests' tokens there) and still get the same
// bits: encode() is begin, step until done, finish.
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

// An encode in progress: everything the tower keeps between its stages.
// Made by VisionEncoder::begin(), advanced by step(), emptied by finish().
// The pieces, in order: the patch and position embeddings; per block its
// attention half, then its MLP half, then the DeepStack merger when the block
// is a DeepStack index; last the final merger. The pixels given to begin()
// must stay valid until the first piece has run. After a step threw, the
// encoding is unusable (discard it).
class VisionEncoding {
 public:
  bool done() const { return next_ == plan_.size(); }
  size_t pieces() const { return plan_.size(); }
  size_t pieces_done() const { return next_; }
  // Multiply-adds ×2 of the next piece (0 when done): lets a caller bound the
  // work it does between other work by a budget instead of a piece count.
  double next_flops() const { return done() ? 0 : plan_[next_].flops; }

 private:
  friend class VisionEncoder;
  enum class Kind { Embed, Attention, Mlp, DeepStack, Merger };
  struct Piece {
    Kind kind;
    int index;     // the block (Attention, Mlp) or the DeepStack level
    double flops;  // multiply-adds ×2
  };
  std::vector<Piece> plan_;
  size_t next_ = 0;
  std::vector<VisionInput> images_;
  VisionTrace* trace_ = nullptr;
  int64_t n_ = 0;                     // patches over all images
  std::vector<float> x_;              // [n, hidden]: the residual stream
  std::vector<float> cos_, sin_;      // [n, head_dim/2]: rotary tables
  std::vector<int64_t> segments_;     // attention segment bounds, one segment per frame (cu_seqlens)
  std::vector<float> xn_, qkv_, tmp_;  // [n, hidden], [n, 3*hidden], [n, hidden]: see attention_half()
  std::vector<float> h1_;             // [min(n, kMlpChunk), intermediate]
  VisionFeatures out_;                // tokens and image_tokens from begin(), deepstack as the blocks pass
};

class VisionEncoder {
 public:
  VisionEncoder(const VisionConfig& config, const VisionWeights& weights);
  VisionFeatures encode(std::span<const VisionInput> images, ThreadPool& pool, VisionTrace* trace = nullptr) const;
  // Checks the grids and plans the pieces; computes nothing yet. `trace`,
  // when given, must outlive the encoding.
  VisionEncoding begin(std::span<const VisionInput> images, VisionTrace* trace = nullptr) const;
  void step(VisionEncoding& encoding, ThreadPool& pool) const;  // the next piece; throws when done
  VisionFeatures finish(VisionEncoding& encoding) const;         // once done; releases its buffers
  // Multiply-adds of one encode, for throughput figures.
  double flops(std::span<const ImageGrid> grids) const;

 private:
  static constexpr int64_t kMlpChunk = 1024;

  void embed(VisionEncoding& s, ThreadPool& pool) const;
  void add_position_embeddings(const ImageGrid& grid, float* x, ThreadPool& pool) const;  // x [patches, hidden] += pos
  void attention_half(const VisionBlockWeights& w, VisionEncoding& s, ThreadPool& pool) const;
  void mlp_half(int block, VisionEncoding& s, ThreadPool& pool) const;
  void merge(const MergerWeights& w, bool postshuffle_norm, const float* x, int64_t n, float* out,
             ThreadPool& pool) const;

  const VisionConfig& config_;
  const VisionWeights& w_;
  VisionRope rope_;
  int side_;  // the learned position grid is side × side
};

}  // namespace qvl
