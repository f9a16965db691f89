// decode_video's skipping (seeks over whole groups of pictures, non-reference
// frames discarded, frame threads) against decoding every frame in order on
// one thread: the kept frames must be the same frames, bit for bit, on the
// fixture clips and on clips made here with B-frames, long GOPs, open GOPs
// and HEVC; streams whose packets cannot be trusted to be their frames are
// decoded whole. The decode statistics show which path ran.
#include <gtest/gtest.h>

#include <string>

#include "../image/golden_tensors.h"
#include "mp4_boxes.h"
#include "util/error.h"
#include "video/encode.h"
#include "video/video.h"

namespace {

using qvl_test::Bytes;
const std::string kVideoDir = std::string(QVL_FIXTURES_DIR) + "/video/";

constexpr int kWidth = 160, kHeight = 96, kFps = 24, kFrames = 240;  // 10 s

// A gradient drifting, a block crossing the frame and frame k's number in
// binary along the top: neighbours differ, and the motion makes P- and
// B-frames predict from each other.
qvl::Image scene(int64_t k) {
  qvl::Image im;
  im.width = kWidth;
  im.height = kHeight;
  im.rgb.resize(size_t(kWidth) * kHeight * 3);
  const int block_x = static_cast<int>(k * 4 % kWidth);
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      uint8_t* px = &im.rgb[(size_t(y) * kWidth + x) * 3];
      const bool block = x >= block_x && x < block_x + 24 && y >= 30 && y < 60;
      const bool bit = y < 8 && x / 10 < 16 && ((k >> (x / 10)) & 1);
      px[0] = block ? 250 : bit ? 255 : static_cast<uint8_t>(x * 2 + k * 3);
      px[1] = block ? 40 : bit ? 255 : static_cast<uint8_t>(y * 2 + k);
      px[2] = block ? 40 : bit ? 255 : static_cast<uint8_t>((x + y) / 2 + k * 5);
    }
  return im;
}

qvl::FrameSampling at_most(int frames) {
  qvl::FrameSampling s;
  s.max_frames = frames;
  s.min_frames = std::min(s.min_frames, frames);
  return s;
}

struct Decodes {
  qvl::Video fast, every;
};

// The default decode (skipping, threads from the cores, or `threads`)
// beside every frame decoded in order on one thread.
Decodes decode_both(const Bytes& clip, const qvl::FrameSampling& s, int threads = 0) {
  return {qvl::decode_video(clip, s, {}, {true, threads}), qvl::decode_video(clip, s, {}, {false, 1})};
}

void expect_same_frames(const Decodes& d) {
  EXPECT_EQ(d.fast.frame_indices, d.every.frame_indices);
  EXPECT_EQ(d.fast.total_frames, d.every.total_frames);
  ASSERT_EQ(d.fast.frames.size(), d.every.frames.size());
  ASSERT_EQ(d.every.frames.size(), d.every.frame_indices.size());
  for (size_t i = 0; i < d.fast.frames.size(); ++i) {
    EXPECT_EQ(d.fast.frames[i].width, d.every.frames[i].width);
    EXPECT_EQ(d.fast.frames[i].height, d.every.frames[i].height);
    EXPECT_TRUE(d.fast.frames[i].rgb == d.every.frames[i].rgb)
        << "kept frame " << i << " (frame " << d.every.frame_indices[i] << ") differs";
  }
  // The reference decoded every frame up to the last sampled one, itself.
  EXPECT_FALSE(d.every.decoding.skipped);
  EXPECT_EQ(d.every.decoding.threads, 1);
  EXPECT_EQ(d.every.decoding.frames_decoded, d.every.frame_indices.back() + 1);
}

// ------------------------------------------------------------ fixture clips

class SkipFixtureClips : public testing::TestWithParam<const char*> {};

TEST_P(SkipFixtureClips, SameFramesAsDecodingEverything) {
  const Bytes clip = qvl_test::read_file(kVideoDir + "videos/" + GetParam() + ".mp4");
  for (const int most : {768, 6, 4}) {
    SCOPED_TRACE(most);
    const Decodes d = decode_both(clip, at_most(most));
    expect_same_frames(d);
    EXPECT_TRUE(d.fast.decoding.skipped);  // H.264 in MP4, one frame per packet
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SkipFixtureClips,
                         testing::Values("tiny_56x48_7.5fps", "stripes_96x64_24fps", "portrait_120x216_10fps",
                                         "long_112x80_24fps", "yuv420p_160x128_25fps"));

// ------------------------------------------------------------ clips made here

struct Clip {
  const char* name;
  const char* container;
  const char* encoder;
  int keyframe_interval;
  int b_frames;
  const char* params;
  bool skips;     // decoded from its packet table (H.264 / H.265 with one frame per packet)
  bool discards;  // non-reference frames not sampled are discarded (where there are any)
  bool seeks;     // clean starts beside the first: runs start at them, the demuxer seeks
};

void PrintTo(const Clip& c, std::ostream* os) { *os << c.name; }

class SkipEncodedClips : public testing::TestWithParam<Clip> {};

TEST_P(SkipEncodedClips, SameFramesAsDecodingEverything) {
  const Clip& c = GetParam();
  qvl::VideoEncoding e{c.container, c.encoder, kWidth, kHeight, kFps, kFrames};
  e.keyframe_interval = c.keyframe_interval;
  e.b_frames = c.b_frames;
  e.params = c.params;
  ASSERT_TRUE(qvl::can_encode(e)) << c.encoder << " in " << c.container << " is not in this FFmpeg";
  const Bytes clip = qvl::encode_video(e, scene);

  // 2 fps: 20 frames 12 apart, closer than a group of pictures.
  Decodes d = decode_both(clip, {});
  ASSERT_EQ(d.every.frame_indices.size(), 20u);
  expect_same_frames(d);
  EXPECT_EQ(d.fast.decoding.skipped, c.skips);
  EXPECT_EQ(d.fast.decoding.discarded, c.discards);
  if (c.discards && c.b_frames > 0)  // of every 4 frames, 2 B-frames nothing refers to
    EXPECT_LT(d.fast.decoding.frames_decoded, d.fast.decoding.packets_sent * 3 / 4) << "non-reference frames decoded";
  else if (c.skips)  // all decoded but a CRA's leading pictures where a run starts at it
    EXPECT_GT(d.fast.decoding.frames_decoded, d.fast.decoding.packets_sent * 9 / 10);

  // 4 frames 80 apart (0, 80, 159, 239): whole groups between them.
  d = decode_both(clip, at_most(4));
  expect_same_frames(d);
  EXPECT_EQ(d.fast.decoding.skipped, c.skips);
  if (c.seeks) {
    EXPECT_GE(d.fast.decoding.seeks, 1);
    EXPECT_LT(d.fast.decoding.packets_sent, kFrames / 2);
  } else {
    EXPECT_EQ(d.fast.decoding.seeks, 0);
  }

  // One thread or three: the same frames.
  expect_same_frames(decode_both(clip, at_most(9), 1));
  expect_same_frames(decode_both(clip, at_most(9), 3));
}

INSTANTIATE_TEST_SUITE_P(
    Debian, SkipEncodedClips,
    testing::Values(
        // B-pyramid (the middle B a reference, the others not), a keyframe every 40.
        Clip{"h264_bframes", "mp4", "libx264", 40, 3, "", true, true, true},
        // P-frames only: every frame a reference, so only the seeks skip.
        Clip{"h264_p_only", "mp4", "libx264", 40, 0, "", true, true, true},
        // Open GOPs: keyframes after the first are I-frames, not IDR: no
        // clean start but the first, so no run starts elsewhere.
        Clip{"h264_open_gop", "mp4", "libx264", 40, 3, "open-gop=1", true, true, false},
        Clip{"h264_matroska", "matroska", "libx264", 40, 3, "", true, true, true},
        // x265's default open GOPs: CRA pictures, clean starts whose leading
        // pictures need the group before.
        Clip{"hevc_cra", "mp4", "libx265", 40, 3, "", true, true, true},
        // A second temporal sub-layer: its non-reference pictures may be
        // references of a higher one, so none is discarded.
        Clip{"hevc_temporal_layers", "mp4", "libx265", 40, 3, "temporal-layers=1", true, false, true},
        // VP9: no NAL units to read, decoded whole (on the threads).
        Clip{"vp9_webm", "webm", "libvpx-vp9", 40, -1, "", false, false, false}),
    [](const testing::TestParamInfo<Clip>& i) { return std::string(i.param.name); });

// ------------------------------------------------------------ decoded whole

// AVI stores no presentation times: with B-frames its packets cannot say
// which frame is which, and the clip is decoded whole.
TEST(SkipDecode, AviWithBFramesIsDecodedWhole) {
  qvl::VideoEncoding e{"avi", "libx264", kWidth, kHeight, kFps, kFrames};
  e.keyframe_interval = 40;
  e.b_frames = 3;
  const Bytes clip = qvl::encode_video(e, scene);
  const Decodes d = decode_both(clip, at_most(4));
  expect_same_frames(d);
  EXPECT_FALSE(d.fast.decoding.skipped);
}

// ISO 14496-12 'ctts' (composition offsets) and 'elst' (edit list) zeroed:
// every pts then says decode order while the decoder still shows B-frames
// after the P-frames they precede. The first frame out of its pts order
// makes the decode give up on skipping and decode everything, so the frames
// kept are what decoding everything keeps.
Bytes with_decode_order_timestamps(Bytes b) {
  const size_t ctts = qvl_test::find_box(b, "moov/trak/mdia/minf/stbl/ctts");
  const uint32_t entries = qvl_test::be32(b, ctts + 12);
  for (uint32_t i = 0; i < entries; ++i) qvl_test::put_be32(b, ctts + 16 + 8 * i + 4, 0);
  const size_t elst = qvl_test::find_box(b, "moov/trak/edts/elst");
  if (b[elst + 8] == 0)  // version 0: segment_duration, media_time 32-bit
    qvl_test::put_be32(b, elst + 16 + 4, 0);
  else  // version 1: 64-bit
    for (size_t i = 0; i < 8; ++i) b[elst + 16 + 8 + i] = 0;
  return b;
}

TEST(SkipDecode, GivesUpWhenFramesComeOutOfTheirTimestampOrder) {
  qvl::VideoEncoding e{"mp4", "libx264", kWidth, kHeight, kFps, kFrames};
  e.keyframe_interval = 40;
  e.b_frames = 3;
  const Bytes clip = with_decode_order_timestamps(qvl::encode_video(e, scene));
  const Decodes d = decode_both(clip, at_most(9));
  expect_same_frames(d);
  EXPECT_FALSE(d.fast.decoding.skipped);
}

// A damaged clip reports what decoding everything reports (its table, with
// a packet cut off, plans nothing).
TEST(SkipDecode, TruncatedClipsReportAsBefore) {
  const Bytes full = qvl_test::read_file(kVideoDir + "videos/stripes_96x64_24fps.mp4");
  for (const double keep : {0.3, 0.6, 0.95}) {
    const Bytes cut(full.begin(), full.begin() + static_cast<long>(full.size() * keep));
    auto error_of = [&](const qvl::VideoDecoding& how) -> std::string {
      try {
        qvl::decode_video(cut, at_most(4), {}, how);
      } catch (const qvl::Error& err) {
        return err.what();
      }
      return "(no error)";
    };
    const std::string every = error_of({false, 1});
    EXPECT_NE(every, "(no error)") << keep;
    EXPECT_EQ(error_of({}), every) << keep;
  }
}

TEST(SkipDecode, ThreadsFromTheCoresShared) {
  EXPECT_GE(qvl::video_decoder_threads(1), 1);
  EXPECT_LE(qvl::video_decoder_threads(1), qvl::kMaxDecoderThreads);
  EXPECT_EQ(qvl::video_decoder_threads(1000), 1);
  EXPECT_LE(qvl::video_decoder_threads(2), qvl::video_decoder_threads(1));
  const Bytes clip = qvl_test::read_file(kVideoDir + "videos/stripes_96x64_24fps.mp4");
  EXPECT_EQ(qvl::decode_video(clip, {}, {}, {true, 3}).decoding.threads, 3);
  EXPECT_EQ(qvl::decode_video(clip, {}, {}, {true, 100}).decoding.threads, qvl::kMaxDecoderThreads);
}

}  // namespace
