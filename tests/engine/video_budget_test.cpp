// The default video-token budget (EngineParams::max_video_tokens) on a clip
// the test makes: a minute of 640x360 video, which the reference processor
// alone would turn into ~12k prompt tokens, more than the default 8192-token
// context, stays within the budget with the frames and size it specifies.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/engine.h"
#include "engine/prompt.h"
#include "engine_fixtures.h"
#include "image/video_preprocess.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "video/encode.h"
#include "video/video.h"

namespace qvl {
namespace {

using namespace engine_test;

struct Fixture {
  ModelFolder folder = ModelFolder::open(kFixtures + "/tiny-qwen3vl");
  ChatTemplate tmpl = ChatTemplate::from_source(folder.chat_template);
  Tokenizer tok = Tokenizer::load(folder.tokenizer_json);
};
const Fixture& fixture() {
  static const Fixture f;
  return f;
}

// A moving gradient, 2 frames a second for `seconds` (what fps-2 sampling
// takes whole without a budget), MPEG-4 in AVI.
std::vector<uint8_t> clip(int width, int height, int seconds) {
  const VideoEncoding e{"avi", "mpeg4", width, height, 2, int64_t{seconds} * 2};
  return encode_video(e, [&](int64_t k) {
    Image im;
    im.width = width;
    im.height = height;
    im.rgb.resize(size_t(width) * height * 3);
    for (int y = 0; y < height; ++y)
      for (int x = 0; x < width; ++x)
        for (int c = 0; c < 3; ++c)
          im.rgb[(size_t(y) * width + x) * 3 + c] = static_cast<uint8_t>((x + y * (c + 1) + 9 * k) % 256);
    return im;
  });
}

// The video's prompt tokens: the prompt with it less the prompt without it.
int64_t video_tokens(const std::shared_ptr<const Video>& v, int64_t max_video_tokens, ImageGrid* grid = nullptr) {
  const Fixture& f = fixture();
  auto prompt = [&](bool with_video) {
    Message m{"user", {}};
    if (with_video) m.parts.push_back({"", nullptr, v});
    m.parts.push_back({"What happens in this clip?", nullptr});
    return prepare_prompt({m}, f.folder, f.tmpl, f.tok, PreprocessOptions{}, std::nullopt, max_video_tokens);
  };
  const PreparedPrompt with = prompt(true);
  if (grid) *grid = with.grids.at(0);
  return static_cast<int64_t>(with.ids.size() - prompt(false).ids.size());
}

VideoTokenBudget default_budget() {
  const PreprocessorConfig& frames = fixture().folder.video_preprocessor.frames;
  return {EngineParams{}.max_video_tokens, frames.factor(), frames.temporal_patch_size};
}

// kMaxGroupTextTokens bounds the text of a group: the longest timestamp a
// clip under VideoLimits::max_duration_s can have, tokenized, plus
// vision_start and vision_end.
TEST(VideoPromptBudget, GroupTextBoundIsTheLongestTimestamp) {
  const Tokenizer& tok = fixture().tok;
  EXPECT_EQ(video_timestamp_text(3599.75), "<3599.8 seconds>");
  EXPECT_EQ(static_cast<int64_t>(tok.encode(video_timestamp_text(3599.75)).size()) + 2, kMaxGroupTextTokens);
  EXPECT_LT(static_cast<int64_t>(tok.encode(video_timestamp_text(0.25)).size()) + 2, kMaxGroupTextTokens);
}

TEST(VideoPromptBudget, AMinuteOf640x360FitsTheDefaultBudgetAndContext) {
  const std::vector<uint8_t> bytes = clip(640, 360, 60);
  const VideoTokenBudget budget = default_budget();
  ASSERT_EQ(budget.max_tokens, 4096);
  const int64_t context = EngineParams{}.ctx_size;

  // The reference alone: 120 frames (fps 2) scaled into its 25165824-pixel
  // budget, 60 groups of 320x608 = 10x19 tokens, 11400 vision tokens: more
  // than the whole default context.
  auto reference = std::make_shared<const Video>(decode_video(bytes));
  EXPECT_EQ(reference->frames.size(), 120u);
  ImageGrid full;
  EXPECT_GT(video_tokens(reference, 0, &full), context);
  EXPECT_EQ(full.t * full.h / 2 * full.w / 2, 60 * 10 * 19);

  // With the budget: each group planned at min(128, 220) vision tokens + 11
  // of text, 4096 / 139 = 29 groups, so 58 frames, spread over the minute
  // as np.linspace(0, 119, 58) rounded half to even.
  FrameSampling sampling;
  sampling.budget = budget;
  auto v = std::make_shared<const Video>(decode_video(bytes, sampling));
  ASSERT_EQ(v->frames.size(), 58u);
  EXPECT_EQ(v->frame_indices, sample_frame_indices(120, 2.0, FrameSampling{2.0, 4, 58}));
  // Then the timestamps' text comes off the budget (as the tokenizer splits
  // it, with vision_start and vision_end: 8 tokens for the 5 groups under
  // 10 s, 9 for the 24 after, 256 in all) and the total pixel budget is
  // lowered for the rest: 4096 - 256 = 3840 tokens, max_pixels = 3840 · 32²
  // · 58 / 29; smart_resize scales 360x640 by sqrt(58·360·640 / max_pixels)
  // to 256x480 = 8x15 tokens a group.
  ImageGrid grid;
  const int64_t tokens = video_tokens(v, budget.max_tokens, &grid);
  EXPECT_EQ(grid.t, 29);
  EXPECT_EQ(grid.h * 16, 256);
  EXPECT_EQ(grid.w * 16, 480);
  EXPECT_EQ(tokens, 29 * 8 * 15 + 5 * 8 + 24 * 9);
  EXPECT_LE(tokens, budget.max_tokens);
  // The rest of the default context is the question's and the answer's.
  EXPECT_GE(context - tokens, context / 2);
  // The same 58 frames without the pixel budget would overflow it.
  EXPECT_GT(video_tokens(v, 0), budget.max_tokens);
}

// A small clip is left as the reference makes it: a minute of 160x96 needs
// 15 tokens a group, so all 120 frames fit (4096 / (15 + 11) = 157 groups)
// at their own size.
TEST(VideoPromptBudget, ASmallClipKeepsTheReferenceSampling) {
  const std::vector<uint8_t> bytes = clip(160, 96, 60);
  FrameSampling sampling;
  sampling.budget = default_budget();
  auto v = std::make_shared<const Video>(decode_video(bytes, sampling));
  EXPECT_EQ(v->frame_indices, decode_video(bytes).frame_indices);
  ImageGrid grid;
  const int64_t tokens = video_tokens(v, sampling.budget.max_tokens, &grid);
  EXPECT_EQ(grid.t, 60);
  EXPECT_EQ(grid.h * 16, 96);
  EXPECT_EQ(grid.w * 16, 160);
  EXPECT_EQ(tokens, video_tokens(v, 0));
}

// A budget the timestamps alone exhaust is refused in one line naming it.
TEST(VideoPromptBudget, TooSmallABudgetNamesTheOption) {
  auto v = std::make_shared<const Video>(decode_video(clip(160, 96, 10)));
  try {
    video_tokens(v, 30);
    FAIL() << "10 groups fit in 30 tokens";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--max-video-tokens"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qvl
