// Frame sampling and temporal-group timestamps against the reference's
// numbers (tests/fixtures/video/manifest.json) and the edge cases of the
// formula (video.h).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../image/golden_tensors.h"
#include "util/error.h"
#include "video/video.h"

namespace {

const std::string kVideoDir = std::string(QVL_FIXTURES_DIR) + "/video/";

nlohmann::json manifest() {
  const auto bytes = qvl_test::read_file(kVideoDir + "manifest.json");
  return nlohmann::json::parse(bytes.begin(), bytes.end());
}

std::string error_of(int64_t total, double fps, const qvl::FrameSampling& s = {}) {
  try {
    qvl::sample_frame_indices(total, fps, s);
  } catch (const qvl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FrameSampling, EveryReferenceCase) {
  const auto m = manifest();
  int cases = 0;
  for (const auto& [name, v] : m.at("videos").items()) {
    if (name.rfind("frames_", 0) == 0) continue;  // a frame list is not sampled
    qvl::FrameSampling s;
    if (v.at("processor_overrides").is_object() && v["processor_overrides"].contains("max_frames"))
      s.max_frames = v["processor_overrides"]["max_frames"].get<int>();
    const int64_t total = v.at("metadata").at("total_num_frames").get<int64_t>();
    const double fps = v.at("metadata").at("fps").get<double>();
    const auto idx = qvl::sample_frame_indices(total, fps, s);
    EXPECT_EQ(idx, v.at("sampling").at("frame_indices").get<std::vector<int64_t>>()) << name;
    const auto ts = qvl::temporal_group_timestamps(idx, fps);
    const auto want = v.at("timestamps").get<std::vector<double>>();
    ASSERT_EQ(ts.size(), want.size()) << name;
    for (size_t i = 0; i < ts.size(); ++i) EXPECT_NEAR(ts[i], want[i], 1e-12) << name << " group " << i;
    ++cases;
  }
  EXPECT_EQ(cases, 6);  // the 7 clips of the reference but gradient_320x240 (not copied: 1 MB)
}

TEST(FrameSampling, LinspaceRoundsHalfToEven) {
  // linspace(0, 26, 5) = 0, 6.5, 13, 19.5, 26 -> 6 and 20 (portrait case).
  EXPECT_EQ(qvl::sample_frame_indices(27, 10.0, {}), (std::vector<int64_t>{0, 6, 13, 20, 26}));
  // linspace(0, 5, 3) = 0, 2.5, 5 -> 2 with min_frames 3.
  EXPECT_EQ(qvl::sample_frame_indices(6, 30.0, {2.0, 3, 768}), (std::vector<int64_t>{0, 2, 5}));
}

TEST(FrameSampling, CountIsClampedToMinMaxAndTotal) {
  EXPECT_EQ(qvl::sample_frame_indices(12, 7.5, {}).size(), 4u);          // int(3.2) = 3 -> min 4
  EXPECT_EQ(qvl::sample_frame_indices(3, 30.0, {}), (std::vector<int64_t>{0, 1, 2}));  // fewer frames than min
  EXPECT_EQ(qvl::sample_frame_indices(1, 30.0, {}), (std::vector<int64_t>{0}));
  EXPECT_EQ(qvl::sample_frame_indices(216000, 60.0, {}).size(), 768u);  // 1 h: max binds
  EXPECT_EQ(qvl::sample_frame_indices(216000, 1e-300, {}).size(), 768u);  // no overflow in int()
  // int(100 / 25 * 2) = 8, truncated, not rounded: 100/25*2.4 = 9.6 -> 9.
  EXPECT_EQ(qvl::sample_frame_indices(100, 25.0, {2.4, 4, 768}).size(), 9u);
}

TEST(FrameSampling, RefusesUnusableInput) {
  EXPECT_EQ(error_of(0, 30.0), "video has no frames");
  EXPECT_EQ(error_of(10, 0.0), "video frame rate 0 is not a positive number");
  EXPECT_EQ(error_of(10, std::nan("")), "video frame rate nan is not a positive number");
  EXPECT_EQ(error_of(10, 30.0, {-1.0, 4, 768}), "sampling fps -1 is not a positive number");
  EXPECT_EQ(error_of(10, 30.0, {2.0, 8, 4}), "sampling frame range [8, 4] is empty");
}

// The video-token budget lowers max_frames to budget / (min(128, the clip's
// own tokens per group) + 11) groups of 2 frames (video.h).
TEST(FrameSampling, TokenBudgetLowersMaxFramesForTheClipSize) {
  qvl::FrameSampling s;
  s.budget = {4096, 32, 2};
  // 640x360: 20 x round(11.25) = 220 tokens a group, planned at 128.
  EXPECT_EQ(qvl::within_token_budget(s, 640, 360).max_frames, 2 * (4096 / 139));
  // 112x80: 4 x round(2.5) = 8 (half to even): 4096 / 19 = 215 groups.
  EXPECT_EQ(qvl::within_token_budget(s, 112, 80).max_frames, 430);
  // 16x16 rounds to no token side: one token a group, 4096 / 12 = 341 groups.
  EXPECT_EQ(qvl::within_token_budget(s, 16, 16).max_frames, 682);
  // A request's lower max_frames stays; min_frames never passes max_frames.
  s.max_frames = 20;
  EXPECT_EQ(qvl::within_token_budget(s, 640, 360).max_frames, 20);
  s = {};
  s.min_frames = 100;
  s.budget = {1000, 32, 2};
  const qvl::FrameSampling low = qvl::within_token_budget(s, 1920, 1080);
  EXPECT_EQ(low.max_frames, 2 * (1000 / 139));
  EXPECT_EQ(low.min_frames, low.max_frames);
  // A budget under one group still samples one group.
  s.budget = {50, 32, 2};
  EXPECT_EQ(qvl::within_token_budget(s, 1920, 1080).max_frames, 2);
  // No budget: the processor's own range.
  s = {};
  EXPECT_EQ(qvl::within_token_budget(s, 1920, 1080).max_frames, 768);
  EXPECT_EQ(qvl::sample_frame_indices(1800, 30.0, qvl::within_token_budget({2.0, 4, 768, {4096, 32, 2}}, 640, 360))
                .size(),
            58u);
}

TEST(TemporalGroupTimestamps, OddCountRepeatsTheLastFrame) {
  const std::vector<int64_t> idx = {0, 6, 13, 20, 26};
  const auto ts = qvl::temporal_group_timestamps(idx, 10.0);
  ASSERT_EQ(ts.size(), 3u);
  EXPECT_DOUBLE_EQ(ts[0], 0.3);
  EXPECT_DOUBLE_EQ(ts[1], 1.65);
  EXPECT_DOUBLE_EQ(ts[2], 2.6);  // (2.6 + 2.6) / 2
}

}  // namespace
