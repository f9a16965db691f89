// The native Qwen3-VL-Instruct template against the golden prompts (strings
// from the manifest, token ids from golden/prompt_<case>.safetensors) and the
// branches of the Jinja template a client can reach.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <cstring>

#include "fixture.h"
#include "tokenizer/py_json.h"
#include "util/error.h"

namespace qvl {
namespace {

using nlohmann::json;
using test::fixture_path;
using test::read_file;

const ChatTemplate& qwen_template() {
  static const ChatTemplate t = ChatTemplate::from_source(
      json::parse(read_file(fixture_path("tiny-qwen3vl/chat_template.json")))["chat_template"].get<std::string>());
  return t;
}

// The int64 tensor `name` of a safetensors file: 8-byte little-endian header
// length, JSON header, then the data (just enough to read the golden ids).
std::vector<int64_t> read_i64(const std::string& path, const std::string& name) {
  std::string file = read_file(path);
  uint64_t n = 0;
  if (file.size() < 8) return {};
  std::memcpy(&n, file.data(), 8);
  json h = json::parse(file.substr(8, n));
  const json& t = h.at(name);
  EXPECT_EQ(t.at("dtype"), "I64");
  size_t begin = 8 + n + t.at("data_offsets")[0].get<size_t>(), end = 8 + n + t.at("data_offsets")[1].get<size_t>();
  std::vector<int64_t> out((end - begin) / 8);
  std::memcpy(out.data(), file.data() + begin, end - begin);
  return out;
}

// A manifest message (content as a string or as parts) with each image's
// token count taken from its grid: t * h * w / merge_size^2.
std::vector<ChatMessage> messages_of(const json& prompt, bool expand) {
  int merge = json::parse(read_file(fixture_path("tiny-qwen3vl/preprocessor_config.json")))["merge_size"];
  std::vector<ChatMessage> out;
  size_t image = 0;
  for (const json& m : prompt["messages"]) {
    ChatMessage msg{m["role"], {}};
    if (m["content"].is_string()) {
      msg.parts.push_back({ChatPart::Kind::Text, m["content"], 0});
    } else {
      for (const json& p : m["content"]) {
        if (p["type"] == "image") {
          const json& g = prompt["image_grid_thw"][image++];
          int tokens = g[0].get<int>() * g[1].get<int>() * g[2].get<int>() / (merge * merge);
          msg.parts.push_back({ChatPart::Kind::Image, "", expand ? tokens : 0});
        } else {
          msg.parts.push_back({ChatPart::Kind::Text, p["text"], 0});
        }
      }
    }
    out.push_back(std::move(msg));
  }
  return out;
}

const json& manifest() {
  static const json j = json::parse(read_file(fixture_path("golden/manifest.json")));
  return j;
}

TEST(ChatTemplate, GoldenPromptStrings) {
  ASSERT_EQ(manifest()["prompts"].size(), 5u);
  for (const json& p : manifest()["prompts"]) {
    EXPECT_EQ(qwen_template().render(messages_of(p, false)), p["prompt"].get<std::string>()) << p["name"];
    EXPECT_EQ(qwen_template().render(messages_of(p, true)).size(), p["prompt_expanded_chars"].get<size_t>())
        << p["name"];
  }
}

TEST(ChatTemplate, GoldenPromptIds) {
  const Tokenizer& tok = test::fixture_tokenizer();
  std::map<std::string, std::string> tokenizer_prompts;
  for (const json& p : test::tokenizer_cases()["prompts"]) tokenizer_prompts[p["name"]] = p["text"];
  for (const json& p : manifest()["prompts"]) {
    std::string text = qwen_template().render(messages_of(p, true));
    EXPECT_EQ(text, tokenizer_prompts.at(p["name"])) << p["name"];
    auto ids = tok.encode(text);
    EXPECT_EQ(ids.size(), p["num_tokens"].get<size_t>()) << p["name"];
    auto golden = read_i64(fixture_path("golden/" + p["file"].get<std::string>()), "input_ids");
    EXPECT_EQ(std::vector<int64_t>(ids.begin(), ids.end()), golden) << p["name"];
    int pads = 0;
    for (int32_t id : ids) pads += id == tok.token_id("<|image_pad|>");
    EXPECT_EQ(pads, p["num_image_tokens"].get<int>()) << p["name"];
  }
}

ChatPart text(std::string s) { return {ChatPart::Kind::Text, std::move(s), 0}; }
ChatPart image(int n) { return {ChatPart::Kind::Image, "", n}; }

TEST(ChatTemplate, SystemAsPartsAndGenerationPrompt) {
  std::vector<ChatMessage> m = {{"system", {text("Be "), text("brief.")}}, {"user", {text("hi")}}};
  EXPECT_EQ(qwen_template().render(m),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(qwen_template().render(m, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n");
}

TEST(ChatTemplate, SeveralImagesAroundText) {
  std::vector<ChatMessage> m = {{"user", {text("A:"), image(2), text(" B:"), image(1), text("?")}}};
  EXPECT_EQ(qwen_template().render(m),
            "<|im_start|>user\nA:<|vision_start|><|image_pad|><|image_pad|><|vision_end|> B:"
            "<|vision_start|><|image_pad|><|vision_end|>?<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, VideoGroupsWithTimestamps) {
  ChatPart video{ChatPart::Kind::Video, "", 2, {0.25, 0.75, 1.65}};
  std::vector<ChatMessage> m = {{"user", {video, text("?")}}};
  // Python's '{:.1f}' of the exact doubles: 0.25 -> 0.2 and 0.75 -> 0.8
  // (ties to even), 1.65 (just below) -> 1.6.
  const std::string group = "<|vision_start|><|video_pad|><|video_pad|><|vision_end|>";
  EXPECT_EQ(qwen_template().render(m), "<|im_start|>user\n<0.2 seconds>" + group + "<0.8 seconds>" + group +
                                           "<1.6 seconds>" + group + "?<|im_end|>\n<|im_start|>assistant\n");
  video.image_tokens = 0;  // as the template renders it, before the processor expands it
  m = {{"user", {video}}};
  EXPECT_EQ(qwen_template().render(m),
            "<|im_start|>user\n<|vision_start|><|video_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n");
  m = {{"system", {video}}, {"user", {text("hi")}}};
  try {
    qwen_template().render(m);
    FAIL() << "a video in a system message was rendered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has a video; Qwen3-VL accepts images and videos only in user and tool"),
              std::string::npos)
        << e.what();
  }
}

TEST(ChatTemplate, MultiTurnAndLateSystemMessage) {
  // The template renders a system message only in first position.
  std::vector<ChatMessage> m = {{"user", {text("1")}}, {"assistant", {text("2")}}, {"system", {text("x")}},
                                {"user", {image(0)}}};
  EXPECT_EQ(qwen_template().render(m),
            "<|im_start|>user\n1<|im_end|>\n<|im_start|>assistant\n2<|im_end|>\n"
            "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|><|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, ToolResultsShareOneUserTurn) {
  std::vector<ChatMessage> m = {{"user", {text("q")}}, {"tool", {text("r1")}}, {"tool", {text("r2")}}};
  EXPECT_EQ(qwen_template().render(m, false),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>user\n<tool_response>\nr1\n</tool_response>"
            "\n<tool_response>\nr2\n</tool_response><|im_end|>\n");
}

// A fixture case's messages as the server passes them: each tool as JSON
// text in the fixture's key order; an object `arguments` serialised
// Python-style, a string one as is; reasoning_content when it is a string.
std::vector<ChatMessage> case_messages(const nlohmann::ordered_json& c) {
  using nlohmann::ordered_json;
  std::vector<ChatMessage> messages;
  for (const ordered_json& m : c["messages"]) {
    ChatMessage msg{m["role"], {}, {}};
    if (m["content"].is_string()) {
      msg.parts.push_back({ChatPart::Kind::Text, m["content"], 0});
    } else {
      for (const ordered_json& p : m["content"])
        msg.parts.push_back(p["type"] == "image" ? ChatPart{ChatPart::Kind::Image, "", 0}
                                                 : ChatPart{ChatPart::Kind::Text, p["text"], 0});
    }
    if (m.contains("tool_calls")) {
      for (const ordered_json& tc : m["tool_calls"]) {
        const ordered_json& f = tc["function"];
        const ordered_json& a = f["arguments"];
        msg.tool_calls.push_back({f["name"], a.is_string() ? a.get<std::string>() : python_json_dumps(a)});
      }
    }
    if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) msg.reasoning = m["reasoning_content"];
    messages.push_back(std::move(msg));
  }
  return messages;
}

std::vector<std::string> case_tools(const nlohmann::ordered_json& c) {
  std::vector<std::string> tools;
  for (const nlohmann::ordered_json& t : c["tools"]) tools.push_back(t.dump());
  return tools;
}

const ChatTemplate& thinking_template() {
  static const ChatTemplate t = ChatTemplate::from_source(
      json::parse(read_file(fixture_path("templates/qwen3vl_thinking_chat_template.json")))["chat_template"]
          .get<std::string>());
  return t;
}

// tests/fixtures/templates/thinking_cases.json: the Thinking template
// rendered by jinja2 as transformers does (tools/render_thinking_cases.py).
TEST(ChatTemplate, GoldenThinkingPrompts) {
  using nlohmann::ordered_json;
  ASSERT_TRUE(thinking_template().thinking());
  EXPECT_FALSE(qwen_template().thinking());
  const ordered_json golden = ordered_json::parse(read_file(fixture_path("templates/thinking_cases.json")));
  ASSERT_EQ(golden["cases"].size(), 8u);
  for (const ordered_json& c : golden["cases"])
    EXPECT_EQ(thinking_template().render(case_messages(c), case_tools(c), c["add_generation_prompt"].get<bool>()),
              c["prompt"].get<std::string>())
        << c["name"];
}

TEST(ChatTemplate, ThinkingSplitsReasoningOutOfHistoryText) {
  // Several think tags: the reasoning is between the last <think> before the
  // first </think> and it; the text is what follows the last </think>.
  std::vector<ChatMessage> m = {{"user", {text("q")}},
                                {"assistant", {text("<think>a<think>\nb\n</think>c</think>\n\nd")}}};
  EXPECT_EQ(thinking_template().render(m, false),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nb\n</think>\n\nd<|im_end|>\n");
  // Before the last query the whole turn loses its reasoning.
  m.push_back({"user", {text("r")}});
  EXPECT_EQ(thinking_template().render(m),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nd<|im_end|>\n<|im_start|>user\nr<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n");
  EXPECT_THROW(thinking_template().render({{"user", {text("x")}}, {"system", {image(1)}}}), Error);
}

// tests/fixtures/templates/tool_cases.json: prompts jinja2 rendered as
// transformers does.
TEST(ChatTemplate, GoldenToolPrompts) {
  using nlohmann::ordered_json;
  const ordered_json golden = ordered_json::parse(read_file(fixture_path("templates/tool_cases.json")));
  ASSERT_EQ(golden["cases"].size(), 4u);
  for (const ordered_json& c : golden["cases"])
    EXPECT_EQ(qwen_template().render(case_messages(c), case_tools(c)), c["prompt"].get<std::string>()) << c["name"];
}

ChatToolCall call(std::string name, std::string args) { return {std::move(name), std::move(args)}; }

const std::string kTool = R"({"type":"function","function":{"name":"f","parameters":{"type":"object"}}})";
const std::string kToolsBlock =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "
    "signatures within <tools></tools> XML tags:\n<tools>\n"
    R"({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}})"
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

TEST(ChatTemplate, ToolsAfterSystemParts) {
  std::vector<ChatMessage> m = {{"system", {text("Be "), text("brief.")}}, {"user", {text("hi")}}};
  EXPECT_EQ(qwen_template().render(m, {kTool}),
            "<|im_start|>system\nBe brief.\n\n" + kToolsBlock +
                "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  // An empty system message still brings its "\n\n".
  m[0].parts.clear();
  EXPECT_EQ(qwen_template().render(m, {kTool}, false),
            "<|im_start|>system\n\n\n" + kToolsBlock + "<|im_start|>user\nhi<|im_end|>\n");
}

TEST(ChatTemplate, AssistantToolCallsAndToolImages) {
  // Text, then calls each on its own line; a tool result holds an image.
  std::vector<ChatMessage> m = {
      {"user", {text("q")}},
      {"assistant", {text("Sure.")}, {call("f", R"({"a": 1})"), call("g", "{}")}},
      {"tool", {text("see "), image(2)}},
      {"tool", {text("ok")}},
      {"assistant", {}, {call("f", R"({"b":[1,{"c":"}"}]})")}},
  };
  EXPECT_EQ(qwen_template().render(m, {kTool}, false),
            "<|im_start|>system\n" + kToolsBlock +
                "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nSure.\n<tool_call>\n"
                R"({"name": "f", "arguments": {"a": 1}})"
                "\n</tool_call>\n<tool_call>\n"
                R"({"name": "g", "arguments": {}})"
                "\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nsee "
                "<|vision_start|><|image_pad|><|image_pad|><|vision_end|>\n</tool_response>\n<tool_response>\nok"
                "\n</tool_response><|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
                R"({"name": "f", "arguments": {"b":[1,{"c":"}"}]}})"
                "\n</tool_call><|im_end|>\n");
  // Without tools the calls of the history still render.
  std::vector<ChatMessage> h = {{"user", {text("q")}}, {"assistant", {text("")}, {call("f", "{}")}}};
  EXPECT_EQ(qwen_template().render(h, false),
            "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
            R"({"name": "f", "arguments": {}})"
            "\n</tool_call><|im_end|>\n");
}

TEST(ChatTemplate, RejectsWhatItCannotRender) {
  EXPECT_THROW(qwen_template().render({{"user", {text("x")}, {call("f", "{}")}}}), Error);
  EXPECT_THROW(qwen_template().render({{"user", {text("x")}}}, std::vector<std::string>{"{not json"}), Error);
  EXPECT_THROW(qwen_template().render({}), Error);
  EXPECT_THROW(qwen_template().render({{"robot", {text("x")}}}), Error);
  EXPECT_THROW(qwen_template().render({{"assistant", {image(4)}}}), Error);
  EXPECT_THROW(qwen_template().render({{"system", {image(4)}}, {"user", {text("x")}}}), Error);
  EXPECT_THROW(qwen_template().render({{"user", {image(-1)}}}), Error);
}

TEST(ChatTemplate, RecognisesOnlyKnownTemplates) {
  std::string src = json::parse(read_file(fixture_path("tiny-qwen3vl/chat_template.json")))["chat_template"];
  // Re-indented: the same template.
  std::string reindented;
  for (char c : src) reindented += c == '\n' ? std::string("\n  ") : std::string(1, c);
  EXPECT_NO_THROW(ChatTemplate::from_source(reindented + "\n"));
  // A different generation prompt (a "thinking" variant) must be refused.
  std::string other = src;
  other.replace(other.rfind("'<|im_start|>assistant\\n'"), 25, "'<|im_start|>assistant\\n<think>\\n'");
  try {
    ChatTemplate::from_source(other);
    FAIL() << "an altered template was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not recognised"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ChatTemplate::from_source(""), Error);
}

}  // namespace
}  // namespace qvl
