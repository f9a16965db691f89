// GIF via giflib: the first frame only, on the logical screen; transparent
// pixels and the screen outside the frame become white (alpha over white).
// giflib's record-level API is used instead of DGifSlurp so that nothing
// beyond the first frame is read and the frame size is checked first.
#include <gif_lib.h>

#include <cstring>
#include <vector>

#include "image/decoders.h"
#include "util/error.h"

namespace qvl::image_detail {
namespace {

struct Source {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

int read_fn(GifFileType* gif, GifByteType* out, int n) {
  auto* s = static_cast<Source*>(gif->UserData);
  const size_t take = std::min(static_cast<size_t>(n < 0 ? 0 : n), s->size - s->pos);
  std::memcpy(out, s->data + s->pos, take);
  s->pos += take;
  return static_cast<int>(take);
}

struct GifGuard {
  GifFileType* gif = nullptr;
  ~GifGuard() {
    int e;
    if (gif) DGifCloseFile(gif, &e);
  }
};

[[noreturn]] void gif_fail(int code, const Source& src, const char* stage) {
  if (code == D_GIF_ERR_READ_FAILED || src.pos >= src.size)
    fail("truncated GIF: the data ends at byte ", src.size, " in the ", stage);
  const char* msg = GifErrorString(code);
  fail("corrupt GIF (", stage, "): ", msg ? msg : "unknown error", " near byte ", src.pos);
}

}  // namespace

Image decode_gif(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  Source src{bytes.data(), bytes.size(), 0};
  int code = 0;
  GifGuard g;
  g.gif = DGifOpen(&src, read_fn, &code);
  if (!g.gif) gif_fail(code, src, "header");
  GifFileType* gif = g.gif;
  check_dimensions(gif->SWidth, gif->SHeight, limits, "GIF");

  const DecodeDeadline deadline(limits);
  auto check_time = [&] {
    if (deadline.passed()) fail("GIF refused: decoding took over the limit of ", deadline.seconds(), " s");
  };
  int transparent = -1;
  // Only the first frame is read, but any number of extension records may
  // come before it: each costs input bytes, and the clock is checked at each.
  for (;;) {
    check_time();
    GifRecordType type;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) gif_fail(gif->Error, src, "record list");
    if (type == TERMINATE_RECORD_TYPE) fail("GIF holds no image frame");
    if (type == EXTENSION_RECORD_TYPE) {
      int ext_code;
      GifByteType* ext;
      if (DGifGetExtension(gif, &ext_code, &ext) == GIF_ERROR) gif_fail(gif->Error, src, "extension");
      // Graphics control: [size=4][flags][delay lo][delay hi][transparent index]
      if (ext_code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4) transparent = (ext[1] & 1) ? ext[4] : -1;
      while (ext) {
        if (DGifGetExtensionNext(gif, &ext) == GIF_ERROR) gif_fail(gif->Error, src, "extension");
      }
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) continue;

    if (DGifGetImageDesc(gif) == GIF_ERROR) gif_fail(gif->Error, src, "frame header");
    const GifImageDesc& d = gif->Image;
    check_dimensions(d.Width, d.Height, limits, "GIF frame");
    const ColorMapObject* cmap = d.ColorMap ? d.ColorMap : gif->SColorMap;
    if (!cmap || !cmap->Colors || cmap->ColorCount <= 0) fail("corrupt GIF: the first frame has no colour table");

    const int sw = gif->SWidth, sh = gif->SHeight;
    reserve_memory(limits, uint64_t(sw) * sh * 3 + uint64_t(d.Width) * sizeof(GifPixelType));
    Image img;
    img.width = sw;
    img.height = sh;
    img.rgb.assign(static_cast<size_t>(sw) * sh * 3, 255);
    std::vector<GifPixelType> line(d.Width);
    // Interlaced frames send rows in four passes: every 8th from 0, every
    // 8th from 4, every 4th from 2, every 2nd from 1.
    static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
    const int passes = d.Interlace ? 4 : 1;
    for (int pass = 0; pass < passes; ++pass) {
      const int y0 = d.Interlace ? kStart[pass] : 0, step = d.Interlace ? kStep[pass] : 1;
      for (int row = y0; row < d.Height; row += step) {
        if (row % 64 == 0) check_time();
        if (DGifGetLine(gif, line.data(), d.Width) == GIF_ERROR) gif_fail(gif->Error, src, "frame data");
        const int y = d.Top + row;
        if (y < 0 || y >= sh) continue;  // a frame may overhang the screen: clip it
        for (int col = 0; col < d.Width; ++col) {
          const int x = d.Left + col;
          if (x < 0 || x >= sw) continue;
          const int idx = line[col];
          if (idx == transparent) continue;
          uint8_t* p = &img.rgb[(static_cast<size_t>(y) * sw + x) * 3];
          if (idx < cmap->ColorCount) {
            p[0] = cmap->Colors[idx].Red;
            p[1] = cmap->Colors[idx].Green;
            p[2] = cmap->Colors[idx].Blue;
          } else {
            p[0] = p[1] = p[2] = 0;  // index past the table: black, as browsers show it
          }
        }
      }
    }
    return img;
  }
}

}  // namespace qvl::image_detail
