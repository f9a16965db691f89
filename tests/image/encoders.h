// Writers for test inputs, built with the same libraries the decoders use,
// so every variant (bit depth, colour type, EXIF, CMYK...) is made in the test
// rather than committed as a binary.
#pragma once

#include <cstdio>
#include <jpeglib.h>
#include <png.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace qvl_test {

// PNG of any colour type / bit depth; `rows` holds packed big-endian samples.
struct PngSpec {
  int width = 0, height = 0, bit_depth = 8, color_type = PNG_COLOR_TYPE_RGB;
  bool interlace = false;
  std::vector<png_color> palette;
  std::vector<uint8_t> trns;  // palette alpha, or
  png_color_16 trns_color{};  // grey/RGB colour key
  bool has_trns_color = false;
};

inline void png_append(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

inline std::vector<uint8_t> encode_png(const PngSpec& s, const std::vector<std::vector<uint8_t>>& rows) {
  std::vector<uint8_t> out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("png write failed");
  }
  png_set_write_fn(png, &out, png_append, nullptr);
  png_set_IHDR(png, info, s.width, s.height, s.bit_depth, s.color_type,
               s.interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!s.palette.empty()) png_set_PLTE(png, info, s.palette.data(), static_cast<int>(s.palette.size()));
  if (!s.trns.empty()) png_set_tRNS(png, info, s.trns.data(), static_cast<int>(s.trns.size()), nullptr);
  if (s.has_trns_color) png_set_tRNS(png, info, nullptr, 0, &s.trns_color);
  png_write_info(png, info);
  std::vector<png_bytep> ptrs;
  for (const auto& r : rows) ptrs.push_back(const_cast<png_bytep>(r.data()));
  png_write_image(png, ptrs.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

// A PNG whose IHDR declares width x height, with a tiny (invalid-sized) IDAT:
// the decompression-bomb shape. CRCs are right so only the size can stop it.
inline std::vector<uint8_t> png_header_only(uint32_t width, uint32_t height) {
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  auto be32 = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto chunk = [&](const char* type, const std::vector<uint8_t>& data) {
    be32(static_cast<uint32_t>(data.size()));
    const size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    be32(static_cast<uint32_t>(crc32(0, out.data() + start, static_cast<uInt>(out.size() - start))));
  };
  std::vector<uint8_t> ihdr;
  for (uint32_t v : {width, height})
    for (int i = 3; i >= 0; --i) ihdr.push_back(static_cast<uint8_t>(v >> (8 * i)));
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8-bit RGB
  chunk("IHDR", ihdr);
  chunk("IDAT", {0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01});
  chunk("IEND", {});
  return out;
}

// JPEG from interleaved samples (RGB, grey or CMYK as `space` says).
inline std::vector<uint8_t> encode_jpeg(const std::vector<uint8_t>& pixels, int width, int height, J_COLOR_SPACE space,
                                        int components, int quality = 95, bool progressive = false,
                                        J_COLOR_SPACE stored_as = JCS_UNKNOWN) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = width;
  c.image_height = height;
  c.input_components = components;
  c.in_color_space = space;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, quality, TRUE);
  if (progressive) jpeg_simple_progression(&c);
  if (stored_as != JCS_UNKNOWN) jpeg_set_colorspace(&c, stored_as);  // e.g. YCCK for CMYK input
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data() + size_t(c.next_scanline) * width * components);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<uint8_t> out(mem, mem + size);
  std::free(mem);
  return out;
}

// Inserts an APP1 "Exif" segment holding IFD0 with one Orientation entry
// right after SOI. `big_endian` picks the "MM" byte order.
inline std::vector<uint8_t> with_exif_orientation(const std::vector<uint8_t>& jpeg, int orientation, bool big_endian) {
  std::vector<uint8_t> tiff;
  auto u16 = [&](uint32_t v) {
    if (big_endian) tiff.insert(tiff.end(), {uint8_t(v >> 8), uint8_t(v)});
    else tiff.insert(tiff.end(), {uint8_t(v), uint8_t(v >> 8)});
  };
  auto u32 = [&](uint32_t v) {
    if (big_endian) u16(v >> 16), u16(v & 0xFFFF);
    else u16(v & 0xFFFF), u16(v >> 16);
  };
  tiff.push_back(big_endian ? 'M' : 'I');
  tiff.push_back(big_endian ? 'M' : 'I');
  u16(42);
  u32(8);    // IFD0 right after the header
  u16(2);    // two entries: an unrelated tag first, then Orientation
  u16(0x010F), u16(2), u32(4), tiff.insert(tiff.end(), {'A', 'B', 'C', 0});  // Make, ASCII, inline
  u16(0x0112), u16(3), u32(1), u16(static_cast<uint32_t>(orientation)), u16(0);
  u32(0);    // no next IFD
  std::vector<uint8_t> payload = {'E', 'x', 'i', 'f', 0, 0};
  payload.insert(payload.end(), tiff.begin(), tiff.end());
  const size_t len = payload.size() + 2;
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);  // SOI
  out.insert(out.end(), {0xFF, 0xE1, uint8_t(len >> 8), uint8_t(len)});
  out.insert(out.end(), payload.begin(), payload.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

}  // namespace qvl_test
