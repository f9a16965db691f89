// Format detection, size limits and dispatch to the per-format decoders.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "image/decoders.h"
#include "util/error.h"

namespace qvl {

ImageFormat sniff_format(std::span<const uint8_t> b) {
  auto starts = [&](const char* magic, size_t n, size_t at = 0) {
    return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
  };
  if (starts("\xFF\xD8\xFF", 3)) return ImageFormat::Jpeg;
  if (starts("\x89PNG\r\n\x1A\n", 8)) return ImageFormat::Png;
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) return ImageFormat::Gif;
  if (starts("RIFF", 4) && starts("WEBP", 4, 8)) return ImageFormat::WebP;
  if (starts("BM", 2)) return ImageFormat::Bmp;
  return ImageFormat::Unknown;
}

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Gif: return "GIF";
    case ImageFormat::WebP: return "WebP";
    case ImageFormat::Bmp: return "BMP";
    case ImageFormat::Unknown: break;
  }
  return "unknown";
}

namespace {

// Names formats a user might plausibly upload that qvl does not read, so the
// error says what the file is rather than only what it is not.
const char* known_unsupported(std::span<const uint8_t> b) {
  auto at = [&](size_t off, const char* magic, size_t n) {
    return b.size() >= off + n && std::memcmp(b.data() + off, magic, n) == 0;
  };
  if (at(0, "II*\0", 4) || at(0, "MM\0*", 4)) return "TIFF";
  if (at(4, "ftypheic", 8) || at(4, "ftypheix", 8) || at(4, "ftypmif1", 8)) return "HEIC";
  if (at(4, "ftypavif", 8)) return "AVIF";
  if (at(0, "\0\0\1\0", 4)) return "ICO";
  if (at(0, "%PDF", 4)) return "PDF";
  if (at(0, "<svg", 4) || at(0, "<?xml", 5)) return "SVG/XML";
  return nullptr;
}

}  // namespace

Image decode_image(std::span<const uint8_t> bytes, const DecodeLimits& limits, const DecodeHint& hint) {
  if (bytes.empty()) fail("image is empty (0 bytes)");
  if (bytes.size() > limits.max_encoded_bytes)
    fail("image is ", bytes.size(), " bytes, over the limit of ", limits.max_encoded_bytes, " bytes");
  switch (sniff_format(bytes)) {
    case ImageFormat::Jpeg: return image_detail::decode_jpeg(bytes, limits, hint);
    case ImageFormat::Png: return image_detail::decode_png(bytes, limits);
    case ImageFormat::Gif: return image_detail::decode_gif(bytes, limits);
    case ImageFormat::WebP: return image_detail::decode_webp(bytes, limits);
    case ImageFormat::Bmp: return image_detail::decode_bmp(bytes, limits);
    case ImageFormat::Unknown: break;
  }
  if (const char* name = known_unsupported(bytes))
    fail("unsupported image format ", name, " (supported: JPEG, PNG, WebP, GIF, BMP)");
  fail("unsupported image format: the first bytes match no JPEG, PNG, WebP, GIF or BMP signature");
}

Image load_image(const std::string& path, const DecodeLimits& limits) {
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("cannot read image ", path, ": it is a directory");
  std::unique_ptr<std::FILE, Closer> f(std::fopen(path.c_str(), "rb"));
  if (!f) fail("cannot open image ", path, ": ", std::strerror(errno));
  if (std::fseek(f.get(), 0, SEEK_END) != 0) fail("cannot seek in image ", path);
  const long size = std::ftell(f.get());
  if (size < 0) fail("cannot read the size of image ", path);
  if (static_cast<unsigned long>(size) > limits.max_encoded_bytes)
    fail("image ", path, " is ", size, " bytes, over the limit of ", limits.max_encoded_bytes, " bytes");
  std::rewind(f.get());
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (size > 0 && std::fread(bytes.data(), 1, bytes.size(), f.get()) != bytes.size())
    fail("cannot read image ", path);
  try {
    return decode_image(bytes, limits);
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
}

namespace image_detail {

void check_dimensions(int64_t width, int64_t height, const DecodeLimits& limits, const char* format) {
  if (width <= 0 || height <= 0) fail(format, " declares an empty image (", width, "x", height, ")");
  // 1 << 30 per side keeps every width*3 and row arithmetic inside int/size_t
  // whatever the pixel limit is set to.
  if (width > (1 << 30) || height > (1 << 30) ||
      static_cast<uint64_t>(width) * static_cast<uint64_t>(height) > limits.max_decoded_pixels)
    fail(format, " image is ", width, "x", height, " = ", static_cast<uint64_t>(width) * static_cast<uint64_t>(height),
         " pixels, over the limit of ", limits.max_decoded_pixels, " pixels");
}

void reserve_memory(const DecodeLimits& limits, uint64_t peak_bytes) {
  if (limits.budget) limits.budget->reserve(peak_bytes);
}

DecodeDeadline::DecodeDeadline(const DecodeLimits& limits) : seconds_(limits.max_seconds) {
  const auto now = std::chrono::steady_clock::now();
  at_ = seconds_ > 0 ? now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(seconds_))
                     : std::chrono::steady_clock::time_point::max();
}

bool DecodeDeadline::passed() const { return std::chrono::steady_clock::now() > at_; }

void composite_on_white(const uint8_t* src, int channels, size_t pixels, uint8_t* rgb) {
  if (channels == 4) {
    for (size_t i = 0; i < pixels; ++i, src += 4, rgb += 3) {
      rgb[0] = blend_white(src[0], src[3]);
      rgb[1] = blend_white(src[1], src[3]);
      rgb[2] = blend_white(src[2], src[3]);
    }
  } else {  // grey + alpha
    for (size_t i = 0; i < pixels; ++i, src += 2, rgb += 3) rgb[0] = rgb[1] = rgb[2] = blend_white(src[0], src[1]);
  }
}

}  // namespace image_detail
}  // namespace qvl
