// M-RoPE position ids and rope deltas against the reference for every prompt,
// and the rope tables' frequency layout.
#include <gtest/gtest.h>

#include <cmath>

#include "golden.h"
#include "io/model_config.h"
#include "model/positions.h"
#include "model/rope_tables.h"
#include "tiny_model.h"
#include "util/error.h"

namespace qvl {
namespace {

constexpr int32_t kImage = 151655;

TEST(Positions, GoldenPromptsExact) {
  for (const auto& p : golden::manifest()["prompts"]) {
    SCOPED_TRACE(p["name"].get<std::string>());
    const golden::File& f = golden::file(p["file"]);
    const std::vector<int32_t> ids = golden::ids_of(f["input_ids"]);
    std::vector<ImageGrid> grids;
    if (f.has("image_grid_thw") && f["image_grid_thw"].numel() > 0) grids = golden::grids_of(f["image_grid_thw"]);
    const PromptPositions got = rope_index(ids, grids, kImage, 2);
    const golden::Tensor& want = f["position_ids"];
    const int64_t n = static_cast<int64_t>(ids.size());
    ASSERT_EQ(want.shape[1], n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got.pos[i].t, want.i[i]) << "t at " << i;
      ASSERT_EQ(got.pos[i].h, want.i[n + i]) << "h at " << i;
      ASSERT_EQ(got.pos[i].w, want.i[2 * n + i]) << "w at " << i;
    }
    EXPECT_EQ(got.rope_delta, f["rope_delta"].i[0]);
    EXPECT_EQ(got.rope_delta, p["rope_delta"].get<int64_t>());
  }
}

TEST(Positions, ImageGridMismatchIsAnError) {
  std::vector<int32_t> ids = {1, kImage, kImage, kImage, 2};
  std::vector<ImageGrid> grids = {{1, 4, 4}};  // needs 4 tokens
  EXPECT_THROW(rope_index(ids, grids, kImage, 2), Error);
  EXPECT_THROW(rope_index(ids, {}, kImage, 2), Error);
  std::vector<ImageGrid> two = {{1, 2, 6}, {1, 2, 2}};
  EXPECT_THROW(rope_index(ids, two, kImage, 2), Error);  // second image has no tokens
}

TEST(Positions, ImageAdvancesByItsLargestSide) {
  // text, a 1x2x3 merged image, text: the text after continues at max + 1.
  std::vector<int32_t> ids = {7, 8, kImage, kImage, kImage, kImage, kImage, kImage, 9};
  std::vector<ImageGrid> grids = {{1, 4, 6}};
  PromptPositions p = rope_index(ids, grids, kImage, 2);
  EXPECT_EQ(p.pos[2], (Pos3{2, 2, 2}));
  EXPECT_EQ(p.pos[7], (Pos3{2, 3, 4}));
  EXPECT_EQ(p.pos[8], (Pos3{5, 5, 5}));
  EXPECT_EQ(p.rope_delta, 6 - 9);
  std::vector<int64_t> rows = image_rows(ids, kImage);
  EXPECT_EQ(rows[1], -1);
  EXPECT_EQ(rows[2], 0);
  EXPECT_EQ(rows[7], 5);
}

TEST(RopeTables, InterleavedSectionsPickAxes) {
  TextConfig c;
  c.head_dim = 32;
  c.rope_theta = 5e6;
  c.mrope_section = {8, 4, 4};
  TextRope rope(c);
  // Distinct positions per axis reveal which axis drives each frequency.
  const Pos3 pos{3, 5, 7};
  std::vector<float> cs(16), sn(16);
  rope.fill(&pos, 1, cs.data(), sn.data());
  for (int j = 0; j < 16; ++j) {
    const double inv = 1.0 / std::pow(5e6, 2.0 * j / 32);
    int axis = 0;
    if (j % 3 == 1 && j < 12) axis = 1;
    if (j % 3 == 2 && j < 12) axis = 2;
    const double p = axis == 0 ? 3 : (axis == 1 ? 5 : 7);
    EXPECT_NEAR(cs[j], std::cos(inv * p), 1e-5) << "frequency " << j;
    EXPECT_NEAR(sn[j], std::sin(inv * p), 1e-5) << "frequency " << j;
  }
}

TEST(RopeTables, VisionRowsThenColumns) {
  VisionRope rope(24);  // 6 frequencies per axis
  const int32_t row = 3, col = 5;
  std::vector<float> cs(12), sn(12);
  rope.fill(&row, &col, 1, cs.data(), sn.data());
  for (int j = 0; j < 6; ++j) {
    const double inv = 1.0 / std::pow(10000.0, 2.0 * j / 12);
    EXPECT_NEAR(sn[j], std::sin(inv * row), 1e-6);
    EXPECT_NEAR(sn[6 + j], std::sin(inv * col), 1e-6);
  }
}

}  // namespace
}  // namespace qvl
