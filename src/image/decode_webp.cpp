// WebP via libwebp (lossy, lossless, alpha); an animation yields its first
// frame as composed on the canvas by WebPAnimDecoder.
#include <webp/decode.h>
#include <webp/demux.h>

#include <vector>

#include "image/decoders.h"
#include "util/error.h"

namespace qvl::image_detail {
namespace {

const char* status_text(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "not enough data";
    default: return "error";
  }
}

struct AnimGuard {
  WebPAnimDecoder* dec = nullptr;
  ~AnimGuard() { WebPAnimDecoderDelete(dec); }
};

Image first_frame(std::span<const uint8_t> bytes, int width, int height) {
  WebPAnimDecoderOptions opts;
  if (!WebPAnimDecoderOptionsInit(&opts)) fail("WebP: cannot initialise the animation decoder");
  opts.color_mode = MODE_RGBA;
  opts.use_threads = 0;
  WebPData data{bytes.data(), bytes.size()};
  AnimGuard g;
  g.dec = WebPAnimDecoderNew(&data, &opts);
  if (!g.dec) fail("corrupt WebP animation (", bytes.size(), " bytes)");
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(g.dec, &rgba, &timestamp) || !rgba) fail("corrupt WebP animation: the first frame does not decode");
  Image img;
  img.width = width;
  img.height = height;
  img.rgb.resize(static_cast<size_t>(width) * height * 3);
  composite_on_white(rgba, 4, static_cast<size_t>(width) * height, img.rgb.data());
  return img;
}

}  // namespace

Image decode_webp(std::span<const uint8_t> bytes, const DecodeLimits& limits) {
  WebPBitstreamFeatures f;
  const VP8StatusCode st = WebPGetFeatures(bytes.data(), bytes.size(), &f);
  if (st == VP8_STATUS_NOT_ENOUGH_DATA) fail("truncated WebP: the header is incomplete (", bytes.size(), " bytes)");
  if (st != VP8_STATUS_OK) fail("corrupt WebP header: ", status_text(st));
  check_dimensions(f.width, f.height, limits, "WebP");
  // libwebp decodes in one call, in time linear in the pixels (capped by
  // check_dimensions); the budget counts its buffers: the RGB result, the
  // RGBA one for alpha, and for an animation WebPAnimDecoder's two RGBA
  // canvases (the frame shown and the previous one it composes on).
  const size_t npix = static_cast<size_t>(f.width) * f.height;
  reserve_memory(limits, uint64_t{npix} * (f.has_animation ? 3 + 8 : f.has_alpha ? 3 + 4 : 3));
  if (f.has_animation) return first_frame(bytes, f.width, f.height);

  Image img;
  img.width = f.width;
  img.height = f.height;
  if (!f.has_alpha) {
    img.rgb.resize(npix * 3);
    if (!WebPDecodeRGBInto(bytes.data(), bytes.size(), img.rgb.data(), img.rgb.size(), f.width * 3))
      fail("corrupt or truncated WebP: the image data does not decode (", bytes.size(), " bytes)");
    return img;
  }
  std::vector<uint8_t> rgba(npix * 4);
  if (!WebPDecodeRGBAInto(bytes.data(), bytes.size(), rgba.data(), rgba.size(), f.width * 4))
    fail("corrupt or truncated WebP: the image data does not decode (", bytes.size(), " bytes)");
  img.rgb.resize(npix * 3);
  composite_on_white(rgba.data(), 4, npix, img.rgb.data());
  return img;
}

}  // namespace qvl::image_detail
