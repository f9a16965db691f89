// Decoding: every PNG colour type, JPEG EXIF orientation / grey / CMYK, WebP,
// GIF, BMP, and the inputs a service must refuse cleanly (truncated, bombs,
// empty, random, unsupported).
#include <gif_lib.h>
#include <gtest/gtest.h>
#include <webp/encode.h>

#include <array>
#include <cmath>
#include <random>

#include "encoders.h"
#include "image/image.h"
#include "util/error.h"

namespace {

using Bytes = std::vector<uint8_t>;
using qvl::decode_image;

// Composite over white, computed in floating point (independent of the
// integer formula in the decoder).
uint8_t over_white(int v, int a) { return static_cast<uint8_t>(std::lround((v * a + 255.0 * (255 - a)) / 255.0)); }

std::string error_of(const Bytes& b, const qvl::DecodeLimits& limits = {}) {
  try {
    decode_image(b, limits);
  } catch (const qvl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::array<uint8_t, 3> px(const qvl::Image& im, int x, int y = 0) {
  const uint8_t* p = &im.rgb[(size_t(y) * im.width + x) * 3];
  return {p[0], p[1], p[2]};
}

// ---------------------------------------------------------------- PNG

TEST(DecodePng, RgbaIsCompositedOverWhite) {
  qvl_test::PngSpec s;
  s.width = 4, s.height = 1, s.color_type = PNG_COLOR_TYPE_RGBA;
  const Bytes row = {10, 20, 30, 255, 10, 20, 30, 0, 200, 100, 50, 128, 0, 0, 0, 1};
  const auto im = decode_image(qvl_test::encode_png(s, {row}));
  ASSERT_EQ(im.width, 4);
  for (int x = 0; x < 4; ++x)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(im.rgb[3 * x + c], over_white(row[4 * x + c], row[4 * x + 3])) << x << "," << c;
}

TEST(DecodePng, GreyAlpha) {
  qvl_test::PngSpec s;
  s.width = 3, s.height = 1, s.color_type = PNG_COLOR_TYPE_GRAY_ALPHA;
  const auto im = decode_image(qvl_test::encode_png(s, {{0, 255, 0, 0, 90, 64}}));
  EXPECT_EQ(px(im, 0), (std::array<uint8_t, 3>{0, 0, 0}));
  EXPECT_EQ(px(im, 1), (std::array<uint8_t, 3>{255, 255, 255}));
  const uint8_t v = over_white(90, 64);
  EXPECT_EQ(px(im, 2), (std::array<uint8_t, 3>{v, v, v}));
}

TEST(DecodePng, PaletteWithTransparency) {
  qvl_test::PngSpec s;
  s.width = 3, s.height = 1, s.color_type = PNG_COLOR_TYPE_PALETTE;
  s.palette = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
  s.trns = {0, 255, 100};
  const auto im = decode_image(qvl_test::encode_png(s, {{0, 1, 2}}));
  EXPECT_EQ(px(im, 0), (std::array<uint8_t, 3>{255, 255, 255}));  // fully transparent
  EXPECT_EQ(px(im, 1), (std::array<uint8_t, 3>{0, 255, 0}));
  EXPECT_EQ(px(im, 2), (std::array<uint8_t, 3>{over_white(0, 100), over_white(0, 100), over_white(255, 100)}));
}

TEST(DecodePng, FourBitPalette) {
  qvl_test::PngSpec s;
  s.width = 3, s.height = 1, s.bit_depth = 4, s.color_type = PNG_COLOR_TYPE_PALETTE;
  s.palette = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  const auto im = decode_image(qvl_test::encode_png(s, {{0x21, 0x00}}));  // indices 2, 1, 0
  EXPECT_EQ(im.rgb, (Bytes{7, 8, 9, 4, 5, 6, 1, 2, 3}));
}

TEST(DecodePng, SixteenBitKeepsHighByte) {
  qvl_test::PngSpec s;
  s.width = 2, s.height = 1, s.bit_depth = 16, s.color_type = PNG_COLOR_TYPE_RGB;
  const auto im = decode_image(qvl_test::encode_png(s, {{0x12, 0x34, 0xAB, 0xCD, 0xFF, 0xFF, 0, 0, 0x80, 0x01, 0x7F, 0xFF}}));
  EXPECT_EQ(im.rgb, (Bytes{0x12, 0xAB, 0xFF, 0x00, 0x80, 0x7F}));
}

TEST(DecodePng, SixteenBitRgbaAndGrey) {
  qvl_test::PngSpec s;
  s.width = 1, s.height = 1, s.bit_depth = 16, s.color_type = PNG_COLOR_TYPE_RGBA;
  auto im = decode_image(qvl_test::encode_png(s, {{0x40, 0, 0x80, 0, 0xC0, 0, 0x80, 0x00}}));
  EXPECT_EQ(im.rgb, (Bytes{over_white(0x40, 0x80), over_white(0x80, 0x80), over_white(0xC0, 0x80)}));
  s.color_type = PNG_COLOR_TYPE_GRAY;
  im = decode_image(qvl_test::encode_png(s, {{0x9A, 0xBC}}));
  EXPECT_EQ(im.rgb, (Bytes{0x9A, 0x9A, 0x9A}));
}

TEST(DecodePng, LowBitGreyAndColourKey) {
  qvl_test::PngSpec s;
  s.width = 8, s.height = 1, s.bit_depth = 1, s.color_type = PNG_COLOR_TYPE_GRAY;
  auto im = decode_image(qvl_test::encode_png(s, {{0xA0}}));  // 1 0 1 0 0 0 0 0
  EXPECT_EQ(px(im, 0), (std::array<uint8_t, 3>{255, 255, 255}));
  EXPECT_EQ(px(im, 1), (std::array<uint8_t, 3>{0, 0, 0}));
  EXPECT_EQ(px(im, 2), (std::array<uint8_t, 3>{255, 255, 255}));
  // 8-bit RGB with a tRNS colour key: the keyed colour becomes transparent -> white.
  s = {};
  s.width = 2, s.height = 1, s.color_type = PNG_COLOR_TYPE_RGB;
  s.has_trns_color = true;
  s.trns_color.red = 1, s.trns_color.green = 2, s.trns_color.blue = 3;
  im = decode_image(qvl_test::encode_png(s, {{1, 2, 3, 1, 2, 4}}));
  EXPECT_EQ(im.rgb, (Bytes{255, 255, 255, 1, 2, 4}));
}

TEST(DecodePng, InterlacedEqualsPlain) {
  qvl_test::PngSpec s;
  s.width = 13, s.height = 11, s.color_type = PNG_COLOR_TYPE_RGB;
  std::vector<Bytes> rows(s.height, Bytes(s.width * 3));
  for (int y = 0; y < s.height; ++y)
    for (int i = 0; i < s.width * 3; ++i) rows[y][i] = static_cast<uint8_t>(y * 31 + i * 7);
  const auto plain = decode_image(qvl_test::encode_png(s, rows));
  s.interlace = true;
  const auto inter = decode_image(qvl_test::encode_png(s, rows));
  EXPECT_EQ(plain.rgb, inter.rgb);
  EXPECT_EQ(plain.rgb[3 * 14], rows[1][3]);
}

TEST(DecodePng, TruncatedAndCorrupt) {
  qvl_test::PngSpec s;
  s.width = 64, s.height = 64, s.color_type = PNG_COLOR_TYPE_RGB;
  std::mt19937 rng(7);
  std::vector<Bytes> rows(64, Bytes(64 * 3));
  for (auto& r : rows)
    for (auto& v : r) v = static_cast<uint8_t>(rng());  // incompressible, so a cut loses pixels
  const Bytes png = qvl_test::encode_png(s, rows);
  for (size_t cut : {size_t(8), size_t(20), size_t(40), png.size() / 2, png.size() - 20}) {
    const std::string e = error_of(Bytes(png.begin(), png.begin() + cut));
    EXPECT_NE(e.find("PNG"), std::string::npos) << cut << ": " << e;
    EXPECT_NE(e, "(no error)") << cut;
  }
  EXPECT_NE(error_of(Bytes(png.begin(), png.begin() + png.size() / 2)).find("truncated PNG"), std::string::npos);
  Bytes bad = png;
  bad[40] ^= 0xFF;  // inside IDAT: the CRC no longer matches
  EXPECT_NE(error_of(bad).find("corrupt PNG"), std::string::npos) << error_of(bad);
}

TEST(DecodePng, DecompressionBombIsRefusedFromTheHeader) {
  const Bytes bomb = qvl_test::png_header_only(100000, 100000);
  ASSERT_LT(bomb.size(), 100u);
  const std::string e = error_of(bomb);
  EXPECT_NE(e.find("100000x100000"), std::string::npos) << e;
  EXPECT_NE(e.find("over the limit"), std::string::npos) << e;
}

// ---------------------------------------------------------------- limits, junk

TEST(DecodeLimits, ConfigurableCaps) {
  qvl_test::PngSpec s;
  s.width = 20, s.height = 10, s.color_type = PNG_COLOR_TYPE_GRAY;
  const Bytes png = qvl_test::encode_png(s, std::vector<Bytes>(10, Bytes(20, 9)));
  qvl::DecodeLimits l;
  l.max_decoded_pixels = 199;
  EXPECT_NE(error_of(png, l).find("20x10 = 200 pixels, over the limit of 199"), std::string::npos) << error_of(png, l);
  l.max_decoded_pixels = 200;
  EXPECT_EQ(error_of(png, l), "(no error)");
  l.max_encoded_bytes = png.size() - 1;
  EXPECT_NE(error_of(png, l).find("over the limit"), std::string::npos);
}

TEST(DecodeJunk, EmptyRandomAndUnsupported) {
  EXPECT_NE(error_of({}).find("empty"), std::string::npos);
  EXPECT_NE(error_of({'I', 'I', '*', 0, 8, 0, 0, 0}).find("TIFF"), std::string::npos);
  EXPECT_NE(error_of({'h', 'e', 'l', 'l', 'o'}).find("unsupported image format"), std::string::npos);
  // Random bytes, bare and behind each format's signature: a qvl::Error every
  // time (anything else, or a crash, fails the test).
  const std::vector<Bytes> magics = {{}, {0xFF, 0xD8, 0xFF}, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'},
                                     {'G', 'I', 'F', '8', '9', 'a'}, {'R', 'I', 'F', 'F', 0, 1, 0, 0, 'W', 'E', 'B', 'P'},
                                     {'B', 'M'}};
  std::mt19937 rng(1234);
  int refused = 0;
  for (const auto& magic : magics) {
    for (int i = 0; i < 200; ++i) {
      Bytes b = magic;
      const size_t n = rng() % 2048;
      for (size_t j = 0; j < n; ++j) b.push_back(static_cast<uint8_t>(rng()));
      if (b.empty()) continue;
      try {
        decode_image(b);
      } catch (const qvl::Error&) {
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 1000);
}

// ---------------------------------------------------------------- JPEG

// 64x32 with four flat quadrants: red, green / blue, white. Quadrant borders
// fall on 16-pixel MCU edges, so the JPEG reproduces the colours closely.
const std::array<uint8_t, 3> kTL{230, 20, 20}, kTR{20, 200, 20}, kBL{20, 20, 220}, kBR{250, 250, 250};
Bytes quadrants_jpeg() {
  Bytes px(64 * 32 * 3);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 64; ++x) {
      const auto& c = y < 16 ? (x < 32 ? kTL : kTR) : (x < 32 ? kBL : kBR);
      std::copy(c.begin(), c.end(), px.begin() + (y * 64 + x) * 3);
    }
  return qvl_test::encode_jpeg(px, 64, 32, JCS_RGB, 3);
}

bool near(std::array<uint8_t, 3> a, std::array<uint8_t, 3> b, int tol = 12) {
  for (int c = 0; c < 3; ++c)
    if (std::abs(a[c] - b[c]) > tol) return false;
  return true;
}

TEST(DecodeJpeg, ExifOrientationOneToEight) {
  const Bytes plain = quadrants_jpeg();
  // For each orientation: which stored quadrant shows at the displayed
  // top-left, top-right, bottom-left, bottom-right (EXIF 2.3, tag 0x0112).
  const std::array<std::array<std::array<uint8_t, 3>, 4>, 9> shows = {{
      {},
      {kTL, kTR, kBL, kBR},  // 1 upright
      {kTR, kTL, kBR, kBL},  // 2 mirrored
      {kBR, kBL, kTR, kTL},  // 3 rotated 180
      {kBL, kBR, kTL, kTR},  // 4 flipped vertically
      {kTL, kBL, kTR, kBR},  // 5 transposed
      {kBL, kTL, kBR, kTR},  // 6 stored turned left: rotate 90 clockwise
      {kBR, kTR, kBL, kTL},  // 7 transverse
      {kTR, kBR, kTL, kBL},  // 8 stored turned right: rotate 90 counter-clockwise
  }};
  for (bool big_endian : {false, true}) {
    for (int o = 1; o <= 8; ++o) {
      SCOPED_TRACE("orientation " + std::to_string(o) + (big_endian ? " MM" : " II"));
      const auto im = decode_image(qvl_test::with_exif_orientation(plain, o, big_endian));
      const bool swapped = o >= 5;
      ASSERT_EQ(im.width, swapped ? 32 : 64);
      ASSERT_EQ(im.height, swapped ? 64 : 32);
      const int w = im.width, h = im.height;
      EXPECT_TRUE(near(px(im, w / 4, h / 4), shows[o][0]));
      EXPECT_TRUE(near(px(im, 3 * w / 4, h / 4), shows[o][1]));
      EXPECT_TRUE(near(px(im, w / 4, 3 * h / 4), shows[o][2]));
      EXPECT_TRUE(near(px(im, 3 * w / 4, 3 * h / 4), shows[o][3]));
    }
  }
}

TEST(DecodeJpeg, ProgressiveEqualsBaselineDecode) {
  std::vector<uint8_t> px(96 * 64 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>((i * 7) ^ (i >> 5));
  const auto base = decode_image(qvl_test::encode_jpeg(px, 96, 64, JCS_RGB, 3, 100));
  const auto prog = decode_image(qvl_test::encode_jpeg(px, 96, 64, JCS_RGB, 3, 100, true));
  ASSERT_EQ(prog.width, 96);
  int worst = 0;
  for (size_t i = 0; i < px.size(); ++i) worst = std::max(worst, std::abs(base.rgb[i] - prog.rgb[i]));
  EXPECT_LE(worst, 2);  // same coefficients; only rounding of the progressive path may differ
}

TEST(DecodeJpeg, MalformedExifIsIgnored) {
  const Bytes plain = quadrants_jpeg();
  const auto upright = decode_image(plain);
  Bytes bad = qvl_test::with_exif_orientation(plain, 6, false);
  bad[2 + 4 + 6 + 4] = 0xF0;  // IFD0 offset far past the segment
  const auto im = decode_image(bad);
  EXPECT_EQ(im.width, 64);
  EXPECT_EQ(im.rgb, upright.rgb);
  Bytes odd = qvl_test::with_exif_orientation(plain, 9, true);  // out of range
  EXPECT_EQ(decode_image(odd).rgb, upright.rgb);
}

TEST(DecodeJpeg, GreyAndCmyk) {
  Bytes grey(32 * 16);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = i < grey.size() / 2 ? 40 : 200;
  const auto g = decode_image(qvl_test::encode_jpeg(grey, 32, 16, JCS_GRAYSCALE, 1));
  EXPECT_TRUE(near(px(g, 5, 3), {40, 40, 40}, 3));
  EXPECT_TRUE(near(px(g, 5, 12), {200, 200, 200}, 3));
  EXPECT_EQ(px(g, 7, 7)[0], px(g, 7, 7)[1]);

  // libjpeg writes CMYK with an Adobe marker, so (like Photoshop files) the
  // samples are stored inverted: 255 - ink.
  const std::array<std::array<uint8_t, 4>, 4> stored = {{
      {255, 0, 0, 255},      // no cyan, full magenta+yellow, no black -> red
      {0, 255, 255, 255},    // full cyan -> (0, 255, 255)
      {255, 255, 255, 128},  // half black -> grey 128
      {255, 255, 255, 255},  // no ink -> white
  }};
  const std::array<std::array<uint8_t, 3>, 4> rgb = {{{255, 0, 0}, {0, 255, 255}, {128, 128, 128}, {255, 255, 255}}};
  Bytes cmyk(64 * 16 * 4);
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 64; ++x) std::copy(stored[x / 16].begin(), stored[x / 16].end(), cmyk.begin() + (y * 64 + x) * 4);
  const auto c = decode_image(qvl_test::encode_jpeg(cmyk, 64, 16, JCS_CMYK, 4));
  ASSERT_EQ(c.width, 64);
  for (int q = 0; q < 4; ++q) EXPECT_TRUE(near(px(c, q * 16 + 8, 8), rgb[q], 4)) << "quadrant " << q;
  // The same inks stored as YCCK (libjpeg converts back to CMYK).
  const auto ycck = decode_image(qvl_test::encode_jpeg(cmyk, 64, 16, JCS_CMYK, 4, 95, false, JCS_YCCK));
  for (int q = 0; q < 4; ++q) EXPECT_TRUE(near(px(ycck, q * 16 + 8, 8), rgb[q], 6)) << "YCCK quadrant " << q;
}

TEST(DecodeJpeg, TruncatedIsAnError) {
  const Bytes jpg = quadrants_jpeg();
  for (size_t cut : {size_t(3), size_t(100), jpg.size() / 2, jpg.size() - 2}) {
    const std::string e = error_of(Bytes(jpg.begin(), jpg.begin() + cut));
    EXPECT_NE(e.find("JPEG"), std::string::npos) << cut << ": " << e;
  }
  EXPECT_NE(error_of(Bytes(jpg.begin(), jpg.begin() + jpg.size() / 2)).find("truncated JPEG"), std::string::npos);
}

TEST(DecodeJpeg, HugeDeclaredSizeIsRefusedFromTheHeader) {
  Bytes jpg = quadrants_jpeg();
  size_t sof = 0;
  for (size_t i = 2; i + 9 < jpg.size(); ++i)
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) { sof = i; break; }
  ASSERT_GT(sof, 0u);
  // 60000 x 60000 (libjpeg itself stops at 65500 per side)
  jpg[sof + 5] = jpg[sof + 7] = 0xEA;
  jpg[sof + 6] = jpg[sof + 8] = 0x60;
  const std::string e = error_of(jpg);
  EXPECT_NE(e.find("60000x60000"), std::string::npos) << e;
  EXPECT_NE(e.find("over the limit"), std::string::npos) << e;
}

// ---------------------------------------------------------------- WebP, GIF, BMP

TEST(DecodeWebp, LosslessRgbAndAlpha) {
  Bytes rgb(5 * 3 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 13);
  uint8_t* out = nullptr;
  size_t n = WebPEncodeLosslessRGB(rgb.data(), 5, 3, 15, &out);
  ASSERT_GT(n, 0u);
  const Bytes webp(out, out + n);
  WebPFree(out);
  EXPECT_EQ(decode_image(webp).rgb, rgb);
  EXPECT_NE(error_of(Bytes(webp.begin(), webp.begin() + webp.size() / 2)).find("WebP"), std::string::npos);

  const Bytes rgba = {10, 20, 30, 0, 10, 20, 30, 255, 200, 100, 0, 77};
  n = WebPEncodeLosslessRGBA(rgba.data(), 3, 1, 12, &out);
  ASSERT_GT(n, 0u);
  const auto im = decode_image(Bytes(out, out + n));
  WebPFree(out);
  EXPECT_EQ(im.rgb, (Bytes{255, 255, 255, 10, 20, 30, over_white(200, 77), over_white(100, 77), over_white(0, 77)}));
}

int gif_append(GifFileType* gif, const GifByteType* data, int n) {
  auto* out = static_cast<Bytes*>(gif->UserData);
  out->insert(out->end(), data, data + n);
  return n;
}

// 4x2 GIF; the second frame must be ignored.
Bytes make_gif(bool interlace) {
  Bytes out;
  int err = 0;
  GifFileType* gif = EGifOpen(&out, gif_append, &err);
  GifColorType colors[4] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {9, 9, 9}};
  ColorMapObject* cmap = GifMakeMapObject(4, colors);
  EGifSetGifVersion(gif, true);
  EGifPutScreenDesc(gif, 4, 2, 2, 0, cmap);
  const GifByteType gce[4] = {1, 0, 0, 3};  // transparent index 3
  EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, gce);
  EGifPutImageDesc(gif, 0, 0, 4, 2, interlace, nullptr);
  GifPixelType rows[2][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}};
  for (auto& r : rows) EGifPutLine(gif, r, 4);
  EGifPutImageDesc(gif, 0, 0, 4, 2, false, nullptr);
  GifPixelType black[4] = {2, 2, 2, 2};
  for (int i = 0; i < 2; ++i) EGifPutLine(gif, black, 4);
  EGifCloseFile(gif, &err);
  GifFreeMapObject(cmap);
  return out;
}

TEST(DecodeGif, FirstFrameWithTransparency) {
  const Bytes want = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 0, 0, 255, 0, 255, 0, 255, 0, 0};
  for (bool interlace : {false, true}) {
    const Bytes gif = make_gif(interlace);
    const auto im = decode_image(gif);
    ASSERT_EQ(im.width, 4);
    ASSERT_EQ(im.height, 2);
    EXPECT_EQ(im.rgb, want) << "interlace " << interlace;
    EXPECT_NE(error_of(Bytes(gif.begin(), gif.begin() + 30)), "(no error)");
  }
}

Bytes bmp(int bpp, int width, int height, uint32_t compression, const Bytes& palette, const Bytes& pixels) {
  const uint32_t offset = 14 + 40 + static_cast<uint32_t>(palette.size());
  Bytes b = {'B', 'M'};
  auto le = [&](uint32_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  le(offset + static_cast<uint32_t>(pixels.size()), 4), le(0, 4), le(offset, 4);
  le(40, 4), le(static_cast<uint32_t>(width), 4), le(static_cast<uint32_t>(height), 4), le(1, 2), le(bpp, 2);
  le(compression, 4), le(static_cast<uint32_t>(pixels.size()), 4), le(2835, 4), le(2835, 4);
  le(static_cast<uint32_t>(palette.size() / 4), 4), le(0, 4);
  b.insert(b.end(), palette.begin(), palette.end());
  b.insert(b.end(), pixels.begin(), pixels.end());
  return b;
}

TEST(DecodeBmp, CommonVariants) {
  // 24-bit, bottom-up, BGR, rows padded to 4 bytes: 2x2 -> 6 bytes + 2 padding.
  const Bytes px24 = {1, 2, 3, 4, 5, 6, 0, 0, 7, 8, 9, 10, 11, 12, 0, 0};
  auto im = decode_image(bmp(24, 2, 2, 0, {}, px24));
  EXPECT_EQ(im.rgb, (Bytes{9, 8, 7, 12, 11, 10, 3, 2, 1, 6, 5, 4}));
  // Same, top-down (negative height).
  im = decode_image(bmp(24, 2, -2, 0, {}, px24));
  EXPECT_EQ(im.rgb, (Bytes{3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10}));
  // 8-bit palette, 3 pixels + 1 padding byte.
  im = decode_image(bmp(8, 3, 1, 0, {0, 0, 255, 0, 0, 255, 0, 0}, {1, 0, 1, 0}));
  EXPECT_EQ(im.rgb, (Bytes{0, 255, 0, 255, 0, 0, 0, 255, 0}));
  // 32-bit BI_RGB: the fourth byte is padding, not alpha.
  im = decode_image(bmp(32, 1, 1, 0, {}, {30, 20, 10, 0}));
  EXPECT_EQ(im.rgb, (Bytes{10, 20, 30}));
  // RLE8 is refused by name; a short pixel array is truncated.
  EXPECT_NE(error_of(bmp(8, 3, 1, 1, {0, 0, 255, 0}, {1, 0, 1, 0})).find("unsupported BMP compression"), std::string::npos);
  EXPECT_NE(error_of(bmp(24, 2, 2, 0, {}, Bytes(px24.begin(), px24.begin() + 10))).find("truncated BMP"), std::string::npos);
  EXPECT_NE(error_of(bmp(24, 70000, 70000, 0, {}, px24)).find("over the limit"), std::string::npos);
}

}  // namespace

namespace {

TEST(LoadImage, NamesThePathOnFailure) {
  try {
    qvl::load_image("/nonexistent/picture.png");
    FAIL() << "no error";
  } catch (const qvl::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/picture.png"), std::string::npos) << e.what();
  }
  EXPECT_THROW(qvl::load_image(QVL_FIXTURES_DIR), qvl::Error);
}

}  // namespace
