// POST /v1/qvl/videos/frames against the real server: the sampled frames,
// their times and the prompt's "<t seconds>" texts exactly as the reference
// (tests/fixtures/video/manifest.json), the video tokens a chat request with
// the same part is charged, thumbnails that are those frames, per-request
// sampling, and hostile or malformed bodies refused with a 4xx naming the
// field while the server keeps answering.
#include <cmath>

#include "image/image.h"
#include "image/preprocess.h"
#include "jpeg_data_url.h"
#include "server_process.h"
#include "video/video.h"

namespace qvl::test {
namespace {

using json = nlohmann::json;
const std::string kVideoDir = kFixtures + "/video/";

std::string clip_path(const std::string& name) { return kVideoDir + "videos/" + name + ".mp4"; }
std::string mp4_uri(const std::string& name) { return "data:video/mp4;base64," + base64(read_file(clip_path(name))); }

const json& reference(const std::string& case_name) {
  static const json m = json::parse(read_file(kVideoDir + "manifest.json"));
  return m["videos"][case_name];
}

double mean_abs_difference(const qvl::Image& a, const qvl::Image& b) {
  EXPECT_EQ(a.rgb.size(), b.rgb.size());
  double sum = 0;
  for (size_t i = 0; i < std::min(a.rgb.size(), b.rgb.size()); ++i) sum += std::abs(int(a.rgb[i]) - int(b.rgb[i]));
  return a.rgb.empty() ? 0 : sum / static_cast<double>(a.rgb.size());
}

class VideoFrames : public SharedServerSuite {
 protected:
  static json frames(const json& body, int want_status = 200) {
    auto c = server_->client();
    auto r = post_json(c, "/v1/qvl/videos/frames", body);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, want_status) << r->body.substr(0, 400);
    json j = json::parse(r->body);
    if (r->status >= 400) j["error"]["status"] = r->status;
    return j;
  }

  // The video tokens of a chat request with `part` then a question.
  static json chat_usage(const json& part, const json& extra = json::object()) {
    json body = {{"messages", {{{"role", "user"}, {"content", {part, {{"type", "text"}, {"text", "?"}}}}}}},
                 {"max_tokens", 1}};
    body.update(extra);
    auto c = server_->client();
    auto r = post_json(c, "/v1/chat/completions", body);
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body.substr(0, 400);
    return json::parse(r->body)["usage"];
  }

  static void expect_reference(const json& got, const std::string& case_name) {
    SCOPED_TRACE(case_name);
    const json& ref = reference(case_name);
    ASSERT_EQ(got["object"], "qvl.video") << got.dump().substr(0, 400);
    EXPECT_EQ(got["total_frames"], ref["metadata"]["total_num_frames"]);
    EXPECT_DOUBLE_EQ(got["fps"].get<double>(), ref["metadata"]["fps"].get<double>());
    const json& idx = ref["sampling"]["frame_indices"];
    ASSERT_EQ(got["frames"].size(), idx.size());
    for (size_t k = 0; k < idx.size(); ++k) {
      EXPECT_EQ(got["frames"][k]["index"], idx[k]) << k;
      EXPECT_DOUBLE_EQ(got["frames"][k]["time"].get<double>(),
                       idx[k].get<double>() / ref["metadata"]["fps"].get<double>())
          << k;
      EXPECT_EQ(got["frames"][k]["group"], k / 2) << k;
    }
    ASSERT_EQ(got["groups"].size(), ref["timestamps"].size());
    for (size_t g = 0; g < got["groups"].size(); ++g) {
      EXPECT_NEAR(got["groups"][g]["time"].get<double>(), ref["timestamps"][g].get<double>(), 1e-12) << g;
      EXPECT_EQ(got["groups"][g]["text"], ref["timestamp_texts"][g]) << g;
      json members = json::array();
      for (size_t k = 2 * g; k < std::min(2 * g + 2, idx.size()); ++k) members.push_back(k);
      EXPECT_EQ(got["groups"][g]["frames"], members) << g;
    }
    EXPECT_EQ(got["video_tokens"], ref["num_video_tokens"]);
  }
};

TEST_F(VideoFrames, SamplingTimesAndTokensAreTheReferences) {
  for (const char* name : {"long_112x80_24fps", "portrait_120x216_10fps", "tiny_56x48_7.5fps", "stripes_96x64_24fps"}) {
    const json got = frames({{"video", mp4_uri(name)}});
    expect_reference(got, name);
    EXPECT_EQ(got["container"], "mov,mp4,m4a,3gp,3g2,mj2");
  }
  // A frame list at sample_fps 2: frame k at k / 2 s; 0.25 prints "<0.2 seconds>" (ties to even).
  json list = json::array();
  for (int k = 0; k < 6; ++k)
    list.push_back("data:image/png;base64," +
                   base64(read_file(kVideoDir + "videos/frames_150x100_x6/frame_00" + std::to_string(k) + ".png")));
  expect_reference(frames({{"video", list}, {"sample_fps", 2}}), "frames_150x100_x6");
  // Per-request sampling, as a chat part takes it.
  expect_reference(frames({{"video", mp4_uri("long_112x80_24fps")}, {"max_frames", 6}, {"total_pixels", 40000}}),
                   "long_112x80_24fps@max6_px40000");
}

TEST_F(VideoFrames, TokensAreWhatTheChatRouteCharges) {
  const std::string clip = mp4_uri("long_112x80_24fps");
  const json sampling = {{"fps", 1}, {"max_pixels", 64 * 96}};
  json body = {{"video", clip}};
  body.update(sampling);
  const json got = frames(body);
  json part = {{"type", "video"}, {"video", clip}};
  part.update(sampling);
  const json usage = chat_usage(part);
  EXPECT_EQ(got["video_tokens"], usage["prompt_tokens_details"]["image_tokens"]);
  EXPECT_EQ(got["frames"].size(), 8u);  // int(8 s * 1 fps)
  // And through vLLM's video_url part with mm_processor_kwargs.
  const json kwargs_usage =
      chat_usage({{"type", "video_url"}, {"video_url", {{"url", clip}}}}, {{"mm_processor_kwargs", sampling}});
  EXPECT_EQ(got["video_tokens"], kwargs_usage["prompt_tokens_details"]["image_tokens"]);
}

TEST_F(VideoFrames, ThumbnailsAreTheSampledFrames) {
  const json got = frames({{"video", mp4_uri("portrait_120x216_10fps")}, {"thumbnail_size", 64}});
  EXPECT_EQ(got["thumbnail_size"], 64);
  const qvl::Video clip = load_video(clip_path("portrait_120x216_10fps"));
  ASSERT_EQ(got["frames"].size(), clip.frames.size());
  for (size_t k = 0; k < clip.frames.size(); ++k) {
    SCOPED_TRACE(k);
    ASSERT_TRUE(got["frames"][k].contains("thumbnail"));
    const qvl::Image thumb = decode_jpeg_data_url(got["frames"][k]["thumbnail"]);
    EXPECT_EQ(thumb.height, 64);  // the longest side
    EXPECT_EQ(thumb.width, 36);   // 120 * 64 / 216 = 35.6
    // The frame itself: near it (JPEG at quality 80 with 4:2:0 chroma of a 36x64 picture of
    // coloured rings is some levels off), and nearer than to any other sampled frame.
    const double own = mean_abs_difference(thumb, resize_bicubic(clip.frames[k], thumb.width, thumb.height));
    EXPECT_LT(own, 16);
    for (size_t j = 0; j < clip.frames.size(); ++j) {
      if (j != k) {
        EXPECT_LT(own, mean_abs_difference(thumb, resize_bicubic(clip.frames[j], thumb.width, thumb.height))) << j;
      }
    }
  }
  // Never enlarged: a 56x48 clip at the default 160 stays 56x48.
  const json tiny = frames({{"video", mp4_uri("tiny_56x48_7.5fps")}});
  EXPECT_EQ(tiny["thumbnail_size"], 160);
  const qvl::Image t = decode_jpeg_data_url(tiny["frames"][0]["thumbnail"]);
  EXPECT_EQ(t.width, 56);
  EXPECT_EQ(t.height, 48);
}

TEST_F(VideoFrames, RefusalsNameTheirFieldAndTheServerStaysHealthy) {
  const std::string clip = mp4_uri("tiny_56x48_7.5fps");
  auto refused = [&](const json& body, int status, const std::string& param, const std::string& message_part = "") {
    const json j = frames(body, status);
    EXPECT_EQ(j["error"]["param"], param) << j.dump();
    if (!message_part.empty()) {
      EXPECT_NE(j["error"]["message"].get<std::string>().find(message_part), std::string::npos) << j.dump();
    }
  };
  EXPECT_TRUE(frames(json::array(), 400)["error"]["param"].is_null());
  refused(json::object(), 400, "video", "'video' is required");
  refused({{"video", clip}, {"frobnicate", 1}}, 400, "frobnicate");
  refused({{"video", clip}, {"type", "video"}}, 400, "type");
  refused({{"video", clip}, {"thumbnail_size", 8}}, 400, "thumbnail_size");
  refused({{"video", clip}, {"thumbnail_size", "big"}}, 400, "thumbnail_size");
  refused({{"video", clip}, {"fps", 0}}, 400, "fps");
  refused({{"video", clip}, {"fps", "2"}}, 400, "fps");
  refused({{"video", clip}, {"min_frames", 9}, {"max_frames", 8}}, 400, "min_frames");
  refused({{"video", clip}, {"sample_fps", 2}}, 400, "sample_fps");
  refused({{"video", 42}}, 400, "video");
  refused({{"video", json::array()}}, 400, "video");
  refused({{"video", "http://example.com/a.mp4"}}, 403, "video");
  refused({{"video", "/etc/passwd"}}, 403, "video");
  // Hostile clips: the chat route's decoding and its messages.
  const std::string bytes = read_file(clip_path("stripes_96x64_24fps"));
  refused({{"video", "data:video/mp4;base64," + base64(bytes.substr(0, bytes.size() * 6 / 10))}}, 400, "video",
          "video is truncated or damaged");
  refused({{"video", "data:video/mp4;base64," + base64(std::string(5000, '\x17'))}}, 400, "video",
          "not a supported container");
  refused({{"video", "data:video/mp4;base64,!!!!"}}, 400, "video", "invalid base64");
  // A header whose sizes lie: the first 'ftyp' box declaring 4 GB.
  std::string lying = bytes;
  lying[0] = '\xff', lying[1] = '\xff', lying[2] = '\xff', lying[3] = '\xf0';
  const json j = frames({{"video", "data:video/mp4;base64," + base64(lying)}}, 400);
  EXPECT_EQ(j["error"]["param"], "video") << j.dump();
  // Still healthy, and still answering.
  auto c = server_->client();
  auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(frames({{"video", clip}})["frames"].size(), 4u);
}

TEST(VideoFramesBudget, AClipOverTheImageMemoryBudgetIsA413) {
  ServerProcess s(media_budget_args(1 << 20));
  auto c = s.client();
  auto r = post_json(c, "/v1/qvl/videos/frames", json{{"video", mp4_uri("long_112x80_24fps")}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
  EXPECT_EQ(json::parse(r->body)["error"]["param"], "video") << r->body;
  // A smaller one fits.
  r = post_json(c, "/v1/qvl/videos/frames", json{{"video", mp4_uri("tiny_56x48_7.5fps")}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(s.stop(), 0);
}

}  // namespace
}  // namespace qvl::test
