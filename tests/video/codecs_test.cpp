// Every container and codec the issue lists as a video, made in the test with
// this build's FFmpeg encoders (video/encode.h), decoded through
// decode_video: the sampled frame count and indices, the frame size, the
// rate the timestamps come from, and each kept frame's pixels (within a
// tolerance for lossy codecs). Each frame k is a pattern at brightness
// 16 + 7k, so a wrong frame kept is 7 levels off on average.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "util/error.h"
#include "video/encode.h"
#include "video/video.h"

namespace {

constexpr int kWidth = 96, kHeight = 64, kFps = 10, kFrames = 30;  // 3 s

qvl::Image pattern_frame(int64_t k) {
  qvl::Image im;
  im.width = kWidth;
  im.height = kHeight;
  im.rgb.resize(size_t(kWidth) * kHeight * 3);
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x)
      for (int c = 0; c < 3; ++c)
        im.rgb[(size_t(y) * kWidth + x) * 3 + c] = static_cast<uint8_t>(16 + 7 * k + (x / 8 + y / 8 + c) % 4 * 3);
  return im;
}

double mean(const qvl::Image& im) {
  double s = 0;
  for (uint8_t p : im.rgb) s += p;
  return s / static_cast<double>(im.rgb.size());
}

struct Case {
  const char* container;
  const char* encoder;
  const char* codec;  // as decode_video names it
  double tolerance;   // mean level difference of a kept frame
};

class Codecs : public testing::TestWithParam<Case> {};

TEST_P(Codecs, DecodeToTheSampledFramesAndRate) {
  const Case& c = GetParam();
  const qvl::VideoEncoding e{c.container, c.encoder, kWidth, kHeight, kFps, kFrames};
  ASSERT_TRUE(qvl::can_encode(e)) << c.encoder << " in " << c.container << " is not in this FFmpeg";
  const std::vector<uint8_t> bytes = qvl::encode_video(e, pattern_frame);
  const qvl::Video v = qvl::decode_video(bytes);
  EXPECT_EQ(v.codec, c.codec);
  EXPECT_EQ(v.width, kWidth);
  EXPECT_EQ(v.height, kHeight);
  EXPECT_EQ(v.total_frames, kFrames);
  EXPECT_NEAR(v.fps, kFps, 1e-6);
  // int(30 / 10 * 2) = 6 frames, np.linspace(0, 29, 6) rounded half to even.
  EXPECT_EQ(v.frame_indices, (std::vector<int64_t>{0, 6, 12, 17, 23, 29}));
  const std::vector<double> stamps = qvl::temporal_group_timestamps(v.frame_indices, v.fps);
  const std::vector<double> expected = {0.3, 1.45, 2.6};  // (0 + 6) / 2 / 10, (12 + 17) / 2 / 10, (23 + 29) / 2 / 10
  ASSERT_EQ(stamps.size(), expected.size());
  for (size_t i = 0; i < stamps.size(); ++i) EXPECT_NEAR(stamps[i], expected[i], 1e-9) << i;
  ASSERT_EQ(v.frames.size(), 6u);
  for (size_t i = 0; i < v.frames.size(); ++i) {
    EXPECT_EQ(v.frames[i].width, kWidth);
    EXPECT_EQ(v.frames[i].height, kHeight);
    EXPECT_NEAR(mean(v.frames[i]), mean(pattern_frame(v.frame_indices[i])), c.tolerance)
        << c.encoder << " in " << c.container << ", kept frame " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Debian, Codecs,
    testing::Values(Case{"mp4", "libx264", "h264", 2}, Case{"mov", "libx264", "h264", 2},
                    Case{"mp4", "libx265", "hevc", 2}, Case{"mp4", "libaom-av1", "av1", 2},
                    Case{"webm", "libvpx", "vp8", 2}, Case{"webm", "libvpx-vp9", "vp9", 2},
                    Case{"webm", "libaom-av1", "av1", 2}, Case{"matroska", "libx264", "h264", 2},
                    Case{"avi", "mpeg4", "mpeg4", 2}, Case{"gif", "gif", "gif", 3}),
    [](const testing::TestParamInfo<Case>& i) {
      return std::string(i.param.container) + "_" +
             std::string(i.param.codec);
    });

// FFmpeg 5.1's webp decoder has no animation (ANIM/ANMF chunks), so qvl's
// demuxer whitelist leaves WebP out: an animated WebP sent as a video is
// refused in one line naming the containers that are read, before any frame
// is decoded (the server answers it with a 400).
TEST(Codecs, AnimatedWebpIsRefusedNamingTheContainersRead) {
  const qvl::VideoEncoding e{"webp", "libwebp_anim", kWidth, kHeight, kFps, 6};
  ASSERT_TRUE(qvl::can_encode(e));
  const std::vector<uint8_t> bytes = qvl::encode_video(e, pattern_frame);
  EXPECT_FALSE(qvl::looks_like_video(bytes));
  try {
    qvl::decode_video(bytes);
    FAIL() << "an animated WebP decoded";
  } catch (const qvl::Error& err) {
    const std::string what = err.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("not a supported container (MP4/MOV, WebM/MKV, AVI, GIF)"), std::string::npos) << what;
  }
}

}  // namespace
