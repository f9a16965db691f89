#include "image/video_preprocess.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "util/error.h"

namespace qvl {

ResizedSize video_smart_resize(int num_frames, int height, int width, int temporal_factor, int factor,
                               int64_t min_pixels, int64_t max_pixels) {
  if (num_frames <= 0) fail("video smart_resize: no frames");
  if (height < factor || width < factor)
    fail("video frames are ", width, "x", height, ": each side must be at least ", factor, " pixels");
  const double ratio = static_cast<double>(std::max(height, width)) / std::min(height, width);
  if (ratio > 200) fail("video aspect ratio must be at most 200, got ", ratio, " (", width, "x", height, ")");
  const double h = height, w = width, f = factor, t = num_frames;
  // Python's round(): half to even, nearbyint in the default rounding mode.
  int64_t h_bar = static_cast<int64_t>(std::nearbyint(h / f)) * factor;
  int64_t w_bar = static_cast<int64_t>(std::nearbyint(w / f)) * factor;
  const int64_t t_bar = static_cast<int64_t>(std::nearbyint(t / temporal_factor)) * temporal_factor;
  if (t_bar * h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(t * h * w / static_cast<double>(max_pixels));
    h_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (t_bar * h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (t * h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  if (h_bar > (1 << 20) || w_bar > (1 << 20))
    fail("video smart_resize: ", width, "x", height, " gives an unusable size ", w_bar, "x", h_bar);
  return {static_cast<int>(h_bar), static_cast<int>(w_bar)};
}

ResizedSize video_preprocess_size(int num_frames, int height, int width, const PreprocessorConfig& config,
                                  const PreprocessOptions& options) {
  const int64_t min_pixels = options.min_pixels > 0 ? options.min_pixels : config.min_pixels;
  const int64_t max_pixels = options.max_pixels > 0 ? options.max_pixels : config.max_pixels;
  return video_smart_resize(num_frames, height, width, config.temporal_patch_size, config.factor(), min_pixels,
                            max_pixels);
}

PreprocessOptions video_options_within_tokens(int num_frames, int height, int width,
                                              const PreprocessorConfig& config, PreprocessOptions options,
                                              int64_t vision_tokens) {
  const int tp = config.temporal_patch_size, f = config.factor();
  const int64_t groups = (num_frames + tp - 1) / tp;
  if (vision_tokens < groups)
    fail("a video of ", num_frames, " frames (", groups, " temporal groups) cannot fit in ", vision_tokens,
         " vision tokens: each group takes at least one");
  auto tokens = [&](const PreprocessOptions& o) {
    const ResizedSize s = video_preprocess_size(num_frames, height, width, config, o);
    return groups * (s.height / f) * (s.width / f);
  };
  if (tokens(options) <= vision_tokens) return options;
  // smart_resize bounds t_bar·h·w (unscaled, t_bar = n rounded half to even
  // to a multiple of tp) or n·h·w (scaled) by max_pixels, and a token is
  // f² pixels of one group of tp frames: this budget keeps both branches
  // within `vision_tokens` for any n.
  const int64_t t_bar = static_cast<int64_t>(std::nearbyint(static_cast<double>(num_frames) / tp)) * tp;
  const int64_t frames = std::max<int64_t>(1, std::min<int64_t>(num_frames, t_bar));
  const int64_t current = options.max_pixels > 0 ? options.max_pixels : config.max_pixels;
  options.max_pixels = std::min(current, vision_tokens * int64_t{f} * f * frames / groups);
  options.min_pixels = std::min(options.min_pixels, options.max_pixels);
  // A side floored at f (an extreme aspect ratio) can still overshoot:
  // shrink until it fits; one token per group always does.
  for (int64_t now = tokens(options), i = 0; i < 64 && now > vision_tokens; ++i, now = tokens(options)) {
    options.max_pixels = std::max<int64_t>(1, std::min(options.max_pixels * 15 / 16,
                                                       options.max_pixels * vision_tokens / now));
    options.min_pixels = std::min(options.min_pixels, options.max_pixels);
  }
  if (tokens(options) > vision_tokens)
    fail("a ", width, "x", height, " video of ", num_frames, " frames cannot be resized to fit in ", vision_tokens,
         " vision tokens");
  return options;
}

PixelValues preprocess_video(std::span<const Image> frames, const PreprocessorConfig& config,
                             const PreprocessOptions& options) {
  const int p = config.patch_size, m = config.merge_size, tp = config.temporal_patch_size;
  if (frames.empty()) fail("preprocess_video: no frames");
  const int src_w = frames[0].width, src_h = frames[0].height;
  for (const Image& f : frames)
    if (f.width != src_w || f.height != src_h || f.rgb.size() != static_cast<size_t>(src_w) * src_h * 3)
      fail("preprocess_video: frames differ in size (", f.width, "x", f.height, " after ", src_w, "x", src_h, ")");
  const int n = static_cast<int>(frames.size());
  const ResizedSize size = video_preprocess_size(n, src_h, src_w, config, options);

  std::vector<Image> resized;
  if (size.width != src_w || size.height != src_h) {
    resized.reserve(frames.size());
    for (const Image& f : frames) resized.push_back(resize_bicubic(f, size.width, size.height));
    frames = resized;
  }

  // The video processor fuses rescale and normalise (transformers
  // image_processing_utils_fast._fuse_mean_std_and_rescale_factor): mean and
  // std scaled by 1/rescale_factor, then (x - mean') / std' in float32.
  std::array<std::array<float, 256>, 3> lut;
  for (int c = 0; c < 3; ++c) {
    const float mean = static_cast<float>(config.image_mean[c] / config.rescale_factor);
    const float std_dev = static_cast<float>(config.image_std[c] / config.rescale_factor);
    for (int v = 0; v < 256; ++v) lut[c][v] = (static_cast<float>(v) - mean) / std_dev;
  }

  PixelValues out;
  out.resized_width = size.width;
  out.resized_height = size.height;
  out.grid_t = (n + tp - 1) / tp;
  out.grid_h = size.height / p;
  out.grid_w = size.width / p;
  out.num_patches = int64_t{out.grid_t} * out.grid_h * out.grid_w;
  out.patch_dim = 3 * tp * p * p;
  out.data.resize(static_cast<size_t>(out.num_patches) * out.patch_dim);
  const int W = size.width;
  float* dst = out.data.data();
  for (int g = 0; g < out.grid_t; ++g)
    for (int bh = 0; bh < out.grid_h / m; ++bh)
      for (int bw = 0; bw < out.grid_w / m; ++bw)
        for (int mh = 0; mh < m; ++mh)
          for (int mw = 0; mw < m; ++mw) {
            const int y0 = (bh * m + mh) * p, x0 = (bw * m + mw) * p;
            for (int c = 0; c < 3; ++c)
              for (int t = 0; t < tp; ++t) {
                // An odd count repeats the last frame in the last pair.
                const Image& f = frames[static_cast<size_t>(std::min(g * tp + t, n - 1))];
                for (int y = 0; y < p; ++y) {
                  const uint8_t* row = f.rgb.data() + (static_cast<size_t>(y0 + y) * W + x0) * 3 + c;
                  for (int x = 0; x < p; ++x) *dst++ = lut[c][row[3 * x]];
                }
              }
          }
  return out;
}

}  // namespace qvl
