// EXIF orientation: read the tag from a JPEG's APP1 segment (a TIFF
// structure; only IFD0's tag 0x0112 matters) and turn the pixels upright.
//
// Deliberate difference from the reference: the Hugging Face processor (and
// PIL's Image.open) ignores EXIF orientation, so a phone photo taken in
// portrait reaches the model sideways. qvl shows the model what the person
// sees; none of the golden fixtures carry the tag, so goldens are unaffected.
#include <cstring>

#include "image/decoders.h"

namespace qvl::image_detail {

int exif_orientation(std::span<const uint8_t> app1) {
  if (app1.size() < 6 + 8 || std::memcmp(app1.data(), "Exif\0\0", 6) != 0) return 1;
  const uint8_t* t = app1.data() + 6;  // TIFF header; offsets below are relative to it
  const size_t n = app1.size() - 6;
  bool little;
  if (t[0] == 'I' && t[1] == 'I') little = true;
  else if (t[0] == 'M' && t[1] == 'M') little = false;
  else return 1;
  auto u16 = [&](size_t off) -> uint32_t {
    return little ? t[off] | (t[off + 1] << 8) : (t[off] << 8) | t[off + 1];
  };
  auto u32 = [&](size_t off) -> uint32_t {
    return little ? u16(off) | (u16(off + 2) << 16) : (u16(off) << 16) | u16(off + 2);
  };
  if (u16(2) != 42) return 1;
  const size_t ifd = u32(4);
  if (ifd > n || n - ifd < 2) return 1;
  const size_t entries = u16(ifd);
  for (size_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + 12 * i;
    if (e > n || n - e < 12) return 1;
    if (u16(e) != 0x0112) continue;
    // type SHORT (3), count 1: the value sits in the first 2 bytes of the field
    if (u16(e + 2) != 3 || u32(e + 4) < 1) return 1;
    const uint32_t v = u16(e + 8);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
  }
  return 1;
}

Image apply_orientation(Image img, int orientation) {
  if (orientation <= 1 || orientation > 8) return img;
  const int w = img.width, h = img.height;
  const bool swap = orientation >= 5;  // 5..8 exchange width and height
  Image out;
  out.width = swap ? h : w;
  out.height = swap ? w : h;
  if (img.full_width > 0) {
    out.full_width = swap ? img.full_height : img.full_width;
    out.full_height = swap ? img.full_width : img.full_height;
  }
  out.scale_denom = img.scale_denom;
  out.rgb.resize(img.rgb.size());
  const int ow = out.width, oh = out.height;
  for (int y = 0; y < oh; ++y) {
    uint8_t* dst = out.rgb.data() + static_cast<size_t>(y) * ow * 3;
    for (int x = 0; x < ow; ++x, dst += 3) {
      int sx, sy;  // the stored pixel that shows at (x, y)
      switch (orientation) {
        case 2: sx = w - 1 - x; sy = y; break;           // mirrored
        case 3: sx = w - 1 - x; sy = h - 1 - y; break;   // rotated 180
        case 4: sx = x; sy = h - 1 - y; break;           // flipped vertically
        case 5: sx = y; sy = x; break;                   // transposed
        case 6: sx = y; sy = h - 1 - x; break;           // needs 90 degrees clockwise
        case 7: sx = w - 1 - y; sy = h - 1 - x; break;   // transverse
        default: sx = w - 1 - y; sy = x; break;          // 8: needs 90 counter-clockwise
      }
      std::memcpy(dst, img.rgb.data() + (static_cast<size_t>(sy) * w + sx) * 3, 3);
    }
  }
  return out;
}

}  // namespace qvl::image_detail
