// The vision job of one run: the embeddings of the images in the prompt's
// recomputed part (past the reused prefix), from the image-embedding cache
// where it holds them, else preprocessed and encoded (each distinct image
// once) one encoder piece at a time, so a scheduler can interleave a large
// image with other runs' decode steps. The prefill then reads the rows.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/image_cache.h"
#include "engine/prompt.h"
#include "image/preprocess.h"
#include "model/vision_encoder.h"

namespace qvl {

class Model;
class ThreadPool;

class VisionStage {
 public:
  // The images of `prompt` from token `reused` on, each part taking the
  // embeddings `cache` holds (counted in timings' hits and misses). The
  // prompt must outlive the stage. The stage drops the prompt's references
  // to decoded images as soon as it no longer needs their pixels: at once
  // for images cached or in the reused prefix, the others once preprocessed
  // (the server's image budget is returned when the last reference goes).
  VisionStage(PreparedPrompt& prompt, int64_t reused, const PreprocessOptions& options, int merge,
              ImageEmbeddingCache& cache, Timings& timings);

  // One piece: preprocessing the images to encode (the first call), or one
  // encoder piece; the last piece caches each image's rows. True once
  // features() holds every part's rows in prompt order.
  bool step(const Model& model, ImageEmbeddingCache& cache, ThreadPool& pool, Timings& timings);
  // Multiply-adds ×2 of the next step (0 for preprocessing, which rides with
  // the first encoder piece).
  double next_flops() const { return encode_ ? encode_->encoding.next_flops() : 0; }
  void cancel() {
    encode_.reset();
    drop_pixels();
  }

  VisionFeatures& features() { return features_; }
  // [prompt length - reused]: each recomputed token's row in features(), -1 for text.
  const std::vector<int64_t>& rows() const { return rows_; }

 private:
  // An image of the recomputed part: its index among the prompt's images and
  // its embeddings once known (from the cache, or encoded by this stage).
  struct Part {
    size_t image;
    std::shared_ptr<const ImageFeatures> features;
  };
  // The encode under way: kept between pieces, dropped when it ends.
  struct Encode {
    std::vector<size_t> parts;        // the parts to encode (indexes into parts_), one per distinct image
    std::vector<PixelValues> pixels;  // [parts] preprocessed; read by the first encoder piece, then freed
    VisionEncoding encoding;
  };

  void cache_encoded(VisionFeatures out, int merge, ImageEmbeddingCache& cache);
  void gather();

  void drop_pixels();

  PreparedPrompt* prompt_;
  PreprocessOptions options_;
  std::vector<Part> parts_;
  std::unique_ptr<Encode> encode_;
  bool started_ = false;
  VisionFeatures features_;
  std::vector<int64_t> rows_;
};

}  // namespace qvl
