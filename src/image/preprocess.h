// The Qwen3-VL image processor: smart_resize, PIL-exact bicubic resize,
// rescale + normalize, temporal duplication and merge-window patch order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "image/image.h"
#include "io/model_config.h"

namespace qvl {

struct ResizedSize {
  int height = 0;
  int width = 0;
};

// Height and width rounded to multiples of `factor` (Python round: half to
// even) with min_pixels <= h*w <= max_pixels, aspect ratio kept as closely as
// the transformers Qwen2-VL processor keeps it. Throws on aspect ratio > 200.
ResizedSize smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels);

// PIL Image.resize(BICUBIC) on uint8 RGB, bit-exact (fixed point, horizontal
// then vertical pass, clip + round after each pass). A source extent (PIL's
// `box` right/bottom edge) other than the image size maps only that many
// source pixels onto the output; 0 means the whole image.
Image resize_bicubic(const Image& src, int width, int height, double src_extent_w = 0, double src_extent_h = 0);

struct PixelValues {
  std::vector<float> data;  // [num_patches, patch_dim], merge-window row order
  int64_t num_patches = 0;
  int patch_dim = 0;        // channels * temporal_patch_size * patch_size^2
  int grid_t = 1, grid_h = 0, grid_w = 0;  // in patches
  int resized_width = 0, resized_height = 0;
  int num_tokens(int merge_size) const { return grid_t * grid_h * grid_w / (merge_size * merge_size); }
};

struct PreprocessOptions {
  int64_t min_pixels = 0;  // 0: the preprocessor config's
  int64_t max_pixels = 0;  // 0: the preprocessor config's
};

// The size preprocess() resizes `image` to (checks included), without
// touching the pixels: enough to count an image's tokens.
ResizedSize preprocess_size(const Image& image, const PreprocessorConfig& config, const PreprocessOptions& options = {});
PixelValues preprocess(const Image& image, const PreprocessorConfig& config, const PreprocessOptions& options = {});

// decode_image + preprocess. With `dct_scaling`, a large JPEG is decoded at a
// reduced scale (DecodeHint): faster, and within the bound bench/image_bench
// reports of the full-resolution result; off, the output is exactly the
// reference processor's.
PixelValues decode_and_preprocess(std::span<const uint8_t> bytes, const PreprocessorConfig& config,
                                  const PreprocessOptions& options = {}, const DecodeLimits& limits = {},
                                  bool dct_scaling = false);

}  // namespace qvl
