// The vision tower on videos against the reference: the temporal groups of
// a clip go through the same tower as images, attention within each group,
// position embeddings and 2-D rotary repeated per group. From the golden
// pixel_values_videos where the fixture keeps them, else from the golden
// decoded frames through preprocess_video.
#include <gtest/gtest.h>

#include "golden.h"
#include "image/video_preprocess.h"
#include "tiny_model.h"

namespace qvl {
namespace {

constexpr double kAtol = 2e-4, kRtol = 1e-4;  // video manifest tolerances["vision.*"]

std::vector<Image> frames_of(const golden::Tensor& t) {
  std::vector<Image> frames(static_cast<size_t>(t.shape[0]));
  const size_t per = static_cast<size_t>(t.shape[1] * t.shape[2] * 3);
  for (size_t i = 0; i < frames.size(); ++i) {
    frames[i].height = static_cast<int>(t.shape[1]);
    frames[i].width = static_cast<int>(t.shape[2]);
    frames[i].rgb.assign(t.u.begin() + static_cast<long>(i * per), t.u.begin() + static_cast<long>((i + 1) * per));
  }
  return frames;
}

struct Case {
  const char* file;
  int64_t max_pixels;
};

class VideoVisionGolden : public ::testing::TestWithParam<Case> {};

TEST_P(VideoVisionGolden, EveryStageOfTheClip) {
  Model& model = golden::tiny(WeightFormat::F32);
  const golden::File& f = golden::file(std::string(GetParam().file) + ".safetensors", "video");
  const ImageGrid grid = golden::grids_of(f["video_grid_thw"])[0];
  PixelValues pv;
  const float* pixels = nullptr;
  if (f.has("pixel_values_videos")) {
    pixels = f["pixel_values_videos"].f.data();
  } else {
    PreprocessOptions options;
    options.max_pixels = GetParam().max_pixels;
    pv = preprocess_video(frames_of(f["frames_rgb"]), model.folder().video_preprocessor.frames, options);
    ASSERT_EQ((ImageGrid{pv.grid_t, pv.grid_h, pv.grid_w}.patches()), grid.patches());
    pixels = pv.data.data();
  }
  const VisionInput in{pixels, grid};
  VisionTrace trace;
  const VisionFeatures out = model.vision().encode({&in, 1}, golden::pool(), &trace);
  ASSERT_EQ(out.tokens, grid.tokens(2));
  EXPECT_TRUE(golden::close("vision.patch_embed", trace.patch_embed.data(), f["vision.patch_embed"].f, kAtol, kRtol));
  EXPECT_TRUE(
      golden::close("vision.patch_embed_pos", trace.patch_embed_pos.data(), f["vision.patch_embed_pos"].f, kAtol, kRtol));
  EXPECT_TRUE(golden::close("vision.block0", trace.blocks[0].data(), f["vision.block0"].f, kAtol, kRtol));
  EXPECT_TRUE(golden::close("vision.block5", trace.blocks[5].data(), f["vision.block5"].f, kAtol, kRtol));
  EXPECT_TRUE(golden::close("vision.merger", out.embeds.data(), f["vision.merger"].f, kAtol, kRtol));
  for (size_t k = 0; k < out.deepstack.size(); ++k) {
    const std::string ds = "vision.deepstack." + std::to_string(k);
    EXPECT_TRUE(golden::close(ds, out.deepstack[k].data(), f[ds].f, kAtol, kRtol));
  }
}

INSTANTIATE_TEST_SUITE_P(Videos, VideoVisionGolden,
                         ::testing::Values(Case{"video_tiny_56x48_7.5fps", 0}, Case{"video_portrait_120x216_10fps", 0},
                                           Case{"video_stripes_96x64_24fps", 0},
                                           Case{"video_long_112x80_24fps__max6_px40000", 40000},
                                           Case{"video_frames_150x100_x6", 0}),
                         [](const auto& info) { return "case" + std::to_string(info.index); });

}  // namespace
}  // namespace qvl
