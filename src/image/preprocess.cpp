// The Qwen2-VL/Qwen3-VL image processor after decoding: smart_resize, PIL
// bicubic, rescale + normalize, the still frame repeated temporal_patch_size
// times, and the patch order of transformers' Qwen2VLImageProcessor
// (reshape [t, tp, c, gh/m, m, p, gw/m, m, p] then transpose to
// [t, gh/m, gw/m, m, m, c, tp, p, p]).
#include <array>
#include <cmath>

#include "image/preprocess.h"
#include "util/error.h"

namespace qvl {

ResizedSize preprocess_size(const Image& image, const PreprocessorConfig& config, const PreprocessOptions& options) {
  const int p = config.patch_size, m = config.merge_size, tp = config.temporal_patch_size;
  if (p <= 0 || m <= 0 || tp <= 0)
    fail("preprocess: patch_size ", p, ", merge_size ", m, ", temporal_patch_size ", tp, " must be positive");
  if (image.width <= 0 || image.height <= 0 ||
      image.rgb.size() != static_cast<size_t>(image.width) * image.height * 3)
    fail("preprocess: image ", image.width, "x", image.height, " has ", image.rgb.size(), " bytes, not width*height*3");
  const int64_t min_pixels = options.min_pixels > 0 ? options.min_pixels : config.min_pixels;
  const int64_t max_pixels = options.max_pixels > 0 ? options.max_pixels : config.max_pixels;
  if (config.do_resize && max_pixels <= 0)
    fail("preprocess: max_pixels is not set (preprocessor_config.json size.longest_edge / max_pixels)");

  // An image decoded with DCT scaling keeps the size the file declares: the
  // target must be the one the full-resolution image would get.
  const int src_w = image.full_width > 0 ? image.full_width : image.width;
  const int src_h = image.full_height > 0 ? image.full_height : image.height;
  ResizedSize size{src_h, src_w};
  if (config.do_resize) size = smart_resize(src_h, src_w, config.factor(), min_pixels, max_pixels);
  if (size.height % (p * m) != 0 || size.width % (p * m) != 0)
    fail("preprocess: resized size ", size.width, "x", size.height, " is not a multiple of patch_size*merge_size = ", p * m);
  return size;
}

PixelValues preprocess(const Image& image, const PreprocessorConfig& config, const PreprocessOptions& options) {
  const int p = config.patch_size, m = config.merge_size, tp = config.temporal_patch_size;
  const ResizedSize size = preprocess_size(image, config, options);
  const int src_w = image.full_width > 0 ? image.full_width : image.width;
  const int src_h = image.full_height > 0 ? image.full_height : image.height;

  Image resized_storage;
  const Image* px = &image;
  // A DCT-scaled decode has ceil(full / d) pixels, the last one partly
  // padding: map exactly full / d of them so the geometry matches the
  // full-resolution path.
  const double extent_w = image.scale_denom > 1 ? static_cast<double>(src_w) / image.scale_denom : 0;
  const double extent_h = image.scale_denom > 1 ? static_cast<double>(src_h) / image.scale_denom : 0;
  if (size.width != image.width || size.height != image.height || image.scale_denom > 1) {
    resized_storage = resize_bicubic(image, size.width, size.height, extent_w, extent_h);
    px = &resized_storage;
  }

  // Per channel and byte value: float32(float64(x) * rescale_factor), then
  // (v - mean) / std in float32, as the reference computes it.
  std::array<std::array<float, 256>, 3> lut;
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      float x = config.do_rescale ? static_cast<float>(static_cast<double>(v) * config.rescale_factor) : static_cast<float>(v);
      if (config.do_normalize) x = (x - config.image_mean[c]) / config.image_std[c];
      lut[c][v] = x;
    }
  }

  PixelValues out;
  out.resized_width = size.width;
  out.resized_height = size.height;
  out.grid_t = 1;
  out.grid_h = size.height / p;
  out.grid_w = size.width / p;
  out.num_patches = static_cast<int64_t>(out.grid_h) * out.grid_w;
  out.patch_dim = 3 * tp * p * p;
  out.data.resize(static_cast<size_t>(out.num_patches) * out.patch_dim);

  const int W = size.width;
  const uint8_t* rgb = px->rgb.data();
  float* dst = out.data.data();
  for (int bh = 0; bh < out.grid_h / m; ++bh) {
    for (int bw = 0; bw < out.grid_w / m; ++bw) {
      for (int mh = 0; mh < m; ++mh) {
        for (int mw = 0; mw < m; ++mw) {
          const int y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
          for (int c = 0; c < 3; ++c) {
            // frame 0 from the pixels, the other temporal frames are copies
            float* frame0 = dst;
            for (int y = 0; y < p; ++y) {
              const uint8_t* row = rgb + (static_cast<size_t>(y0 + y) * W + x0) * 3 + c;
              for (int x = 0; x < p; ++x) *dst++ = lut[c][row[3 * x]];
            }
            for (int t = 1; t < tp; ++t) {
              std::copy(frame0, frame0 + p * p, dst);
              dst += p * p;
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace qvl

namespace qvl {

PixelValues decode_and_preprocess(std::span<const uint8_t> bytes, const PreprocessorConfig& config,
                                  const PreprocessOptions& options, const DecodeLimits& limits, bool dct_scaling) {
  DecodeHint hint;
  if (dct_scaling && config.do_resize) {
    hint.factor = config.factor();
    hint.min_pixels = options.min_pixels > 0 ? options.min_pixels : config.min_pixels;
    hint.max_pixels = options.max_pixels > 0 ? options.max_pixels : config.max_pixels;
  }
  return preprocess(decode_image(bytes, limits, hint), config, options);
}

}  // namespace qvl
