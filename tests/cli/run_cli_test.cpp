// `qvl run` through the binary on the fixture model: the JSON output carries
// exactly the golden greedy tokens; text output streams the golden text;
// usage and input errors exit non-zero with one clear line.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "../engine/thinking_model.h"

namespace {

const std::string kFixtures = QVL_FIXTURES_DIR;

struct Outcome {
  int code;
  std::string out, err;
};

Outcome qvl(const std::string& args) {
  // A file of its own: CTest runs the tests of this file in parallel processes.
  char tmpl[] = "/tmp/qvl_run_cli_stderr_XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd >= 0) close(fd);
  const std::string err_path = tmpl;
  const std::string cmd = std::string(QVL_BINARY) + " " + args + " 2>" + err_path;
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  std::stringstream ss;
  {
    std::ifstream e(err_path);
    ss << e.rdbuf();
  }
  std::remove(err_path.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, ss.str()};
}

const nlohmann::json& prompt_case(std::string_view name) {
  static const nlohmann::json m = [] {
    std::ifstream f(kFixtures + "/golden/manifest.json");
    std::stringstream ss;
    ss << f.rdbuf();
    return nlohmann::json::parse(ss.str());
  }();
  for (const auto& p : m["prompts"])
    if (p["name"].get_ref<const std::string&>() == name) return p;
  throw std::runtime_error("no golden prompt " + std::string(name));
}

const std::string kModel = "--model " + kFixtures + "/tiny-qwen3vl --threads 2 ";
const std::string kGreedy = " --temperature 0 --ignore-eos --max-tokens 16 ";

TEST(RunCli, JsonGreedyTokensEqualTheGolden) {
  const auto& p = prompt_case("image_question");
  Outcome r = qvl("run " + kModel + "--image " + kFixtures + "/golden/images/gradient_320x240.png" +
              " --prompt 'What is in this image?' --output-format json" + kGreedy);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["token_ids"], p["generated_ids"]);
  EXPECT_EQ(j["text"], p["generated_text_skip_special"]);
  EXPECT_EQ(j["usage"]["prompt_tokens"], p["num_tokens"]);
  EXPECT_EQ(j["usage"]["completion_tokens"], 16);
  EXPECT_EQ(j["usage"]["total_tokens"], p["num_tokens"].get<int>() + 16);
  EXPECT_EQ(j["finish_reason"], "length");
  for (const char* k : {"load_ms", "image_preprocess_ms", "vision_ms", "prefill_ms", "prefill_tok_s", "decode_tok_s"})
    EXPECT_TRUE(j["timings"].contains(k)) << k;
}

TEST(RunCli, TwoImagesInOneTurn) {
  const auto& p = prompt_case("two_images");
  Outcome r = qvl("run " + kModel + "--image " + kFixtures + "/golden/images/text_400x128.png --image " + kFixtures +
              "/golden/images/odd_313x97.png --prompt 'Compare the two pictures.' --output-format json" + kGreedy);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["token_ids"], p["generated_ids"]);
}

TEST(RunCli, TextStreamsTheAnswer) {
  const auto& p = prompt_case("text_only");
  Outcome r = qvl("run " + kModel + "--prompt 'Write a haiku about autumn.' --verbose" + kGreedy);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, p["generated_text_skip_special"].get<std::string>() + "\n");
  EXPECT_NE(r.err.find("prefill"), std::string::npos);  // timings on stderr
}

TEST(RunCli, MissingPromptIsAUsageError) {
  Outcome r = qvl("run " + kModel);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--prompt"), std::string::npos) << r.err;
}

TEST(RunCli, BadWeightsFormatIsAUsageError) {
  Outcome r = qvl("run " + kModel + "--prompt hi --weights q3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--weights"), std::string::npos) << r.err;
}

TEST(RunCli, BadKvTypeIsAUsageError) {
  Outcome r = qvl("run " + kModel + "--prompt hi --kv-type q8");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--kv-type"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("f16"), std::string::npos) << r.err;  // names the choices
}

TEST(RunCli, UnreadableImageNamesTheFile) {
  Outcome r = qvl("run " + kModel + "--prompt hi --image /nonexistent/x.png");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/x.png"), std::string::npos) << r.err;
}

TEST(RunCli, PromptOverTheContextNamesTheNumbers) {
  Outcome r = qvl("run " + kModel + "--ctx-size 32 --image " + kFixtures +
              "/golden/images/gradient_320x240.png --prompt 'What is in this image?'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("96"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("32"), std::string::npos) << r.err;
}

// The first index at which the last L tokens have a period p with
// L >= max(window, repeats * p): the guard's rule, by brute force.
long first_loop(const std::vector<int>& t, long window, long repeats) {
  for (long i = 0; i < static_cast<long>(t.size()); ++i)
    for (long p = 1; p <= i; ++p) {
      long len = p;  // the first period is free
      while (len <= i && t[i - len] == t[i - len + p]) ++len;
      if (len >= std::max(window, repeats * p)) return i;
    }
  return -1;
}

TEST(RunCli, RepetitionGuardStopsALoopWhereTheRuleSays) {
  const std::string args = "run " + kModel + "--prompt Describe --temperature 0 --ignore-eos --output-format json ";
  Outcome free = qvl(args + "--max-tokens 120 --repetition-guard 0");
  ASSERT_EQ(free.code, 0) << free.err;
  const auto all = nlohmann::json::parse(free.out)["token_ids"].get<std::vector<int>>();
  // A tight guard (4 tokens, 2 repeats) so the random fixture model's short
  // runs count as loops; the test needs one to exist.
  const long at = first_loop(all, 4, 2);
  ASSERT_GE(at, 0) << "the unguarded answer has no loop to catch";
  Outcome guarded = qvl(args + "--max-tokens 120 --repetition-guard 4 --repetition-guard-repeats 2");
  ASSERT_EQ(guarded.code, 0) << guarded.err;
  const nlohmann::json j = nlohmann::json::parse(guarded.out);
  EXPECT_EQ(j["finish_reason"], "repetition");
  EXPECT_EQ(j["token_ids"].get<std::vector<int>>(), std::vector<int>(all.begin(), all.begin() + at + 1));
  // The default guard (400 tokens) leaves a 120-token answer alone.
  Outcome dflt = qvl(args + "--max-tokens 120");
  ASSERT_EQ(dflt.code, 0) << dflt.err;
  EXPECT_EQ(nlohmann::json::parse(dflt.out)["finish_reason"], "length");
}

TEST(RunCli, RepetitionGuardFlagsAreChecked) {
  Outcome r = qvl("run " + kModel + "--prompt hi --repetition-guard-repeats 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("repetition-guard-repeats"), std::string::npos) << r.err;
}

TEST(ChatCli, TwoTurnsFromStdin) {
  const auto& p = prompt_case("text_only");
  Outcome r = qvl("chat " + kModel + kGreedy + "< /dev/null");
  EXPECT_EQ(r.code, 0) << r.err;
  // Two turns piped in: the first answer is the golden continuation.
  const std::string in = ::testing::TempDir() + "qvl_chat_in.txt";
  std::ofstream(in) << "Write a haiku about autumn.\nAnd another.\n/exit\n";
  r = qvl("chat " + kModel + kGreedy + "< " + in);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(p["generated_text_skip_special"].get<std::string>() + "\n", 0), 0u) << r.out;
  EXPECT_GT(std::count(r.out.begin(), r.out.end(), '\n'), 1);
}

}  // namespace

namespace {

std::string write_temp(const std::string& text) {
  char tmpl[] = "/tmp/qvl_run_cli_schema_XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd >= 0) close(fd);
  std::ofstream(tmpl) << text;
  return tmpl;
}

TEST(RunCli, JsonSchemaConstrainsTheAnswer) {
  const std::string schema = write_temp(
      R"({"type":"object","properties":{"a":{"type":"string","maxLength":8},"b":{"type":"boolean"}},)"
      R"("required":["a","b"],"additionalProperties":false})");
  const Outcome r = qvl("run --model " + kFixtures + "/tiny-qwen3vl --prompt hi --temperature 0 --max-tokens 100 "
                        "--output-format json --json-schema " + schema);
  std::remove(schema.c_str());
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["finish_reason"], "stop") << r.out;
  const nlohmann::json answer = nlohmann::json::parse(j["text"].get<std::string>());
  ASSERT_TRUE(answer.is_object());
  EXPECT_EQ(answer.size(), 2u);
  EXPECT_TRUE(answer["a"].is_string());
  EXPECT_TRUE(answer["b"].is_boolean());
}

// A Thinking model's answer: reasoning and text are its tokens' text split at "</think>".
TEST(RunCli, ThinkingModelJsonHasTheReasoningApart) {
  const std::string dir = qvl::test::make_thinking_model(kFixtures, ::testing::TempDir());
  const Outcome r = qvl("run --model " + dir + " --prompt hi --temperature 0 --max-tokens 6 --output-format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("reasoning")) << r.out;
  EXPECT_TRUE(j["reasoning"].is_string());
  EXPECT_EQ(j["reasoning"].get<std::string>().find("</think>"), std::string::npos);
  const Outcome instruct = qvl("run --model " + kFixtures + "/tiny-qwen3vl --prompt hi --max-tokens 2 --output-format json");
  ASSERT_EQ(instruct.code, 0) << instruct.err;
  EXPECT_FALSE(nlohmann::json::parse(instruct.out).contains("reasoning"));
}

TEST(RunCli, UnenforceableSchemaIsRefusedNamingTheKeyword) {
  const std::string schema = write_temp(R"({"type":"string","pattern":"^x+$"})");
  const Outcome r = qvl("run --model " + kFixtures + "/tiny-qwen3vl --prompt hi --json-schema " + schema);
  std::remove(schema.c_str());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("'pattern'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

TEST(RunCli, JsonFlagAnswersAnObject) {
  const Outcome r = qvl("run --model " + kFixtures + "/tiny-qwen3vl --prompt hi --temperature 0 --max-tokens 60 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out).is_object()) << r.out;
}

}  // namespace

namespace {

const nlohmann::json& video_prompt_case(std::string_view name) {
  static const nlohmann::json m = [] {
    std::ifstream f(kFixtures + "/video/manifest.json");
    std::stringstream ss;
    ss << f.rdbuf();
    return nlohmann::json::parse(ss.str());
  }();
  for (const auto& p : m["prompts"])
    if (p["name"].get_ref<const std::string&>() == name) return p;
  throw std::runtime_error("no golden video prompt " + std::string(name));
}

const std::string kClips = kFixtures + "/video/videos/";

TEST(RunCli, VideoGreedyTokensEqualTheGolden) {
  const auto& p = video_prompt_case("video_question");
  Outcome r = qvl("run " + kModel + "--video " + kClips + "long_112x80_24fps.mp4" +
                  " --prompt 'What happens in this video?' --output-format json" + kGreedy);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["token_ids"], p["generated_ids"]);
  EXPECT_EQ(j["usage"]["prompt_tokens"], p["num_tokens"]);
}

TEST(RunCli, VideoSamplingFlags) {
  // --video-max-frames 6 on the 8-s clip: 6 frames -> 3 groups of 4x8
  // patches (8 tokens each); --video-fps 1: 8 frames -> 4 groups.
  Outcome r = qvl("run " + kModel + "--video " + kClips + "long_112x80_24fps.mp4 --video-max-frames 6" +
                  " --prompt 'Hi' --output-format json --max-tokens 1");
  ASSERT_EQ(r.code, 0) << r.err;
  const int base = nlohmann::json::parse(r.out)["usage"]["prompt_tokens"];
  r = qvl("run " + kModel + "--video " + kClips + "long_112x80_24fps.mp4 --video-fps 1" +
          " --prompt 'Hi' --output-format json --max-tokens 1");
  ASSERT_EQ(r.code, 0) << r.err;
  // One more group: 8 video tokens + its timestamp text and delimiters.
  EXPECT_GT(nlohmann::json::parse(r.out)["usage"]["prompt_tokens"].get<int>(), base + 8);
  r = qvl("run " + kModel + "--video " + kClips + "long_112x80_24fps.mp4 --video-fps 0" + " --prompt 'Hi'");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--video-fps"), std::string::npos) << r.err;
}

// --max-video-tokens 139 (its smallest) on the same clip (8 tokens a group
// at its size): 139 / (8 + 11) = 7 groups, so the 14 frames
// --video-max-frames 14 gives; 0 lifts the budget: all 16.
TEST(RunCli, MaxVideoTokensSamplesWithinTheBudget) {
  const std::string clip = kClips + "long_112x80_24fps.mp4";
  auto prompt_tokens = [&](const std::string& flags) {
    Outcome r = qvl("run " + kModel + "--video " + clip + " " + flags + " --prompt 'Hi' --output-format json --max-tokens 1");
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? nlohmann::json::parse(r.out)["usage"]["prompt_tokens"].get<int>() : -1;
  };
  const int fourteen_frames = prompt_tokens("--video-max-frames 14");
  EXPECT_EQ(prompt_tokens("--max-video-tokens 139"), fourteen_frames);
  EXPECT_GT(prompt_tokens("--max-video-tokens 0"), fourteen_frames + 8);  // one more group
  Outcome r = qvl("run " + kModel + "--video " + clip + " --max-video-tokens 100 --prompt 'Hi'");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--max-video-tokens: 100 must be 0 (off) or at least 139"), std::string::npos) << r.err;
}

TEST(RunCli, ImagesAndVideosEnterInTheOrderGiven) {
  const std::string image = kFixtures + "/golden/images/tiny_40x36.png";
  const std::string clip = kClips + "tiny_56x48_7.5fps.mp4";
  Outcome a = qvl("run " + kModel + "--image " + image + " --video " + clip + " --prompt 'Hi' --output-format json" + kGreedy);
  Outcome b = qvl("run " + kModel + "--video " + clip + " --image " + image + " --prompt 'Hi' --output-format json" + kGreedy);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["usage"]["prompt_tokens"], jb["usage"]["prompt_tokens"]);  // same media
  EXPECT_NE(ja["token_ids"], jb["token_ids"]);                            // in another order
}

TEST(RunCli, UnreadableVideoNamesTheFile) {
  const std::string bad = ::testing::TempDir() + "qvl_not_a_video.mp4";
  std::ofstream(bad) << "this is not a video";
  Outcome r = qvl("run " + kModel + "--video " + bad + " --prompt 'Hi'");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("video " + bad + ": cannot read the video"), std::string::npos) << r.err;
}

TEST(ChatCli, VideoCommandAttachesAClip) {
  const auto& p = video_prompt_case("video_question");
  const std::string in = ::testing::TempDir() + "qvl_chat_video_in.txt";
  std::ofstream(in) << "/video " << kClips << "long_112x80_24fps.mp4\nWhat happens in this video?\n/exit\n";
  Outcome r = qvl("chat " + kModel + kGreedy + "< " + in);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(p["generated_text_skip_special"].get<std::string>() + "\n", 0), 0u) << r.out;
}

}  // namespace
