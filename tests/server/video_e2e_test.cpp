// Video parts through the real server: vLLM's video_url and Qwen's video
// part (a clip or a list of frames), per-request sampling in the part or in
// mm_processor_kwargs, the reference's greedy answers (tests/fixtures/video),
// refusals naming the field, hostile clips, and the image memory budget.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "../image/golden_tensors.h"
#include "refusal.h"
#include "server_process.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;
const std::string kVideoDir = kFixtures + "/video/";

std::string mp4_uri(const std::string& name) {
  return "data:video/mp4;base64," + base64(read_file(kVideoDir + "videos/" + name + ".mp4"));
}

std::string frame_uri(int k) {
  return "data:image/png;base64," +
         base64(read_file(kVideoDir + "videos/frames_150x100_x6/frame_00" + std::to_string(k) + ".png"));
}

const json& golden_prompt(std::string_view name) {
  static const json m = json::parse(read_file(kVideoDir + "manifest.json"));
  for (const json& p : m["prompts"])
    if (p["name"].get_ref<const std::string&>() == name) return p;
  throw std::runtime_error("no golden video prompt " + std::string(name));
}

json body_with(const json& video_part, const std::string& text, int max_tokens = 16) {
  return {{"messages", {{{"role", "user"}, {"content", {video_part, {{"type", "text"}, {"text", text}}}}}}},
          {"temperature", 0},
          {"max_completion_tokens", max_tokens}};
}

json ok_response(httplib::Client& c, const json& body) {
  auto r = post_json(c, "/v1/chat/completions", body);
  EXPECT_TRUE(r);
  if (!r) return {};
  EXPECT_EQ(r->status, 200) << r->body;
  return json::parse(r->body);
}

class Video : public SharedServerSuite {};

TEST_F(Video, QwenVideoPartGivesTheReferenceAnswer) {
  const json& g = golden_prompt("video_question");
  auto c = server_->client();
  const json j = ok_response(
      c, body_with({{"type", "video"}, {"video", mp4_uri("long_112x80_24fps")}}, "What happens in this video?"));
  EXPECT_EQ(j["choices"][0]["message"]["content"], g["generated_text_skip_special"]);
  EXPECT_EQ(j["usage"]["prompt_tokens"], g["num_tokens"]);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["image_tokens"], g["num_video_tokens"]);
}

TEST_F(Video, FrameListAtSampleFpsGivesTheReferenceAnswer) {
  const json& g = golden_prompt("frame_list_video");
  json frames = json::array();
  for (int k = 0; k < 6; ++k) frames.push_back(frame_uri(k));
  auto c = server_->client();
  const json j =
      ok_response(c, body_with({{"type", "video"}, {"video", frames}, {"sample_fps", 2}}, "What is written here?"));
  EXPECT_EQ(j["choices"][0]["message"]["content"], g["generated_text_skip_special"]);
  EXPECT_EQ(j["usage"]["prompt_tokens"], g["num_tokens"]);
}

TEST_F(Video, VideoUrlPartWithSamplingInMmProcessorKwargs) {
  // The reference case long_112x80_24fps@max6_px40000: 6 frames under a
  // 40000-pixel budget -> grid (3, 4, 6), 18 tokens.
  auto c = server_->client();
  json body = body_with({{"type", "video_url"}, {"video_url", {{"url", mp4_uri("long_112x80_24fps")}}}}, "Hi", 2);
  body["mm_processor_kwargs"] = {{"max_frames", 6}, {"total_pixels", 40000}};
  json j = ok_response(c, body);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["image_tokens"], 18);
  // The same keys in the part (qwen-vl-utils' place) win over the kwargs.
  body = body_with({{"type", "video"}, {"video", mp4_uri("long_112x80_24fps")}, {"max_frames", 6}, {"total_pixels", 40000}},
                   "Hi", 2);
  body["mm_processor_kwargs"] = {{"max_frames", 4}};
  j = ok_response(c, body);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["image_tokens"], 18);
  // fps 1 of an 8-s clip: int(8 * 1) = 8 frames -> 4 groups of 4x8 patches.
  body = body_with({{"type", "video"}, {"video", mp4_uri("long_112x80_24fps")}, {"fps", 1}}, "Hi", 2);
  j = ok_response(c, body);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["image_tokens"], 4 * 8);
}

// Status, code, param and message of one refused body.
void expect_refused(httplib::Client& c, const json& body, int status, const std::string& param,
                    const std::string& message_part) {
  auto r = post_json(c, "/v1/chat/completions", body);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, status) << r->body;
  const json j = json::parse(r->body);
  EXPECT_EQ(j["error"]["param"], param) << r->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(message_part), std::string::npos) << r->body;
}

TEST_F(Video, HostileClipsAreA400NamingThePart) {
  auto c = server_->client();
  const std::string clip = read_file(kVideoDir + "videos/stripes_96x64_24fps.mp4");
  const std::string truncated = "data:video/mp4;base64," + base64(clip.substr(0, clip.size() * 6 / 10));
  expect_refused(c, body_with({{"type", "video"}, {"video", truncated}}, "?"), 400, "messages[0].content[0]",
                 "the video cannot be used: video is truncated or damaged");
  const std::string noise = "data:video/mp4;base64," + base64(std::string(5000, '\x17'));
  expect_refused(c, body_with({{"type", "video_url"}, {"video_url", {{"url", noise}}}}, "?"), 400,
                 "messages[0].content[0]", "not a supported container");
  // Still alive and answering.
  ok_response(c, body_with({{"type", "video"}, {"video", mp4_uri("tiny_56x48_7.5fps")}}, "?", 2));
}

TEST(VideoRefusals, FieldsQvlDoesNotHonourAreNamed) {
  const std::string clip = "data:video/mp4;base64,AAAA";
  auto part_body = [&](const json& part) { return body_with(part, "?").dump(); };
  ApiError e = chat_refusal(part_body({{"type", "video"}, {"video", clip}, {"nframes", 8}}));
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "messages[0].content[0].nframes");
  json body = body_with({{"type", "video"}, {"video", clip}}, "?");
  body["mm_processor_kwargs"] = {{"fps", 1}, {"do_sample_frames", false}};
  e = chat_refusal(body.dump());
  EXPECT_EQ(e.status(), 400);
  EXPECT_EQ(e.param(), "mm_processor_kwargs.do_sample_frames");
  e = chat_refusal(part_body({{"type", "video"}, {"video", clip}, {"sample_fps", 2}}));
  EXPECT_EQ(e.param(), "messages[0].content[0].sample_fps");
  e = chat_refusal(part_body({{"type", "video"}, {"video", {clip, clip}}, {"fps", 2}}));
  EXPECT_EQ(e.param(), "messages[0].content[0].fps");
  e = chat_refusal(part_body({{"type", "video"}, {"video", clip}, {"fps", 0}}));
  EXPECT_EQ(e.param(), "messages[0].content[0].fps");
  e = chat_refusal(part_body({{"type", "video"}, {"video", clip}, {"min_frames", 9}, {"max_frames", 8}}));
  EXPECT_EQ(e.param(), "messages[0].content[0].min_frames");
  e = chat_refusal(part_body({{"type", "video_url"}, {"video_url", {{"url", clip}, {"detail", "high"}}}}));
  EXPECT_EQ(e.param(), "messages[0].content[0].video_url.detail");
  e = chat_refusal(part_body({{"type", "video"}}));
  EXPECT_EQ(e.param(), "messages[0].content[0].video");
  // Remote and local URLs follow the image rules: off by default.
  e = chat_refusal(part_body({{"type", "video"}, {"video", "http://example.com/a.mp4"}}));
  EXPECT_EQ(e.param(), "messages[0].content[0].video");
}

TEST(VideoBudget, AClipOverTheImageMemoryBudgetIsA413) {
  // long_112x80: 16 kept frames + the decoder's 24 = 1 290 240 bytes, over
  // a media budget of 1 MiB.
  ServerProcess s(media_budget_args(1 << 20));
  auto c = s.client();
  auto r = post_json(c, "/v1/chat/completions", body_with({{"type", "video"}, {"video", mp4_uri("long_112x80_24fps")}}, "?"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_NE(r->body.find("image memory budget"), std::string::npos) << r->body;
  EXPECT_EQ(s.stop(), 0);
}

// --max-video-tokens 139 (its smallest) on long_112x80 (8 tokens a group at
// its own size, 139 / (8 + 11) = 7 groups): 14 of its 16 frames are sampled
// whatever the request asks, 56 vision tokens; a request asking for more
// frames or pixels is clamped, not refused. A frame list is used whole: one
// longer than the budget allows is a 400 naming it.
TEST(VideoBudget, TheServersVideoTokenCapClampsRequestsAndRefusesLongFrameLists) {
  ServerProcess s({"--max-video-tokens", "139"});
  auto c = s.client();
  const json part = {{"type", "video"}, {"video", mp4_uri("long_112x80_24fps")}};
  json j = ok_response(c, body_with(part, "?", 1));
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["image_tokens"], 7 * 8);
  json greedy = part;
  greedy["max_frames"] = 16;
  greedy["total_pixels"] = int64_t{1} << 30;
  j = ok_response(c, body_with(greedy, "?", 1));
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["image_tokens"], 7 * 8);
  // 150x100 frames: 5 x 3 tokens a group, 139 / (15 + 11) = 5 groups, 10 frames.
  json frames = json::array();
  for (int k = 0; k < 12; ++k) frames.push_back(frame_uri(k % 6));
  auto r = post_json(c, "/v1/chat/completions", body_with({{"type", "video"}, {"video", frames}, {"sample_fps", 2}}, "?"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  const json e = json::parse(r->body);
  EXPECT_EQ(e["error"]["param"], "messages[0].content[0].video") << r->body;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("at most 10 such frames"), std::string::npos) << r->body;
  EXPECT_NE(e["error"]["message"].get<std::string>().find("--max-video-tokens"), std::string::npos) << r->body;
  // 10 frames fit.
  frames.erase(frames.begin() + 10, frames.end());
  ok_response(c, body_with({{"type", "video"}, {"video", frames}, {"sample_fps", 2}}, "?", 1));
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace qvl::test
