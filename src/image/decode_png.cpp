// PNG via libpng: every bit depth and colour type, tRNS, interlacing.
// libpng reports errors by longjmp; each function that calls setjmp holds only
// trivially destructible locals, and all C++ objects live in decode_png, so a
// longjmp never skips a destructor. The png structs are freed by a guard.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <vector>

#include "image/decoders.h"
#include "util/error.h"

namespace qvl::image_detail {
namespace {

struct Reader {
  const uint8_t* data;
  size_t size;
  size_t pos;
  bool truncated;
  char message[192];
  const DecodeDeadline* deadline;
  bool over_time;
};

void read_fn(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) {
    r->truncated = true;
    png_error(png, "truncated");
  }
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

void error_fn(png_structp png, png_const_charp msg) {
  auto* r = static_cast<Reader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof r->message, "%s", msg);
  png_longjmp(png, 1);
}

void warning_fn(png_structp, png_const_charp) {}

// Called after every row of every pass (Adam7 makes seven), within
// png_read_image: the place to stop a decode that runs out of time.
void row_done(png_structp png, png_uint_32, int) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (r->deadline->passed()) {
    r->over_time = true;
    png_error(png, "out of time");
  }
}  // ancillary-chunk problems: ignored, as browsers do

struct Header {
  png_uint_32 width, height;
  int channels;  // after the transforms: 3 (RGB), 4 (RGBA), or 2 (grey+alpha)
  int passes;
};

// Returns false on a libpng error (message in the Reader).
bool read_header(png_structp png, png_infop info, Header* h) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  h->width = png_get_image_width(png, info);
  h->height = png_get_image_height(png, info);
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  // Palette -> RGB, grey < 8 bits -> 8, tRNS -> an alpha channel.
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  // 16 -> 8 bits keeps the high byte, as PIL does for 16-bit RGB(A). (PIL clips
  // 16-bit grey to 255 instead of scaling it, which whitens the image; we take
  // the high byte there too, deliberately.)
  if (depth == 16) png_set_strip_16(png);
  const bool grey = !(color & PNG_COLOR_MASK_COLOR) && color != PNG_COLOR_TYPE_PALETTE;
  const bool alpha = (color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS);
  // Grey without alpha -> RGB here; grey+alpha is composited by us (2 -> 3).
  if (grey && !alpha) png_set_gray_to_rgb(png);
  h->passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  h->channels = png_get_channels(png, info);
  return true;
}

bool read_pixels(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

// The chunks after the image data (text, time, IEND) cannot change a pixel; a
// file cut off after its complete image data still decodes.
void read_trailer(png_structp png) {
  if (setjmp(png_jmpbuf(png))) return;
  png_read_end(png, nullptr);
}

struct PngGuard {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngGuard() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

}  // namespace

Image decode_png(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  const DecodeDeadline deadline(limits);
  Reader reader{bytes.data(), bytes.size(), 0, false, {0}, &deadline, false};
  PngGuard g;
  g.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, error_fn, warning_fn);
  if (!g.png) fail("PNG: cannot create the decoder");
  g.info = png_create_info_struct(g.png);
  if (!g.info) fail("PNG: cannot create the decoder");
  png_set_read_fn(g.png, &reader, read_fn);
  png_set_read_status_fn(g.png, row_done);
  // libpng's own caps, in case a future transform path allocates before us.
  const auto side = static_cast<png_uint_32>(std::min<uint64_t>(limits.max_decoded_pixels, 0x7fffffff));
  png_set_user_limits(g.png, side, side);
  png_set_chunk_malloc_max(g.png, 8u << 20);  // ancillary chunks (iCCP, zTXt...) cap

  auto failed = [&](const char* stage) {
    if (reader.over_time) fail("PNG refused: decoding took over the limit of ", deadline.seconds(), " s");
    if (reader.truncated) fail("truncated PNG: the data ends at byte ", reader.size, " while reading the ", stage);
    fail("corrupt PNG (", stage, "): ", reader.message, " near byte ", reader.pos);
  };
  Header h{};
  if (!read_header(g.png, g.info, &h)) failed("header");
  check_dimensions(h.width, h.height, limits, "PNG");
  if (h.channels < 2 || h.channels > 4) fail("PNG: unexpected ", h.channels, " channels after conversion");

  const size_t w = h.width, npix = w * h.height;
  // The decoded rows, the row pointers and, unless already RGB, the RGB copy.
  reserve_memory(limits, uint64_t{npix} * h.channels + uint64_t{h.height} * sizeof(png_bytep) +
                             (h.channels == 3 ? 0 : uint64_t{npix} * 3));
  std::vector<uint8_t> buf(npix * h.channels);
  std::vector<png_bytep> rows(h.height);
  for (size_t y = 0; y < h.height; ++y) rows[y] = buf.data() + y * w * h.channels;
  if (!read_pixels(g.png, g.info, rows.data())) failed("pixel data");
  read_trailer(g.png);

  Image img;
  img.width = static_cast<int>(h.width);
  img.height = static_cast<int>(h.height);
  if (h.channels == 3) {
    img.rgb = std::move(buf);
  } else {
    img.rgb.resize(npix * 3);
    composite_on_white(buf.data(), h.channels, npix, img.rgb.data());
  }
  return img;
}

}  // namespace qvl::image_detail
