// The vision tower run piece by piece (VisionEncoder::begin / step / finish)
// gives the same bits as encode(), for one and for two images, whether the
// pieces run back to back or interleaved with another encoding on the same
// pool; the pieces' costs add up to flops().
#include <gtest/gtest.h>

#include <cstring>

#include "golden.h"
#include "tiny_model.h"
#include "util/error.h"

namespace qvl {
namespace {

VisionInput input_of(const std::string& file) {
  const golden::File& f = golden::file(file);
  return {f["pixel_values"].f.data(), golden::grids_of(f["image_grid_thw"])[0]};
}

::testing::AssertionResult same_bits(const std::string& what, const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << what << ": " << a.size() << " values vs " << b.size();
  for (size_t k = 0; k < a.size(); ++k)
    if (std::memcmp(&a[k], &b[k], sizeof(float)) != 0)
      return ::testing::AssertionFailure() << what << ": first difference at " << k << ": " << a[k] << " vs " << b[k];
  return ::testing::AssertionSuccess();
}

void expect_same(const VisionFeatures& got, const VisionFeatures& want) {
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.image_tokens, want.image_tokens);
  EXPECT_TRUE(same_bits("embeds", got.embeds, want.embeds));
  ASSERT_EQ(got.deepstack.size(), want.deepstack.size());
  for (size_t k = 0; k < want.deepstack.size(); ++k)
    EXPECT_TRUE(same_bits("deepstack " + std::to_string(k), got.deepstack[k], want.deepstack[k]));
}

class VisionStepping : public ::testing::TestWithParam<WeightFormat> {};

// Pieces: the embedding, two halves per block, one per DeepStack level that
// names a block, the final merger.
size_t expected_pieces(const VisionConfig& c) {
  size_t ds = 0;
  for (int i : c.deepstack_visual_indexes) ds += i >= 0 && i < c.depth;
  return 1 + 2 * static_cast<size_t>(c.depth) + ds + 1;
}

TEST_P(VisionStepping, PieceByPieceEqualsEncode) {
  Model& model = golden::tiny(GetParam());
  const VisionEncoder& v = model.vision();
  const std::vector<std::vector<VisionInput>> cases = {
      {input_of("vision_gradient_320x240.safetensors")},
      {input_of("vision_text_400x128.safetensors"), input_of("vision_odd_313x97.safetensors")}};
  for (const auto& images : cases) {
    SCOPED_TRACE(images.size());
    VisionTrace want_trace, got_trace;
    const VisionFeatures want = v.encode(images, golden::pool(), &want_trace);
    VisionEncoding s = v.begin(images, &got_trace);
    ASSERT_EQ(s.pieces(), expected_pieces(model.config().vision));
    EXPECT_THROW(v.finish(s), Error);  // nothing run yet
    size_t steps = 0;
    double flops = 0;
    while (!s.done()) {
      EXPECT_EQ(s.pieces_done(), steps);
      EXPECT_GT(s.next_flops(), 0);
      flops += s.next_flops();
      v.step(s, golden::pool());
      ++steps;
    }
    EXPECT_EQ(steps, s.pieces());
    std::vector<ImageGrid> grids;
    for (const VisionInput& in : images) grids.push_back(in.grid);
    EXPECT_NEAR(flops, v.flops(grids), 1e-9 * v.flops(grids));  // the pieces' costs add up
    EXPECT_EQ(s.next_flops(), 0);
    EXPECT_THROW(v.step(s, golden::pool()), Error);
    expect_same(v.finish(s), want);
    EXPECT_TRUE(same_bits("patch_embed", got_trace.patch_embed, want_trace.patch_embed));
    EXPECT_TRUE(same_bits("patch_embed_pos", got_trace.patch_embed_pos, want_trace.patch_embed_pos));
    ASSERT_EQ(got_trace.blocks.size(), want_trace.blocks.size());
    for (size_t b = 0; b < want_trace.blocks.size(); ++b)
      EXPECT_TRUE(same_bits("block " + std::to_string(b), got_trace.blocks[b], want_trace.blocks[b]));
  }
}

// Two encodings advanced in turn on one pool (as the engine does for two
// requests): each keeps its own state.
TEST_P(VisionStepping, TwoEncodingsInterleaved) {
  Model& model = golden::tiny(GetParam());
  const VisionEncoder& v = model.vision();
  const VisionInput a[1] = {input_of("vision_banker_464x336.safetensors")};
  const VisionInput b[2] = {input_of("vision_tall_120x600.safetensors"), input_of("vision_tiny_40x36.safetensors")};
  const VisionFeatures want_a = v.encode(a, golden::pool()), want_b = v.encode(b, golden::pool());
  VisionEncoding sa = v.begin(a), sb = v.begin(b);
  while (!sa.done() || !sb.done()) {
    if (!sa.done()) v.step(sa, golden::pool());
    if (!sb.done()) v.step(sb, golden::pool());
  }
  expect_same(v.finish(sa), want_a);
  expect_same(v.finish(sb), want_b);
}

TEST(VisionSteppingErrors, NoImagesIsDoneAtOnce) {
  const Model& model = golden::tiny(WeightFormat::F32);
  const VisionEncoder& v = model.vision();
  VisionEncoding s = v.begin({});
  EXPECT_TRUE(s.done());
  const VisionFeatures f = v.finish(s);
  EXPECT_EQ(f.tokens, 0);
  EXPECT_TRUE(f.embeds.empty());
}

TEST(VisionSteppingErrors, BadGridRefusedAtBegin) {
  const Model& model = golden::tiny(WeightFormat::F32);
  const VisionEncoder& v = model.vision();
  const float px = 0;
  const VisionInput bad{&px, {1, 3, 4}};
  EXPECT_THROW(v.begin({&bad, 1}), Error);
}

INSTANTIATE_TEST_SUITE_P(Formats, VisionStepping, ::testing::Values(WeightFormat::F32, WeightFormat::BF16),
                         [](const auto& info) { return std::string(weight_format_name(info.param)); });

}  // namespace
}  // namespace qvl
