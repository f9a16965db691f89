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
  // The size the file declares (after EXIF orientation) when the pixels were
  // decoded smaller than that (JPEG DCT scaling, see DecodeHint); 0 otherwise.
  // preprocess() sizes its target from these so the grid does not change.
  int full_width = 0;
  int full_height = 0;
  int scale_denom = 1;  // decoded at 1/scale_denom of the full size
};

// Where a decoder asks for the memory an image will take before it allocates
// any of it: once per image, with the bytes its buffers peak at, computed
// from the dimensions the header declares. The server's admission waits for
// room there or refuses by throwing (an exception that is not qvl::Error,
// which decode_image lets through as it is).
class DecodeBudget {
 public:
  virtual ~DecodeBudget() = default;
  virtual void reserve(uint64_t peak_bytes) = 0;
};

struct DecodeLimits {
  size_t max_encoded_bytes = 64u << 20;      // refuse larger uploads outright
  uint64_t max_decoded_pixels = 100'000'000;  // width × height, checked from the header
  // A progressive JPEG re-reads its whole coefficient buffer for each scan,
  // so a few KB of tiny scans make a CPU bomb; encoders write about 10
  // (libjpeg's jpeg_simple_progression script: 10 for YCbCr colour).
  int max_jpeg_scans = 64;
  // Wall time one decode may take (0: no limit). JPEG checks it in libjpeg's
  // progress monitor, GIF and PNG after each row; WebP and BMP decode in
  // time linear in the pixels, which max_decoded_pixels bounds.
  double max_seconds = 0;
  DecodeBudget* budget = nullptr;  // none: no accounting (the CLI, tests)
};

// Lets a JPEG be decoded at 1/2, 1/4 or 1/8 scale in the DCT domain when the
// preprocessing target (smart_resize of the declared size with these
// parameters) is much smaller than the photo. The decoded image keeps at least
// `min_ratio` times the target on both sides, so the bicubic resize that
// follows still downsamples; bench/image_bench measures the difference against
// full-resolution decoding. factor 0: always decode at full resolution.
struct DecodeHint {
  int factor = 0;  // patch_size * merge_size
  int64_t min_pixels = 0;
  int64_t max_pixels = 0;
  double min_ratio = 3.0;
};

enum class ImageFormat { Unknown, Jpeg, Png, Gif, WebP, Bmp };
// From the magic bytes, never the file name.
ImageFormat sniff_format(std::span<const uint8_t> bytes);
const char* format_name(ImageFormat f);

// Throws qvl::Error with a one-line reason ("truncated PNG", "unsupported
// image format", "image is 100000x100000 = ... pixels, over the limit ...").
// JPEG EXIF orientation is applied; alpha is composited over white.
Image decode_image(std::span<const uint8_t> bytes, const DecodeLimits& limits = {}, const DecodeHint& hint = {});
Image load_image(const std::string& path, const DecodeLimits& limits = {});

}  // namespace qvl
