// smart_resize rules, the resize kernel's invariants, and the pixel_values
// layout on synthetic images where every value says where it came from.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "encoders.h"
#include "image/image.h"
#include "image/preprocess.h"
#include "image/resize_reference.h"
#include "util/error.h"

namespace {

qvl::PreprocessorConfig qwen_config(int64_t min_pixels = 65536, int64_t max_pixels = 16777216) {
  qvl::PreprocessorConfig c;
  c.patch_size = 16, c.temporal_patch_size = 2, c.merge_size = 2;
  c.min_pixels = min_pixels, c.max_pixels = max_pixels;
  return c;
}

TEST(SmartResize, RoundsHalfToEven) {
  // 464 / 32 = 14.5 -> 14 (Python round), 336 / 32 = 10.5 -> 10.
  const auto s = qvl::smart_resize(336, 464, 32, 65536, 16777216);
  EXPECT_EQ(s.height, 320);
  EXPECT_EQ(s.width, 448);
  // 15.5 -> 16
  EXPECT_EQ(qvl::smart_resize(496, 496, 32, 0, 1 << 30).height, 512);
}

TEST(SmartResize, MinAndMaxPixels) {
  // Below min_pixels: scaled up (ceil), above max_pixels: scaled down (floor).
  auto s = qvl::smart_resize(36, 40, 32, 65536, 16777216);
  EXPECT_EQ(s.height, 256);
  EXPECT_EQ(s.width, 288);
  s = qvl::smart_resize(3024, 4032, 32, 65536, 448 * 448);
  EXPECT_EQ(s.height, 384);
  EXPECT_EQ(s.width, 512);
  EXPECT_LE(int64_t(s.height) * s.width, 448 * 448);
  // max_pixels below min_pixels: max wins, as in transformers.
  s = qvl::smart_resize(600, 800, 32, 65536, 128 * 128);
  EXPECT_LE(int64_t(s.height) * s.width, 128 * 128);
  // A side never drops below one factor.
  s = qvl::smart_resize(20, 3000, 32, 0, 32 * 32 * 4);
  EXPECT_EQ(s.height, 32);
  EXPECT_EQ(s.width % 32, 0);
}

TEST(SmartResize, AspectRatioOver200IsAnError) {
  EXPECT_NO_THROW(qvl::smart_resize(10, 2000, 32, 65536, 16777216));
  try {
    qvl::smart_resize(10, 2001, 32, 65536, 16777216);
    FAIL() << "no error";
  } catch (const qvl::Error& e) {
    EXPECT_NE(std::string(e.what()).find("aspect ratio"), std::string::npos) << e.what();
  }
  EXPECT_THROW(qvl::smart_resize(0, 10, 32, 0, 100), qvl::Error);
}

qvl::Image random_image(int w, int h, uint32_t seed) {
  qvl::Image im;
  im.width = w, im.height = h;
  im.rgb.resize(size_t(w) * h * 3);
  std::mt19937 rng(seed);
  for (auto& v : im.rgb) v = static_cast<uint8_t>(rng());
  return im;
}

TEST(ResizeBicubic, IdentityFlatAndShape) {
  const auto im = random_image(37, 23, 1);
  EXPECT_EQ(qvl::resize_bicubic(im, 37, 23).rgb, im.rgb);
  // A flat image stays flat at any size (weights are normalised).
  qvl::Image flat;
  flat.width = 50, flat.height = 30;
  flat.rgb.assign(50 * 30 * 3, 77);
  for (auto [w, h] : {std::pair{7, 90}, std::pair{200, 3}, std::pair{50, 11}, std::pair{13, 30}}) {
    const auto r = qvl::resize_bicubic(flat, w, h);
    ASSERT_EQ(r.rgb.size(), size_t(w) * h * 3);
    for (uint8_t v : r.rgb) ASSERT_EQ(v, 77) << w << "x" << h;
  }
  EXPECT_THROW(qvl::resize_bicubic(im, 0, 5), qvl::Error);
}

// The fast horizontal pass (split int16 weights) against the scalar twin over
// many shapes: down- and up-scaling, widths near the SIMD block, 1-pixel sides.
TEST(ResizeBicubic, FastPassEqualsScalarTwin) {
  std::mt19937 rng(99);
  const std::vector<std::pair<int, int>> sizes = {{1, 1}, {1, 9}, {7, 1}, {8, 8}, {9, 17}, {31, 5}, {64, 64}, {301, 43}, {1000, 20}};
  for (auto [w, h] : sizes) {
    const auto im = random_image(w, h, rng());
    for (int t = 0; t < 6; ++t) {
      const int ow = 1 + rng() % (3 * w + 8), oh = 1 + rng() % (3 * h + 8);
      const auto fast = qvl::resize_bicubic(im, ow, oh);
      const auto ref = qvl::image_detail::resize_bicubic_scalar(im, ow, oh);
      ASSERT_EQ(fast.rgb, ref.rgb) << w << "x" << h << " -> " << ow << "x" << oh;
    }
  }
}

// The pixel_values contract: row r = patch (window-major order), column
// [c][t][y][x]; the value is the normalised source pixel.
TEST(Preprocess, PatchOrderAndTemporalCopies) {
  // (patch, merge, temporal) of Qwen3-VL, Qwen2-VL and an odd configuration:
  // nothing in the layout may assume 16 / 2 / 2.
  for (auto [p, m, tp] : {std::tuple{16, 2, 2}, std::tuple{14, 2, 2}, std::tuple{8, 3, 1}}) {
    SCOPED_TRACE(std::to_string(p) + "/" + std::to_string(m) + "/" + std::to_string(tp));
    const int f = p * m, W = 2 * f, H = f;  // sizes on the grid: no resize
    const qvl::Image im = random_image(W, H, 5);
    auto cfg = qwen_config(0, 1 << 30);
    cfg.patch_size = p, cfg.merge_size = m, cfg.temporal_patch_size = tp;
    const auto pv = qvl::preprocess(im, cfg);
    ASSERT_EQ(pv.grid_h, m);
    ASSERT_EQ(pv.grid_w, 2 * m);
    ASSERT_EQ(pv.num_patches, 2 * m * m);
    ASSERT_EQ(pv.patch_dim, 3 * tp * p * p);
    EXPECT_EQ(pv.num_tokens(m), 2);
    for (int row = 0; row < pv.num_patches; ++row) {
      // windows are row-major over (grid_h/m, grid_w/m); patches inside row-major
      const int window = row / (m * m), in_window = row % (m * m);
      const int ph = (window / (pv.grid_w / m)) * m + in_window / m;
      const int pw = (window % (pv.grid_w / m)) * m + in_window % m;
      for (int c = 0; c < 3; ++c)
        for (int t = 0; t < tp; ++t)
          for (int y = 0; y < p; ++y)
            for (int x = 0; x < p; ++x) {
              const uint8_t v = im.rgb[(size_t(ph * p + y) * W + pw * p + x) * 3 + c];
              const float want = (static_cast<float>(v * (1.0 / 255.0)) - 0.5f) / 0.5f;
              ASSERT_EQ(pv.data[size_t(row) * pv.patch_dim + ((c * tp + t) * p + y) * p + x], want)
                  << "row " << row << " c " << c << " t " << t << " y " << y << " x " << x;
            }
    }
  }
}

TEST(Preprocess, ConfigMeanStdAndOverrides) {
  const auto im = random_image(100, 60, 9);
  auto cfg = qwen_config();
  cfg.image_mean = {0.48145466f, 0.4578275f, 0.40821073f};
  cfg.image_std = {0.26862954f, 0.26130258f, 0.27577711f};
  const auto pv = qvl::preprocess(im, cfg);
  // 100x60 is below 65536 pixels: scaled up.
  EXPECT_GE(int64_t(pv.resized_width) * pv.resized_height, 65536);
  const auto resized = qvl::resize_bicubic(im, pv.resized_width, pv.resized_height);
  const float want = (static_cast<float>(resized.rgb[2] * (1.0 / 255.0)) - cfg.image_mean[2]) / cfg.image_std[2];
  EXPECT_EQ(pv.data[2 * 2 * 256], want);  // channel 2, frame 0, pixel (0, 0)

  qvl::PreprocessOptions o;
  o.min_pixels = 32 * 32;
  o.max_pixels = 64 * 64;
  const auto small = qvl::preprocess(im, cfg, o);
  EXPECT_LE(int64_t(small.resized_width) * small.resized_height, 64 * 64);
  EXPECT_EQ(small.resized_width % 32, 0);
}

// DCT-scaled JPEG decoding must keep the grid of the full decode and stay
// close to its pixels (bench/image_bench measures the bound on photo-like data).
TEST(Preprocess, DctScalingKeepsTheGrid) {
  const int w = 1600, h = 1200;
  std::vector<uint8_t> px(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &px[(size_t(y) * w + x) * 3];
      p[0] = static_cast<uint8_t>(128 + 100 * std::sin(x * 0.01));
      p[1] = static_cast<uint8_t>(128 + 100 * std::cos(y * 0.013));
      p[2] = static_cast<uint8_t>((x + y) / 12);
    }
  const auto jpg = qvl_test::encode_jpeg(px, w, h, JCS_RGB, 3, 90);
  const auto cfg = qwen_config(4096, 128 * 128);  // target 128x96, >= 3x smaller than 1600/4
  const auto full = qvl::decode_and_preprocess(jpg, cfg, {}, {}, false);
  const auto fast = qvl::decode_and_preprocess(jpg, cfg, {}, {}, true);
  qvl::DecodeHint hint{cfg.factor(), cfg.min_pixels, cfg.max_pixels};
  const auto scaled = qvl::decode_image(jpg, {}, hint);
  EXPECT_LT(scaled.width, w) << "the target is 1/12 of the photo: DCT scaling should apply";
  EXPECT_EQ(scaled.full_width, w);
  EXPECT_EQ(scaled.full_height, h);
  ASSERT_EQ(fast.grid_h, full.grid_h);
  ASSERT_EQ(fast.grid_w, full.grid_w);
  double worst = 0, sum = 0;
  for (size_t i = 0; i < full.data.size(); ++i) {
    const double d = std::fabs(fast.data[i] - full.data[i]);
    worst = std::max(worst, d), sum += d;
  }
  // In 0..255 levels (normalised values span 2.0 per 255 levels).
  EXPECT_LE(worst * 127.5, 8.0);
  EXPECT_LE(sum / full.data.size() * 127.5, 1.0);

  // Rotated by EXIF: the full size rotates with the pixels, so the grid is the
  // transposed one on both paths.
  const auto rotated = qvl_test::with_exif_orientation(jpg, 6, false);
  const auto rfull = qvl::decode_and_preprocess(rotated, cfg, {}, {}, false);
  const auto rfast = qvl::decode_and_preprocess(rotated, cfg, {}, {}, true);
  EXPECT_EQ(rfull.grid_h, full.grid_w);
  EXPECT_EQ(rfull.grid_w, full.grid_h);
  EXPECT_EQ(rfast.grid_h, rfull.grid_h);
  EXPECT_EQ(rfast.grid_w, rfull.grid_w);
}

}  // namespace
