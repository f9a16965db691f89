// The video processor (image/video_preprocess.h) against the reference:
// the golden decoded frames in, smart_resize sizes, grids, PIL-bicubic
// resized frames and pixel_values_videos out (tests/fixtures/video).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "golden_tensors.h"
#include "image/video_preprocess.h"
#include "util/error.h"

namespace {

const std::string kFixtures = QVL_FIXTURES_DIR;
const std::string kVideoDir = kFixtures + "/video/";

qvl::PreprocessorConfig video_config() {
  const auto bytes = qvl_test::read_file(kFixtures + "/tiny-qwen3vl/video_preprocessor_config.json");
  return qvl::parse_video_preprocessor_config(std::string(bytes.begin(), bytes.end()), "video_preprocessor_config.json")
      .frames;
}

std::vector<qvl::Image> frames_of(const qvl_test::Tensor& t) {
  const int64_t n = t.shape[0], h = t.shape[1], w = t.shape[2];
  std::vector<qvl::Image> frames(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    frames[i].width = static_cast<int>(w);
    frames[i].height = static_cast<int>(h);
    const auto begin = t.bytes.begin() + static_cast<long>(i * h * w * 3);
    frames[i].rgb.assign(begin, begin + static_cast<long>(h * w * 3));
  }
  return frames;
}

struct Case {
  const char* file;
  int64_t max_pixels;  // 0: the config's
};

class VideoPreprocessGolden : public testing::TestWithParam<Case> {};

TEST_P(VideoPreprocessGolden, SizesGridsPixelsMatchTheReference) {
  const Case& c = GetParam();
  auto t = qvl_test::read_safetensors(kVideoDir + c.file + ".safetensors");
  const auto frames = frames_of(t.at("frames_rgb"));
  qvl::PreprocessOptions options;
  options.max_pixels = c.max_pixels;
  const qvl::PixelValues pv = qvl::preprocess_video(frames, video_config(), options);

  const auto grid = t.at("video_grid_thw").as<int64_t>();
  EXPECT_EQ(pv.grid_t, grid[0]);
  EXPECT_EQ(pv.grid_h, grid[1]);
  EXPECT_EQ(pv.grid_w, grid[2]);
  const auto& resized = t.at("resized_rgb");
  EXPECT_EQ(pv.resized_height, resized.shape[1]);
  EXPECT_EQ(pv.resized_width, resized.shape[2]);

  // resized_rgb is exact when PIL's bicubic is reproduced; pixel_values are
  // then (x - 127.5) / 127.5 in float32, so every value can be checked
  // against the golden resized pixel it came from: frame 2g+t (the last
  // frame again for an odd count) in merge-window order.
  const int p = 16, m = 2, tp = 2;
  const int64_t n = resized.shape[0], H = resized.shape[1], W = resized.shape[2];
  std::vector<float> want(pv.data.size());
  size_t at = 0;
  for (int g = 0; g < pv.grid_t; ++g)
    for (int bh = 0; bh < pv.grid_h / m; ++bh)
      for (int bw = 0; bw < pv.grid_w / m; ++bw)
        for (int mh = 0; mh < m; ++mh)
          for (int mw = 0; mw < m; ++mw)
            for (int ch = 0; ch < 3; ++ch)
              for (int tt = 0; tt < tp; ++tt)
                for (int y = 0; y < p; ++y)
                  for (int x = 0; x < p; ++x) {
                    const int64_t f = std::min<int64_t>(g * tp + tt, n - 1);
                    const int64_t yy = (bh * m + mh) * p + y, xx = (bw * m + mw) * p + x;
                    const uint8_t v = resized.bytes[static_cast<size_t>(((f * H + yy) * W + xx) * 3 + ch)];
                    want[at++] = (static_cast<float>(v) - 127.5f) / 127.5f;
                  }
  ASSERT_EQ(at, pv.data.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(pv.data[i], want[i]) << "value " << i;
  if (t.count("pixel_values_videos")) {
    const auto golden = t.at("pixel_values_videos").as<float>();
    ASSERT_EQ(golden.size(), pv.data.size());
    for (size_t i = 0; i < golden.size(); ++i) ASSERT_NEAR(pv.data[i], golden[i], 1e-6) << "value " << i;
  }
}

TEST_P(VideoPreprocessGolden, ResizedFramesAreExactlyPilBicubic) {
  const Case& c = GetParam();
  auto t = qvl_test::read_safetensors(kVideoDir + c.file + ".safetensors");
  const auto frames = frames_of(t.at("frames_rgb"));
  const auto& resized = t.at("resized_rgb");
  const int H = static_cast<int>(resized.shape[1]), W = static_cast<int>(resized.shape[2]);
  for (size_t i = 0; i < frames.size(); ++i) {
    const qvl::Image r = qvl::resize_bicubic(frames[i], W, H);
    const auto begin = resized.bytes.begin() + static_cast<long>(i * H * W * 3);
    ASSERT_TRUE(std::equal(r.rgb.begin(), r.rgb.end(), begin)) << "frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Videos, VideoPreprocessGolden,
                         testing::Values(Case{"video_tiny_56x48_7.5fps", 0}, Case{"video_stripes_96x64_24fps", 0},
                                         Case{"video_portrait_120x216_10fps", 0},
                                         Case{"video_yuv420p_160x128_25fps", 0},
                                         Case{"video_long_112x80_24fps__max6_px40000", 40000},
                                         Case{"video_frames_150x100_x6", 0}),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

TEST(VideoSmartResize, TotalBudgetOverAllFrames) {
  // Reference cases (manifest videos[*].smart_resize).
  auto s = qvl::video_smart_resize(4, 240, 320, 2, 32, 4096, 25165824);  // 7.5 -> 8: up to 256
  EXPECT_EQ(s.height, 256);
  EXPECT_EQ(s.width, 320);
  s = qvl::video_smart_resize(6, 80, 112, 2, 32, 4096, 40000);  // max branch: sqrt(6*80*112/40000)
  EXPECT_EQ(s.height, 64);
  EXPECT_EQ(s.width, 96);
  s = qvl::video_smart_resize(5, 216, 120, 2, 32, 4096, 25165824);
  EXPECT_EQ(s.height, 224);
  EXPECT_EQ(s.width, 128);
  // A budget per frame would leave 640x352 frames alone; 600 frames of them
  // share 25165824 pixels: beta = sqrt(600*360*640/25165824) = 2.34...
  s = qvl::video_smart_resize(600, 360, 640, 2, 32, 4096, 25165824);
  EXPECT_EQ(s.height, 128);
  EXPECT_EQ(s.width, 256);
  // The min branch: 4 frames of 32x32 = 4096 is not below 4096; 2 frames are.
  s = qvl::video_smart_resize(2, 32, 32, 2, 32, 4096, 25165824);
  EXPECT_EQ(s.height, 64);
  EXPECT_EQ(s.width, 64);
}

TEST(VideoSmartResize, RefusesTinyAndExtremeFrames) {
  EXPECT_THROW(qvl::video_smart_resize(4, 31, 64, 2, 32, 4096, 25165824), qvl::Error);
  EXPECT_THROW(qvl::video_smart_resize(4, 32, 6432, 2, 32, 4096, 25165824), qvl::Error);
  EXPECT_THROW(qvl::video_smart_resize(0, 64, 64, 2, 32, 4096, 25165824), qvl::Error);
}

// video_options_within_tokens keeps every frame count and shape within the
// vision tokens it is given (both smart_resize branches, odd counts whose
// t_bar rounds down, a side floored at 32 px), and leaves a clip that
// already fits alone.
TEST(VideoTokenBudget, EveryCountAndShapeFitsItsTokens) {
  qvl::PreprocessorConfig c;
  c.patch_size = 16;
  c.merge_size = 2;
  c.temporal_patch_size = 2;
  c.min_pixels = 4096;
  c.max_pixels = 25165824;
  const std::pair<int, int> shapes[] = {{360, 640}, {1080, 1920}, {640, 360}, {100, 100}, {32, 6400}, {97, 313}};
  for (const auto& [h, w] : shapes)
    for (int n = 1; n <= 41; n += 2 + (n > 9) * 5)
      for (int64_t tokens : {int64_t{30}, int64_t{500}, int64_t{4000}}) {
        const int64_t groups = (n + 1) / 2;
        if (tokens < groups) continue;
        const qvl::PreprocessOptions o = qvl::video_options_within_tokens(n, h, w, c, {}, tokens);
        const qvl::ResizedSize s = qvl::video_preprocess_size(n, h, w, c, o);
        EXPECT_LE(groups * (s.height / 32) * (s.width / 32), tokens) << w << "x" << h << " n=" << n;
        // Not needlessly small: over half the budget is used once a group
        // has room for a few tokens a side (sides are floored to multiples
        // of 32).
        const qvl::ResizedSize own = qvl::video_preprocess_size(n, h, w, c, {});
        const int64_t own_tokens = groups * (own.height / 32) * (own.width / 32);
        if (own_tokens <= tokens) {
          EXPECT_EQ(o.max_pixels, 0) << "a clip that fits is left alone";
        } else if (h >= 64 && w >= 64 && tokens >= 16 * groups) {
          EXPECT_GT(2 * groups * (s.height / 32) * (s.width / 32), tokens) << w << "x" << h << " n=" << n;
        }
      }
  EXPECT_THROW(qvl::video_options_within_tokens(9, 360, 640, c, {}, 4), qvl::Error);
}

}  // namespace
