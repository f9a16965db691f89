// Decoding user images (JPEG, PNG, WebP, BMP, GIF first frame) into 8-bit RGB,
// safely: sizes are capped before anything large is allocated.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace qvl {

struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3], row-major
};

struct DecodeLimits {
  size_t max_encoded_bytes = 64u << 20;      // refuse larger uploads outright
  uint64_t max_decoded_pixels = 100'000'000;  // width × height, checked from the header
};

// Throws qvl::Error with a one-line reason ("truncated PNG", "unsupported
// image format", "image is 100000x100000 = ... pixels, over the limit ...").
// JPEG EXIF orientation is applied; alpha is composited over white.
Image decode_image(std::span<const uint8_t> bytes, const DecodeLimits& limits = {});
Image load_image(const std::string& path, const DecodeLimits& limits = {});

}  // namespace qvl
