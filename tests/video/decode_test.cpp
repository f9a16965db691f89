// decode_video against the reference decode (frames_rgb of the golden
// files: exact for the lossless clips, within the README's tolerance for
// yuv420p) and every hostile input it must refuse with a clear message.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../image/golden_tensors.h"
#include "mp4_boxes.h"
#include "util/error.h"
#include "video/video.h"

namespace {

using qvl_test::Bytes;
const std::string kVideoDir = std::string(QVL_FIXTURES_DIR) + "/video/";

Bytes clip(const std::string& name) { return qvl_test::read_file(kVideoDir + "videos/" + name + ".mp4"); }

std::string error_of(const Bytes& b, const qvl::VideoLimits& limits = {}, const qvl::FrameSampling& s = {}) {
  try {
    qvl::decode_video(b, s, limits);
  } catch (const qvl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

struct Golden {
  std::vector<int64_t> indices;
  std::vector<int64_t> shape;  // frames_rgb (n, H, W, 3)
  std::vector<uint8_t> rgb;
};

Golden golden(const std::string& file) {
  auto t = qvl_test::read_safetensors(kVideoDir + file + ".safetensors");
  return {t.at("frame_indices").as<int64_t>(), t.at("frames_rgb").shape, t.at("frames_rgb").bytes};
}

// Decoded frames side by side with the golden ones; returns the max and mean
// absolute level difference.
std::pair<int, double> compare(const qvl::Video& v, const Golden& g) {
  EXPECT_EQ(v.frame_indices, g.indices);
  EXPECT_EQ(static_cast<int64_t>(v.frames.size()), g.shape[0]);
  EXPECT_EQ(v.height, g.shape[1]);
  EXPECT_EQ(v.width, g.shape[2]);
  int max_diff = 0;
  double sum = 0;
  size_t at = 0;
  for (const auto& f : v.frames) {
    EXPECT_EQ(f.width, v.width);
    EXPECT_EQ(f.height, v.height);
    for (uint8_t p : f.rgb) {
      if (at >= g.rgb.size()) return {256, 256.0};
      const int d = std::abs(int{p} - int{g.rgb[at++]});
      max_diff = std::max(max_diff, d);
      sum += d;
    }
  }
  EXPECT_EQ(at, g.rgb.size());
  return {max_diff, sum / static_cast<double>(std::max<size_t>(at, 1))};
}

struct LosslessCase {
  const char* clip;
  const char* golden;
  int max_frames;
};

class DecodeLossless : public testing::TestWithParam<LosslessCase> {};

TEST_P(DecodeLossless, SampledFramesAreExactlyTheReference) {
  const auto& c = GetParam();
  qvl::FrameSampling s;
  s.max_frames = c.max_frames;
  const auto v = qvl::decode_video(clip(c.clip), s);
  EXPECT_EQ(v.container, "mov,mp4,m4a,3gp,3g2,mj2");
  EXPECT_EQ(v.codec, "h264");
  const auto [max_diff, mean] = compare(v, golden(c.golden));
  EXPECT_EQ(max_diff, 0) << "mean " << mean;
}

INSTANTIATE_TEST_SUITE_P(
    Clips, DecodeLossless,
    testing::Values(LosslessCase{"tiny_56x48_7.5fps", "video_tiny_56x48_7.5fps", 768},
                    LosslessCase{"stripes_96x64_24fps", "video_stripes_96x64_24fps", 768},
                    LosslessCase{"portrait_120x216_10fps", "video_portrait_120x216_10fps", 768},
                    LosslessCase{"long_112x80_24fps", "video_long_112x80_24fps__max6_px40000", 6}),
    [](const auto& info) { return std::string(info.param.golden).substr(6, 4) + std::to_string(info.index); });

TEST(DecodeVideo, ReportsWhatTheHeadersSay) {
  const auto v = qvl::decode_video(clip("tiny_56x48_7.5fps"));
  EXPECT_EQ(v.total_frames, 12);
  EXPECT_DOUBLE_EQ(v.fps, 7.5);
  EXPECT_EQ(v.width, 56);
  EXPECT_EQ(v.height, 48);
}

TEST(DecodeVideo, Yuv420pWithinTheReferenceTolerance) {
  const auto v = qvl::decode_video(clip("yuv420p_160x128_25fps"));
  EXPECT_EQ(v.total_frames, 75);
  const auto [max_diff, mean] = compare(v, golden("video_yuv420p_160x128_25fps"));
  EXPECT_LE(max_diff, 16);  // README: max abs <= 16, mean <= 2 levels
  EXPECT_LE(mean, 2.0);
}

// The memory budget sees the kept frames and the decoder's before decoding.
class RecordingBudget : public qvl::DecodeBudget {
 public:
  void reserve(uint64_t bytes) override { reserved.push_back(bytes); }
  std::vector<uint64_t> reserved;
};

class RefusingBudget : public qvl::DecodeBudget {
 public:
  void reserve(uint64_t bytes) override { throw std::runtime_error("no room for " + std::to_string(bytes)); }
};

TEST(DecodeVideo, ReservesSampledFramesFromTheBudget) {
  RecordingBudget budget;
  qvl::VideoLimits limits;
  limits.budget = &budget;
  qvl::decode_video(clip("tiny_56x48_7.5fps"), {}, limits);
  ASSERT_EQ(budget.reserved.size(), 1u);
  EXPECT_EQ(budget.reserved[0], 56u * 48 * 3 * 4 + 56u * 48 * 4 * qvl::kDecoderFramesHeld);
  RefusingBudget refusing;
  limits.budget = &refusing;
  EXPECT_THROW(qvl::decode_video(clip("tiny_56x48_7.5fps"), {}, limits), std::runtime_error);
}

TEST(DecodeVideo, SniffsContainers) {
  EXPECT_TRUE(qvl::looks_like_video(clip("tiny_56x48_7.5fps")));
  const Bytes png = qvl_test::read_file(kVideoDir + "videos/frames_150x100_x6/frame_000.png");
  EXPECT_FALSE(qvl::looks_like_video(png));
  const Bytes webm = {0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81};
  EXPECT_TRUE(qvl::looks_like_video(webm));
}

// ------------------------------------------------------------ hostile input

TEST(DecodeVideoHostile, EmptyAndOversized) {
  EXPECT_EQ(error_of({}), "video is empty (0 bytes)");
  qvl::VideoLimits limits;
  limits.max_encoded_bytes = 1000;
  EXPECT_EQ(error_of(clip("tiny_56x48_7.5fps"), limits), "video is 11257 bytes, over the limit of 1000 bytes");
}

TEST(DecodeVideoHostile, NotAContainer) {
  std::mt19937 rng(7);
  Bytes noise(4096);
  for (auto& b : noise) b = static_cast<uint8_t>(rng());
  EXPECT_NE(error_of(noise).find("cannot read the video: not a supported container"), std::string::npos)
      << error_of(noise);
  const Bytes png = qvl_test::read_file(kVideoDir + "videos/frames_150x100_x6/frame_000.png");
  EXPECT_NE(error_of(png).find("not a supported container"), std::string::npos) << error_of(png);
}

TEST(DecodeVideoHostile, TruncatedFilesAreRefusedAtEveryLength) {
  const Bytes full = clip("stripes_96x64_24fps");
  for (double keep : {0.01, 0.05, 0.3, 0.6, 0.95}) {
    const Bytes cut(full.begin(), full.begin() + static_cast<long>(full.size() * keep));
    const std::string e = error_of(cut);
    EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("cannot read the video") != std::string::npos ||
                e.find("cannot decode") != std::string::npos)
        << keep << ": " << e;
  }
  const Bytes cut(full.begin(), full.begin() + static_cast<long>(full.size() * 0.6));
  EXPECT_NE(error_of(cut).find("video is truncated or damaged: "), std::string::npos) << error_of(cut);
}

TEST(DecodeVideoHostile, AbsurdDeclaredFrameSize) {
  Bytes b = clip("tiny_56x48_7.5fps");
  const size_t entry = qvl_test::sample_entry(b);
  ASSERT_EQ(std::memcmp(&b[entry + 4], "avc1", 4), 0);
  qvl_test::put_be16(b, entry + 32, 65535);  // width
  qvl_test::put_be16(b, entry + 34, 65535);  // height
  EXPECT_EQ(error_of(b), "video frames are 65535x65535 = 4294836225 pixels, over the limit of 8294400");
}

TEST(DecodeVideoHostile, FrameSizeLimitAlsoBindsTheBitstream) {
  // The container says 8x8 but the H.264 stream is 56x48: the decoder's own
  // max_pixels check refuses the larger frames it finds.
  Bytes b = clip("tiny_56x48_7.5fps");
  const size_t entry = qvl_test::sample_entry(b);
  qvl_test::put_be16(b, entry + 32, 8);
  qvl_test::put_be16(b, entry + 34, 8);
  qvl::VideoLimits limits;
  limits.max_frame_pixels = 64;
  EXPECT_NE(error_of(b, limits).find("cannot decode"), std::string::npos) << error_of(b, limits);
}

TEST(DecodeVideoHostile, LimitsFromTheHeaders) {
  const Bytes b = clip("stripes_96x64_24fps");  // 5 s, 120 frames of 96x64 at 24 fps
  qvl::VideoLimits limits;
  limits.max_duration_s = 2;
  EXPECT_EQ(error_of(b, limits), "video lasts 5 s, over the limit of 2 s");
  limits = {};
  limits.max_total_frames = 100;
  EXPECT_EQ(error_of(b, limits), "video declares 120 frames, over the limit of 100");
  limits = {};
  limits.max_frame_pixels = 96 * 64 - 1;
  EXPECT_EQ(error_of(b, limits), "video frames are 96x64 = 6144 pixels, over the limit of 6143");
  limits = {};
  limits.max_fps = 10;
  EXPECT_EQ(error_of(b, limits), "video declares 24 frames per second, over the limit of 10");
}

TEST(DecodeVideoHostile, ThousandsOfStreams) {
  const Bytes b = qvl_test::with_extra_tracks(clip("tiny_56x48_7.5fps"), 2000);
  const std::string e = error_of(b);
  EXPECT_NE(e.find("Number of streams exceeds max_streams parameter (16)"), std::string::npos) << e;
}

TEST(DecodeVideoHostile, ZeroDurationsInTheHeaders) {
  // Every sample lasts 0 ticks and the track 0 s: FFmpeg's MOV demuxer still
  // derives a rate (from the track's sample timing); whatever it derives,
  // sampling must get a finite positive rate and valid indices, never a
  // division by zero. (A container without any rate gets "video declares no
  // frame rate and its packets carry no durations".)
  Bytes b = clip("tiny_56x48_7.5fps");
  const size_t stts = qvl_test::find_box(b, "moov/trak/mdia/minf/stbl/stts");
  const uint32_t entries = qvl_test::be32(b, stts + 12);
  for (uint32_t i = 0; i < entries; ++i) qvl_test::put_be32(b, stts + 16 + 8 * i + 4, 0);
  const size_t mdhd = qvl_test::find_box(b, "moov/trak/mdia/mdhd");  // version 0: duration at +24
  qvl_test::put_be32(b, mdhd + 24, 0);
  const auto v = qvl::decode_video(b);
  EXPECT_TRUE(std::isfinite(v.fps) && v.fps > 0) << v.fps;
  EXPECT_EQ(v.total_frames, 12);
  EXPECT_EQ(v.frames.size(), v.frame_indices.size());
  EXPECT_EQ(v.frame_indices.back(), 11);
}

TEST(DecodeVideoHostile, UnsupportedCodec) {
  Bytes b = clip("tiny_56x48_7.5fps");
  std::memcpy(&b[qvl_test::sample_entry(b) + 4], "rpza", 4);  // Apple Video
  EXPECT_EQ(error_of(b),
            "unsupported video codec rpza (supported: H.264, H.265, AV1, VP8, VP9, MPEG-4 Part 2, GIF)");
}

TEST(DecodeVideoHostile, Deadline) {
  qvl::VideoLimits limits;
  limits.max_seconds = 1e-9;
  const std::string e = error_of(clip("stripes_96x64_24fps"), limits);
  EXPECT_NE(e.find("took over the limit of 1e-09 s"), std::string::npos) << e;
}

}  // namespace
