// BMP: no Debian library reads it cheaply (libgd/gdk-pixbuf/ImageMagick would
// each pull a stack of other codecs), so this is a small reader for the
// variants Windows and browsers write: uncompressed 1/4/8-bit palette,
// 16/24/32-bit, and BI_BITFIELDS masks. RLE and embedded JPEG/PNG are refused
// with a clear error. Every offset is checked against the buffer before use.
#include <bit>
#include <cstring>

#include "image/decoders.h"
#include "util/error.h"

namespace qvl::image_detail {
namespace {

uint32_t le16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t le32(const uint8_t* p) { return le16(p) | (le16(p + 2) << 16); }

// Extracts the field selected by `mask` and scales it to 0..255.
struct Channel {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;
  explicit Channel(uint32_t m) : mask(m) {
    if (!m) return;
    shift = std::countr_zero(m);
    max = m >> shift;
  }
  uint8_t get(uint32_t v) const {
    if (!mask) return 255;
    const uint32_t x = (v & mask) >> shift;
    return static_cast<uint8_t>(max == 255 ? x : (x * 255 + max / 2) / max);
  }
};

}  // namespace

Image decode_bmp(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  const uint8_t* b = bytes.data();
  const size_t n = bytes.size();
  if (n < 14 + 4) fail("truncated BMP: ", n, " bytes is shorter than the file header");
  const uint32_t data_offset = le32(b + 10);
  const uint32_t hdr = le32(b + 14);
  if (hdr == 12) fail("unsupported BMP variant: OS/2 1.x header");
  if (hdr < 40 || hdr > 1024) fail("corrupt BMP: info header size ", hdr);
  if (n < 14 + static_cast<size_t>(hdr)) fail("truncated BMP: the info header needs ", 14 + hdr, " bytes, the file has ", n);
  const int32_t width = static_cast<int32_t>(le32(b + 18));
  const int32_t raw_height = static_cast<int32_t>(le32(b + 22));
  const uint32_t bpp = le16(b + 28);
  const uint32_t compression = le32(b + 30);
  uint32_t colors_used = le32(b + 46);
  const bool top_down = raw_height < 0;
  const int64_t height = top_down ? -static_cast<int64_t>(raw_height) : raw_height;
  check_dimensions(width, height, limits, "BMP");

  constexpr uint32_t kRgb = 0, kBitfields = 3, kAlphaBitfields = 6;
  uint32_t masks[4] = {0, 0, 0, 0};  // r, g, b, a
  if (compression == kBitfields || compression == kAlphaBitfields) {
    if (bpp != 16 && bpp != 32) fail("corrupt BMP: bit-field masks with ", bpp, " bits per pixel");
    // Masks follow a 40-byte header, or sit inside a V2+ header at the same place.
    const size_t at = 14 + 40, count = compression == kAlphaBitfields || hdr >= 56 ? 4 : 3;
    if (n < at + 4 * count) fail("truncated BMP: the colour masks are cut off");
    for (size_t i = 0; i < count; ++i) masks[i] = le32(b + at + 4 * i);
  } else if (compression == kRgb) {
    if (bpp == 16) masks[0] = 0x7C00, masks[1] = 0x03E0, masks[2] = 0x001F;
    // 32-bit BI_RGB's fourth byte is padding (often zero): ignore it, as PIL does.
    if (bpp == 32) masks[0] = 0xFF0000, masks[1] = 0xFF00, masks[2] = 0xFF;
  } else {
    fail("unsupported BMP compression ", compression, " (only uncompressed and bit-field BMPs are read)");
  }
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
    fail("unsupported BMP: ", bpp, " bits per pixel");

  // Palette: after the info header (and the masks of a 40-byte BI_BITFIELDS header).
  uint8_t palette[256][3] = {};
  uint32_t palette_size = 0;
  if (bpp <= 8) {
    const uint32_t max_colors = 1u << bpp;
    palette_size = colors_used == 0 || colors_used > max_colors ? max_colors : colors_used;
    const size_t at = 14 + static_cast<size_t>(hdr);
    const size_t avail = n > at ? (n - at) / 4 : 0;
    if (avail < palette_size) {
      if (avail == 0) fail("truncated BMP: the palette is missing");
      palette_size = static_cast<uint32_t>(avail);
    }
    for (uint32_t i = 0; i < palette_size; ++i) {
      const uint8_t* e = b + at + 4 * i;  // B, G, R, reserved
      palette[i][0] = e[2], palette[i][1] = e[1], palette[i][2] = e[0];
    }
  }

  const size_t w = static_cast<size_t>(width), h = static_cast<size_t>(height);
  const size_t stride = (w * bpp + 31) / 32 * 4;
  if (data_offset > n || (n - data_offset) / stride < h)
    fail("truncated BMP: ", h, " rows of ", stride, " bytes from byte ", data_offset, " need ",
         data_offset + stride * h, " bytes, the file has ", n);

  reserve_memory(limits, uint64_t{w} * h * 3);
  Image img;
  img.width = width;
  img.height = static_cast<int>(height);
  img.rgb.resize(w * h * 3);
  const Channel r(masks[0]), g(masks[1]), bl(masks[2]), a(bpp == 32 ? masks[3] : 0);
  for (size_t y = 0; y < h; ++y) {
    const uint8_t* row = b + data_offset + (top_down ? y : h - 1 - y) * stride;
    uint8_t* out = img.rgb.data() + y * w * 3;
    for (size_t x = 0; x < w; ++x, out += 3) {
      if (bpp <= 8) {
        const size_t bit = x * bpp;
        const uint32_t idx = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        if (idx < palette_size) std::memcpy(out, palette[idx], 3);
        else out[0] = out[1] = out[2] = 0;
      } else if (bpp == 24) {
        out[0] = row[3 * x + 2], out[1] = row[3 * x + 1], out[2] = row[3 * x];
      } else {
        const uint32_t v = bpp == 16 ? le16(row + 2 * x) : le32(row + 4 * x);
        out[0] = r.get(v), out[1] = g.get(v), out[2] = bl.get(v);
        if (a.mask) {
          const uint8_t alpha = a.get(v);
          for (int c = 0; c < 3; ++c) out[c] = blend_white(out[c], alpha);
        }
      }
    }
  }
  return img;
}

}  // namespace qvl::image_detail
