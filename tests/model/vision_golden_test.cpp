// The vision tower stage by stage against the reference, from the golden
// pixel values: patch embedding, + position embedding, first and last block,
// merger, every DeepStack feature. f32 and bf16 weights, every fixture image.
#include <gtest/gtest.h>

#include "golden.h"
#include "tiny_model.h"

namespace qvl {
namespace {

class VisionGolden : public ::testing::TestWithParam<WeightFormat> {};

TEST_P(VisionGolden, EveryStageOfEveryImage) {
  Model& model = golden::tiny(GetParam());
  const auto& tol = golden::manifest()["tolerances"]["vision.*"];
  const double atol = tol["atol"], rtol = tol["rtol"];
  const int depth = model.config().vision.depth;
  for (const auto& [name, img] : golden::manifest()["images"].items()) {
    SCOPED_TRACE(name);
    const golden::File& f = golden::file(img["file"]);
    const std::vector<ImageGrid> grids = golden::grids_of(f["image_grid_thw"]);
    ASSERT_EQ(grids.size(), 1u);
    const VisionInput in{f["pixel_values"].f.data(), grids[0]};
    VisionTrace trace;
    const VisionFeatures out = model.vision().encode({&in, 1}, golden::pool(), &trace);
    ASSERT_EQ(out.tokens, img["num_image_tokens"].get<int64_t>());
    EXPECT_TRUE(golden::close("vision.patch_embed", trace.patch_embed.data(), f["vision.patch_embed"].f, atol, rtol));
    EXPECT_TRUE(golden::close("vision.patch_embed_pos", trace.patch_embed_pos.data(), f["vision.patch_embed_pos"].f,
                              atol, rtol));
    EXPECT_TRUE(golden::close("vision.block0", trace.blocks[0].data(), f["vision.block0"].f, atol, rtol));
    const std::string last = "vision.block" + std::to_string(depth - 1);
    EXPECT_TRUE(golden::close(last, trace.blocks[depth - 1].data(), f[last].f, atol, rtol));
    EXPECT_TRUE(golden::close("vision.merger", out.embeds.data(), f["vision.merger"].f, atol, rtol));
    for (size_t k = 0; k < out.deepstack.size(); ++k) {
      const std::string ds = "vision.deepstack." + std::to_string(k);
      EXPECT_TRUE(golden::close(ds, out.deepstack[k].data(), f[ds].f, atol, rtol));
    }
  }
}

// Two images in one call: each attends only to itself, so each image's
// features equal those of encoding it alone.
TEST_P(VisionGolden, SeveralImagesInOneCall) {
  Model& model = golden::tiny(GetParam());
  const golden::File& a = golden::file("vision_text_400x128.safetensors");
  const golden::File& b = golden::file("vision_odd_313x97.safetensors");
  const VisionInput in[2] = {{a["pixel_values"].f.data(), golden::grids_of(a["image_grid_thw"])[0]},
                             {b["pixel_values"].f.data(), golden::grids_of(b["image_grid_thw"])[0]}};
  const VisionFeatures out = model.vision().encode(in, golden::pool());
  const int64_t h = model.config().vision.out_hidden_size;
  ASSERT_EQ(out.image_tokens.size(), 2u);
  EXPECT_TRUE(golden::close("vision.merger image 1", out.embeds.data(), a["vision.merger"].f, 2e-4, 1e-4));
  EXPECT_TRUE(golden::close("vision.merger image 2", out.embeds.data() + out.image_tokens[0] * h, b["vision.merger"].f,
                            2e-4, 1e-4));
  EXPECT_TRUE(golden::close("vision.deepstack.2 image 2", out.deepstack[2].data() + out.image_tokens[0] * h,
                            b["vision.deepstack.2"].f, 2e-4, 1e-4));
}

INSTANTIATE_TEST_SUITE_P(Formats, VisionGolden, ::testing::Values(WeightFormat::F32, WeightFormat::BF16),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

}  // namespace
}  // namespace qvl
