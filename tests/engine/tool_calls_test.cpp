// ToolCallParser over answers fed whole, byte by byte and in uneven chunks
// (the same events once adjacent pieces are merged), and prepare_prompt with
// tools against the golden tool prompts.
#include "engine/tool_calls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "engine/prompt.h"
#include "tokenizer/py_json.h"

namespace qvl {
namespace {

using Event = ToolCallParser::Event;
using Kind = ToolCallParser::Event::Kind;

// Events with adjacent Content pieces (and adjacent pieces of one call's
// arguments) joined, written compactly: C[text] B0[name] A0[args].
std::string summary(const std::vector<Event>& events) {
  std::vector<Event> merged;
  for (const Event& e : events) {
    if (!merged.empty() && e.kind != Kind::CallBegin && merged.back().kind == e.kind &&
        merged.back().index == e.index)
      merged.back().text += e.text;
    else
      merged.push_back(e);
  }
  std::string s;
  for (const Event& e : merged) {
    if (!s.empty()) s += ' ';
    if (e.kind == Kind::Content) s += "C[" + e.text + "]";
    if (e.kind == Kind::CallBegin) s += "B" + std::to_string(e.index) + "[" + e.text + "]";
    if (e.kind == Kind::CallArguments) s += "A" + std::to_string(e.index) + "[" + e.text + "]";
  }
  return s;
}

struct Run {
  std::vector<Event> events;
  std::vector<ToolCall> calls;
  std::string content;
};

Run feed(const std::vector<std::string_view>& pieces) {
  ToolCallParser p;
  Run r;
  for (std::string_view piece : pieces)
    for (Event& e : p.push(piece)) r.events.push_back(std::move(e));
  for (Event& e : p.finish()) r.events.push_back(std::move(e));
  r.calls = p.calls();
  r.content = p.content();
  return r;
}

std::vector<std::string_view> chunks(std::string_view s, size_t n) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size(); i += n) out.push_back(s.substr(i, n));
  return out;
}

// Parses `text` whole, byte by byte and in chunks of 2, 3, 5 and 7 bytes;
// checks that every way gives the same events, that the events agree with
// calls() and content(), and returns the summary.
std::string parse(std::string_view text, std::vector<ToolCall>* calls = nullptr, std::string* content = nullptr) {
  const Run whole = feed({text});
  const std::string expected = summary(whole.events);
  for (size_t n : {1, 2, 3, 5, 7}) {
    Run r = feed(chunks(text, n));
    EXPECT_EQ(summary(r.events), expected) << "chunks of " << n << ": " << text;
    EXPECT_EQ(r.content, whole.content);
    EXPECT_EQ(r.calls.size(), whole.calls.size());
    for (size_t i = 0; i < std::min(r.calls.size(), whole.calls.size()); ++i) {
      EXPECT_EQ(r.calls[i].name, whole.calls[i].name);
      EXPECT_EQ(r.calls[i].arguments, whole.calls[i].arguments);
    }
  }
  // content() is the Content events; each call's arguments are its pieces.
  std::string content_events;
  std::vector<std::string> ids, args(whole.calls.size());
  for (const Event& e : whole.events) {
    if (e.kind == Kind::Content) content_events += e.text;
    if (e.kind == Kind::CallBegin) {
      EXPECT_EQ(e.index, static_cast<int>(ids.size()));
      ids.push_back(e.id);
    }
    if (e.kind == Kind::CallArguments) {
      EXPECT_LT(static_cast<size_t>(e.index), args.size());
      if (static_cast<size_t>(e.index) < args.size()) args[e.index] += e.text;
    }
  }
  EXPECT_EQ(content_events, whole.content);
  EXPECT_EQ(ids.size(), whole.calls.size());
  for (size_t i = 0; i < std::min(ids.size(), whole.calls.size()); ++i) {
    EXPECT_EQ(ids[i], whole.calls[i].id);
    EXPECT_EQ(args[i], whole.calls[i].arguments);
  }
  if (calls) *calls = whole.calls;
  if (content) *content = whole.content;
  return expected;
}

std::string block(std::string_view json) { return "<tool_call>\n" + std::string(json) + "\n</tool_call>"; }

TEST(ToolCallParser, PlainTextStreamsAtOnce) {
  ToolCallParser p;
  EXPECT_EQ(summary(p.push("Hello")), "C[Hello]");
  EXPECT_EQ(summary(p.push(", wor")), "C[, wor]");
  EXPECT_EQ(summary(p.push("ld <b> & < c")), "C[ld <b> & < c]");
  EXPECT_EQ(summary(p.push("\n")), "");  // may be the "\n" before a block
  EXPECT_EQ(summary(p.push("x")), "C[\nx]");
  EXPECT_EQ(summary(p.finish()), "");
  EXPECT_EQ(p.content(), "Hello, world <b> & < c\nx");
  EXPECT_TRUE(p.calls().empty());
  EXPECT_EQ(parse("a\nb\n"), "C[a\nb\n]");
  EXPECT_EQ(parse(""), "");
}

TEST(ToolCallParser, OneCallAsTheTemplateRendersIt) {
  std::vector<ToolCall> calls;
  std::string content;
  EXPECT_EQ(parse(block(R"({"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}})"), &calls,
                  &content),
            R"(B0[get_weather] A0[{"city": "Paris", "unit": "celsius"}])");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(calls[0].arguments, R"({"city": "Paris", "unit": "celsius"})");
  EXPECT_EQ(content, "");
  ASSERT_EQ(calls[0].id.size(), 5u + 24u);
  EXPECT_EQ(calls[0].id.substr(0, 5), "call_");
  for (char c : calls[0].id.substr(5)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << calls[0].id;
}

TEST(ToolCallParser, TextThenSeveralCalls) {
  std::vector<ToolCall> calls;
  std::string content;
  const std::string text = "Let me check both.\n" + block(R"({"name": "get_weather", "arguments": {"city": "Paris"}})") +
                           "\n" + block(R"({"name": "get_weather", "arguments": {"city": "北京"}})");
  EXPECT_EQ(parse(text, &calls, &content),
            R"(C[Let me check both.] B0[get_weather] A0[{"city": "Paris"}] B1[get_weather] A1[{"city": "北京"}])");
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_NE(calls[0].id, calls[1].id);
  EXPECT_EQ(content, "Let me check both.");
  // Text after the calls: the "\n" after </tool_call> is markup.
  EXPECT_EQ(parse(block(R"({"name": "f", "arguments": {}})") + "\nDone.\n\n"), "B0[f] A0[{}] C[Done.\n\n]");
  // The template's separators, doubled: one "\n" on each side is markup.
  EXPECT_EQ(parse("a\n\n" + block(R"({"name": "f"})") + "\n\n" + block(R"({"name": "g"})")),
            "C[a\n] B0[f] A0[{}] B1[g] A1[{}]");
}

TEST(ToolCallParser, HeldBackPrefixAtTheEnd) {
  ToolCallParser p;
  EXPECT_EQ(summary(p.push("see <")), "C[see ]");
  EXPECT_EQ(summary(p.finish()), "C[<]");
  EXPECT_EQ(p.content(), "see <");
  ToolCallParser q;
  EXPECT_EQ(summary(q.push("x\n<tool")), "C[x]");
  EXPECT_EQ(summary(q.push("_cal")), "");
  EXPECT_EQ(summary(q.push("l is a tag")), "C[\n<tool_call is a tag]");
  EXPECT_EQ(parse("a <tool"), "C[a <tool]");
  EXPECT_EQ(parse("<tool_call"), "C[<tool_call]");
  EXPECT_EQ(parse("x\n"), "C[x\n]");
  EXPECT_EQ(parse("<tool_<tool_call>"), "C[<tool_<tool_call>]");
}

TEST(ToolCallParser, BlockThatIsNotACallIsContent) {
  // <tool_call> in prose, never a JSON object.
  EXPECT_EQ(parse("Use <tool_call> tags. Or\n<tool_call>{oops}"), "C[Use <tool_call> tags. Or\n<tool_call>{oops}]");
  // Unfinished before the name is known.
  EXPECT_EQ(parse("x\n<tool_call>\n{\"name\": \"get_"), "C[x\n<tool_call>\n{\"name\": \"get_]");
  EXPECT_EQ(parse("<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>"),
            "C[<tool_call>\n{\"arguments\": {\"a\": 1}}\n</tool_call>]");  // no name
  EXPECT_EQ(parse("<tool_call>{\"name\": 3}</tool_call>"), "C[<tool_call>{\"name\": 3}</tool_call>]");
  EXPECT_EQ(parse("<tool_call>{\"name\": \"\\q\"}</tool_call>"), "C[<tool_call>{\"name\": \"\\q\"}</tool_call>]");
  EXPECT_EQ(parse("<tool_call>{\"arguments\": {},}"), "C[<tool_call>{\"arguments\": {},}]");
  // The character that breaks a block may open the next one.
  EXPECT_EQ(parse("<tool_call>\n<tool_call>\n{\"name\": \"f\"}\n</tool_call>"), "C[<tool_call>\n] B0[f] A0[{}]");
}

TEST(ToolCallParser, BrokenAfterTheNameKeepsTheCall) {
  std::vector<ToolCall> calls;
  std::string content;
  // Cut short (max_tokens): the call as far as it got.
  EXPECT_EQ(parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2", &calls, &content),
            "B0[f] A0[{\"a\": [1, 2]");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, "{\"a\": [1, 2");
  EXPECT_EQ(content, "");
  EXPECT_EQ(parse("<tool_call>\n{\"name\": \"f\"", &calls), "B0[f]");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, "");
  // Not closed by </tool_call>: what follows the object is text again.
  EXPECT_EQ(parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}} and more</tool_call>", &calls),
            "B0[f] A0[{\"a\": 1}] C[and more</tool_call>]");
  EXPECT_EQ(calls.size(), 1u);
  // A mismatched bracket in the arguments.
  EXPECT_EQ(parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1}]}", &calls),
            "B0[f] A0[{\"a\": [1] C[}]}]");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, "{\"a\": [1");
  // Whatever breaks after the name: a trailing comma, a bad value.
  EXPECT_EQ(parse("<tool_call>{\"name\": \"f\",}"), "B0[f] C[}]");
  EXPECT_EQ(parse(block(R"({"name": "f", "bad": tru})"), &calls), "B0[f] C[}\n</tool_call>]");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, "");
}

TEST(ToolCallParser, LenientObject) {
  std::vector<ToolCall> calls;
  // Arguments first: emitted once the name is known.
  EXPECT_EQ(parse(block(R"({"arguments": {"x": [1, {"y": null}]}, "name": "f"})"), &calls),
            R"(B0[f] A0[{"x": [1, {"y": null}]}])");
  // Any whitespace; the arguments' inner whitespace is kept.
  EXPECT_EQ(parse("<tool_call>{ \"name\" :\"f\" ,\n\t\"arguments\" :\r\n{ \"a\" :  1 }\n}</tool_call>"),
            "B0[f] A0[{ \"a\" :  1 }]");
  // Missing or null arguments.
  EXPECT_EQ(parse(block(R"({"name": "f"})")), "B0[f] A0[{}]");
  EXPECT_EQ(parse(block(R"({"name": "f", "arguments": null})")), "B0[f] A0[{}]");
  // Arguments as a JSON string holding the object: its decoded text, trimmed.
  EXPECT_EQ(parse(block(R"({"name": "f", "arguments": " {\"city\": \"Paris\", \"n\": \"a\\nb\"}\n "})"), &calls),
            R"(B0[f] A0[{"city": "Paris", "n": "a\nb"}])");
  EXPECT_EQ(calls[0].arguments, R"({"city": "Paris", "n": "a\nb"})");
  // Other keys are skipped, whatever their values; a repeated key too.
  EXPECT_EQ(parse(block(R"({"id": "x}", "name": "f", "n": -1.5e3, "extra": [1, {"a": "]"}], "arguments": {"k": true}, "name": "g", "arguments": 5})")),
            R"(B0[f] A0[{"k": true}])");
  EXPECT_EQ(parse(block(R"({"name": "f", "arguments": 12})")), "B0[f] A0[12]");
  EXPECT_EQ(parse(block(R"({"bad": tru, "name": "f"})")), "C[" + block(R"({"bad": tru, "name": "f"})") + "]");
}

TEST(ToolCallParser, BracesAndQuotesInsideStrings) {
  const std::string args = R"({"code": "if (a) { b(\"}\"); }", "q": "\\", "e": "\"{[", "nested": {"a": [{"b": {}}, []]}})";
  std::vector<ToolCall> calls;
  EXPECT_EQ(parse(block(R"({"name": "run", "arguments": )" + args + "}"), &calls), "B0[run] A0[" + args + "]");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].arguments, args);
  EXPECT_TRUE(nlohmann::json::accept(calls[0].arguments));
}

TEST(ToolCallParser, Unicode) {
  std::vector<ToolCall> calls;
  std::string content;
  EXPECT_EQ(parse("Météo à 北京 😀\n" + block(R"({"name": "m\u00e9t\ud83d\ude00o", "arguments": {"ville": "北京 😀"}})"),
                  &calls, &content),
            "C[Météo à 北京 😀] B0[mét😀o] A0[{\"ville\": \"北京 😀\"}]");
  EXPECT_EQ(calls[0].name, "mét😀o");
  EXPECT_EQ(content, "Météo à 北京 😀");
  EXPECT_EQ(parse(block(R"({"name": "\ud83d", "arguments": {}})")),
            "C[" + block(R"({"name": "\ud83d", "arguments": {}})") + "]");  // a lone surrogate
}

TEST(ToolCallParser, StreamsNameThenArguments) {
  ToolCallParser p;
  EXPECT_EQ(summary(p.push("<tool_call>\n{\"name\": \"get_w")), "");
  EXPECT_EQ(summary(p.push("eather\", ")), "B0[get_weather]");
  EXPECT_EQ(summary(p.push("\"arguments\": {\"ci")), "A0[{\"ci]");
  EXPECT_EQ(summary(p.push("ty\": \"Paris\"}")), "A0[ty\": \"Paris\"}]");
  EXPECT_EQ(summary(p.push("}\n</tool_")), "");
  EXPECT_TRUE(p.calls().empty());
  EXPECT_EQ(summary(p.push("call>")), "");
  ASSERT_EQ(p.calls().size(), 1u);
  EXPECT_EQ(p.calls()[0].arguments, "{\"city\": \"Paris\"}");
  EXPECT_EQ(summary(p.push("\n")), "");
  EXPECT_EQ(summary(p.finish()), "");
  EXPECT_EQ(p.content(), "");
}

// Random texts from block fragments: every way of feeding them agrees
// (parse() checks), and text without blocks passes through whole.
TEST(ToolCallParser, RandomFragmentsSplitTheSameWay) {
  const char* kPieces[] = {"<tool_call>", "</tool_call>", "\n", " ", "{", "}", "[", "]", "\"name\"", "\"arguments\"",
                           ":", ",", "\"f\"", "\"x\"", "1", "null", "\\", "\"", "<", "<tool", "a", "é"};
  std::mt19937 rng(7);
  for (int t = 0; t < 400; ++t) {
    std::string text;
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) text += kPieces[rng() % std::size(kPieces)];
    std::vector<ToolCall> calls;
    std::string content;
    parse(text, &calls, &content);
    if (text.find("<tool_call>") == std::string::npos) {
      EXPECT_EQ(content, text);
    }
    if (::testing::Test::HasFailure()) break;
  }
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The golden tool prompts through prepare_prompt: Tool.definition and
// Message.tool_calls reach the template.
TEST(PreparePrompt, GoldenToolPrompts) {
  using nlohmann::ordered_json;
  const std::string fixtures = QVL_FIXTURES_DIR;
  const ModelFolder folder = ModelFolder::open(fixtures + "/tiny-qwen3vl");
  const ChatTemplate tmpl = ChatTemplate::from_source(folder.chat_template);
  const Tokenizer tok = Tokenizer::load(folder.tokenizer_json);
  const ordered_json golden = ordered_json::parse(read(fixtures + "/templates/tool_cases.json"));
  int checked = 0;
  for (const ordered_json& c : golden["cases"]) {
    std::vector<Tool> tools;
    for (const ordered_json& t : c["tools"]) tools.push_back({t["function"]["name"], t.dump(), ""});
    std::vector<Message> messages;
    bool has_image = false;
    for (const ordered_json& m : c["messages"]) {
      Message msg{m["role"], {}, {}};
      if (m["content"].is_string()) {
        msg.parts.push_back({m["content"], nullptr});
      } else {
        for (const ordered_json& p : m["content"]) {
          has_image |= p["type"] == "image";
          msg.parts.push_back({p.value("text", ""), nullptr});
        }
      }
      if (m.contains("tool_calls")) {
        for (const ordered_json& tc : m["tool_calls"]) {
          const ordered_json& a = tc["function"]["arguments"];
          msg.tool_calls.push_back(
              {"", tc["function"]["name"], a.is_string() ? a.get<std::string>() : python_json_dumps(a)});
        }
      }
      messages.push_back(std::move(msg));
    }
    if (has_image) continue;  // the images' token counts are prepare_prompt's own, tested elsewhere
    PreparedPrompt p = prepare_prompt(messages, tools, folder, tmpl, tok, PreprocessOptions{}, std::nullopt);
    EXPECT_EQ(p.ids, tok.encode(c["prompt"].get<std::string>())) << c["name"];
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

}  // namespace
}  // namespace qvl
