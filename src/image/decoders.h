// Internal to src/image: one decoder per format and the helpers they share.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>

#include "image/image.h"

namespace qvl::image_detail {

Image decode_jpeg(std::span<const uint8_t> bytes, const DecodeLimits& limits, const DecodeHint& hint);
Image decode_png(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Image decode_gif(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Image decode_webp(std::span<const uint8_t> bytes, const DecodeLimits& limits);
Image decode_bmp(std::span<const uint8_t> bytes, const DecodeLimits& limits);

// Throws unless 0 < width, height and width*height <= the limit; called with
// the header's dimensions before any pixel buffer is allocated.
void check_dimensions(int64_t width, int64_t height, const DecodeLimits& limits, const char* format);

// Asks limits.budget (if any) for `peak_bytes` before the buffers are allocated.
void reserve_memory(const DecodeLimits& limits, uint64_t peak_bytes);

// The moment limits.max_seconds runs out, from the decode's start.
class DecodeDeadline {
 public:
  explicit DecodeDeadline(const DecodeLimits& limits);
  bool passed() const;
  double seconds() const { return seconds_; }

 private:
  double seconds_;
  std::chrono::steady_clock::time_point at_;
};

// RGBA (or grey+alpha with `channels` 2) -> RGB over a white background,
// rounding as PIL's paste-with-mask does (qwen-vl-utils composites that way):
// out = round((src * a + 255 * (255 - a)) / 255).
void composite_on_white(const uint8_t* src, int channels, size_t pixels, uint8_t* rgb);

inline uint8_t blend_white(uint8_t v, uint8_t a) {
  const uint32_t t = uint32_t(v) * a + 255u * (255u - a) + 128u;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);  // exact round(t / 255)
}

// The EXIF orientation (1..8) in a JPEG APP1 payload ("Exif\0\0" + TIFF);
// 1 when absent or malformed: a broken EXIF block never fails a decode.
int exif_orientation(std::span<const uint8_t> app1);

// Rotates/flips so that the image appears as the camera's viewer showed it.
Image apply_orientation(Image image, int orientation);

}  // namespace qvl::image_detail
