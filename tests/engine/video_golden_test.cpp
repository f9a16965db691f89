// Video prompts end to end on the fixture model against the reference
// (tests/fixtures/video): clip file -> decode + sampling -> video processor
// -> timestamps and expansion in the prompt -> M-RoPE positions -> vision +
// decoder -> 16 greedy tokens. Token ids, position ids, rope delta and the
// generated ids must be exact.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "../image/golden_tensors.h"
#include "engine/engine.h"
#include "engine/prompt.h"
#include "engine_fixtures.h"
#include "tokenizer/tokenizer.h"
#include "video/video.h"

namespace qvl {
namespace {

using namespace engine_test;
const std::string kVideoDir = kFixtures + "/video/";

const nlohmann::json& video_manifest() {
  static const nlohmann::json m = [] {
    const auto bytes = qvl_test::read_file(kVideoDir + "manifest.json");
    return nlohmann::json::parse(bytes.begin(), bytes.end());
  }();
  return m;
}

const nlohmann::json& prompt_case(std::string_view name) {
  for (const auto& p : video_manifest()["prompts"])
    if (p["name"].get_ref<const std::string&>() == name) return p;
  throw std::runtime_error("no golden video prompt " + std::string(name));
}

std::shared_ptr<const Video> video_part(const nlohmann::json& part) {
  const auto& v = part["video"];
  if (v.is_string()) {
    const auto bytes = qvl_test::read_file(kVideoDir + v.get<std::string>());
    return std::make_shared<Video>(decode_video(bytes));
  }
  std::vector<Image> frames;
  for (const auto& f : v) frames.push_back(load_image(kVideoDir + f.get<std::string>()));
  return std::make_shared<Video>(video_from_frames(std::move(frames), part["sample_fps"].get<double>()));
}

std::vector<Message> messages_of(const nlohmann::json& p) {
  std::vector<Message> out;
  for (const auto& m : p["messages"]) {
    Message msg;
    msg.role = m["role"];
    if (m["content"].is_string()) {
      msg.parts.push_back({m["content"].get<std::string>(), nullptr, nullptr});
    } else {
      for (const auto& part : m["content"]) {
        if (part["type"] == "video") msg.parts.push_back({"", nullptr, video_part(part)});
        else msg.parts.push_back({part["text"].get<std::string>(), nullptr, nullptr});
      }
    }
    out.push_back(std::move(msg));
  }
  return out;
}

Engine& engine() {
  static std::unique_ptr<Engine> e = [] {
    EngineParams p;
    p.model_dir = kFixtures + "/tiny-qwen3vl";
    p.threads = 2;
    p.ctx_size = 1024;
    p.max_video_tokens = 0;  // the reference processor has no token budget
    return Engine::create(p);
  }();
  return *e;
}

std::vector<int32_t> i32(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

class VideoPromptGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(VideoPromptGolden, TokensPositionsAndGreedyIds) {
  const nlohmann::json& p = prompt_case(GetParam());
  auto golden = qvl_test::read_safetensors(kVideoDir + p["file"].get<std::string>());
  const std::vector<Message> msgs = messages_of(p);

  const ModelFolder folder = ModelFolder::open(kFixtures + "/tiny-qwen3vl");
  const ChatTemplate tmpl = ChatTemplate::from_source(folder.chat_template);
  const Tokenizer tok = Tokenizer::load(folder.tokenizer_json);
  const PreparedPrompt prepared = prepare_prompt(msgs, folder, tmpl, tok, PreprocessOptions{}, std::nullopt);
  EXPECT_EQ(prepared.ids, i32(golden.at("input_ids").as<int64_t>()));
  const auto pos = golden.at("position_ids").as<int64_t>();
  const size_t L = prepared.ids.size();
  ASSERT_EQ(pos.size(), 3 * L);
  for (size_t i = 0; i < L; ++i) {
    const Pos3 want{pos[i], pos[L + i], pos[2 * L + i]};
    ASSERT_EQ(prepared.positions.pos[i], want) << "token " << i;
  }
  EXPECT_EQ(prepared.positions.rope_delta, golden.at("rope_delta").as<int64_t>()[0]);
  const auto thw = golden.at("video_grid_thw").as<int64_t>();
  ASSERT_EQ(prepared.grids.size(), 1u);
  EXPECT_EQ((std::vector<int64_t>{prepared.grids[0].t, prepared.grids[0].h, prepared.grids[0].w}), thw);

  engine().reset();
  GenerateResult r = engine().generate(greedy_request(msgs, 16));
  EXPECT_EQ(r.prompt_tokens, p["num_tokens"].get<int64_t>());
  EXPECT_EQ(r.token_ids, i32(golden.at("generated_ids").as<int64_t>()));
  EXPECT_EQ(r.text, p["generated_text_skip_special"].get<std::string>());
}

INSTANTIATE_TEST_SUITE_P(Prompts, VideoPromptGolden,
                         ::testing::Values("video_question", "two_turn_video", "frame_list_video"));

// The second turn of a video conversation reuses the video's KV rows; the
// answer is the same as computed from scratch.
TEST(VideoPrompt, SecondTurnReusesTheVideo) {
  const nlohmann::json& p = prompt_case("two_turn_video");
  auto golden = qvl_test::read_safetensors(kVideoDir + p["file"].get<std::string>());
  std::vector<Message> full = messages_of(p);
  std::vector<Message> first(full.begin(), full.begin() + 2);
  engine().reset();
  engine().generate(greedy_request(first, 4));
  GenerateResult r = engine().generate(greedy_request(full, 16));
  EXPECT_GT(r.cached_tokens, 84);  // system + the video's 84 tokens + its timestamps
  EXPECT_EQ(r.token_ids, i32(golden.at("generated_ids").as<int64_t>()));
}

}  // namespace
}  // namespace qvl
