// smart_resize of transformers' Qwen2-VL image processor (also used by
// Qwen3-VL): round each side to a multiple of `factor`, then scale both sides
// together into [min_pixels, max_pixels].
#include <algorithm>
#include <cfenv>
#include <cmath>

#include "image/preprocess.h"
#include "util/error.h"

namespace qvl {
namespace {

// Python's round(): nearest, ties to even (14.5 -> 14), which is what
// nearbyint does under the default rounding mode.
int64_t python_round(double x) {
  return static_cast<int64_t>(std::nearbyint(x));
}

}  // namespace

ResizedSize smart_resize(int height, int width, int factor, int64_t min_pixels, int64_t max_pixels) {
  if (height <= 0 || width <= 0) fail("smart_resize: image size ", width, "x", height, " is not positive");
  if (factor <= 0) fail("smart_resize: factor ", factor, " is not positive");
  // min_pixels > max_pixels is not an error: as in transformers, the
  // max_pixels branch is tested first and wins (a per-request max_pixels
  // below the config's min_pixels simply caps the size).
  const double ratio = static_cast<double>(std::max(height, width)) / std::min(height, width);
  if (ratio > 200)
    fail("image aspect ratio must be at most 200, got ", ratio, " (", width, "x", height, ")");
  const double h = height, w = width, f = factor;
  int64_t h_bar = python_round(h / f) * factor;
  int64_t w_bar = python_round(w / f) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
    h_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  if (h_bar <= 0 || w_bar <= 0 || h_bar > (1 << 20) || w_bar > (1 << 20))
    fail("smart_resize: ", width, "x", height, " gives an unusable size ", w_bar, "x", h_bar);
  return ResizedSize{static_cast<int>(h_bar), static_cast<int>(w_bar)};
}

}  // namespace qvl
