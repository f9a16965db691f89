// Decision: qvl renders Qwen3-VL's templates natively instead of
// embedding a Jinja interpreter. The template is a fixed program (a few
// concatenations per message); a native renderer is exact, small and fast, and
// from_source() refuses any template whose text differs, so a model folder with
// another template fails loudly instead of being rendered differently.
#include "tokenizer/chat_template.h"

#include <cstdint>
#include <cstdio>
#include <string_view>

#include "tokenizer/py_json.h"
#include "util/error.h"

namespace qvl {

std::string video_timestamp_text(double seconds) {
  char stamp[64];
  // The exact binary value rounded, ties to even, as Python's format does.
  std::snprintf(stamp, sizeof stamp, "<%.1f seconds>", seconds);
  return stamp;
}

namespace {

// Templates this file renders, by the hash of their normalised text. Qwen's
// Jinja is whitespace-controlled ({%- -%}) so indentation never reaches the
// output; normalising it away accepts a re-indented copy of the same template.
struct Known {
  uint64_t hash;
  const char* name;
  ChatTemplate::Kind kind;
};
// Qwen3-VL-Thinking: chat_template.json of the Qwen/Qwen3-VL-*-Thinking
// folders (one text for the whole family); its copy and source are in
// tests/fixtures/templates/ (README.md there).
constexpr Known kKnown[] = {
    {0x8229f4da71981fe1ULL, "Qwen3-VL-Instruct", ChatTemplate::Kind::Instruct},
    {0xf48d33092b5ff8b6ULL, "Qwen3-VL-Thinking", ChatTemplate::Kind::Thinking},
};

// Lines trimmed of surrounding whitespace, empty lines dropped, joined by \n.
std::string normalise(std::string_view src) {
  std::string out;
  size_t i = 0;
  while (i <= src.size()) {
    size_t nl = src.find('\n', i);
    if (nl == std::string_view::npos) nl = src.size();
    std::string_view line = src.substr(i, nl - i);
    size_t b = line.find_first_not_of(" \t\r\f\v");
    if (b != std::string_view::npos) {
      size_t e = line.find_last_not_of(" \t\r\f\v");
      if (!out.empty()) out += '\n';
      out.append(line.substr(b, e - b + 1));
    }
    i = nl + 1;
  }
  return out;
}

// The template's literal text around the tool list.
constexpr const char* kToolsHead =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr const char* kToolsTail =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\n</tool_call><|im_end|>\n";

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64-bit offset basis and prime
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

void append_image(std::string& out, const ChatPart& part) {
  if (part.image_tokens < 0) fail("chat template: image with a negative token count (", part.image_tokens, ")");
  out += "<|vision_start|>";
  int n = part.image_tokens == 0 ? 1 : part.image_tokens;
  out.reserve(out.size() + static_cast<size_t>(n) * 13 + 16);
  for (int k = 0; k < n; ++k) out += "<|image_pad|>";
  out += "<|vision_end|>";
}

void append_video(std::string& out, const ChatPart& part) {
  if (part.image_tokens < 0) fail("chat template: video with a negative token count (", part.image_tokens, ")");
  if (part.image_tokens == 0) {
    out += "<|vision_start|><|video_pad|><|vision_end|>";
    return;
  }
  if (part.timestamps.empty()) fail("chat template: video without temporal groups");
  for (double t : part.timestamps) {
    out += video_timestamp_text(t);
    out += "<|vision_start|>";
    for (int k = 0; k < part.image_tokens; ++k) out += "<|video_pad|>";
    out += "<|vision_end|>";
  }
}

// Text parts only: the template reads `content.text` in system and assistant
// turns. It would silently drop an image there; qvl refuses instead, so the
// caller never prepares an image the prompt does not contain.
void append_text_only(std::string& out, const ChatMessage& m, size_t index) {
  for (const ChatPart& p : m.parts) {
    if (p.kind != ChatPart::Kind::Text)
      fail("chat template: message ", index, " (", m.role, ") has ",
           p.kind == ChatPart::Kind::Image ? "an image" : "a video",
           "; Qwen3-VL accepts images and videos only in user and tool messages");
    out += p.text;
  }
}

void append_content(std::string& out, const ChatMessage& m) {
  for (const ChatPart& p : m.parts) {
    if (p.kind == ChatPart::Kind::Image)
      append_image(out, p);
    else if (p.kind == ChatPart::Kind::Video)
      append_video(out, p);
    else
      out += p.text;
  }
}

// Python's str.strip/lstrip/rstrip('\n').
std::string_view strip_newlines(std::string_view s, bool left, bool right) {
  while (left && !s.empty() && s.front() == '\n') s.remove_prefix(1);
  while (right && !s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

// The Thinking template's last user query: the last user message whose text
// is not a wrapped tool response; without one, the last message.
size_t last_query_index(const std::vector<ChatMessage>& messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    const ChatMessage& m = messages[i];
    if (m.role != "user") continue;
    std::string content;
    append_content(content, m);
    const std::string_view c = content;
    if (!(c.starts_with("<tool_response>") && c.ends_with("</tool_response>"))) return i;
  }
  return messages.size() - 1;
}

// An assistant turn of the Thinking template: its reasoning (the message's
// own, or what its text holds before "</think>", which then leaves the text)
// shown after the last query when there is some or the turn is the last.
// Returns the text the tool calls follow (the template tests that one).
std::string append_thinking_assistant(std::string& out, const ChatMessage& m, size_t index, bool after_query,
                                      bool last) {
  std::string content;
  append_text_only(content, m, index);
  std::string reasoning;
  if (m.reasoning) {
    reasoning = *m.reasoning;
  } else if (size_t end = content.find("</think>"); end != std::string::npos) {
    std::string_view before = strip_newlines(std::string_view(content).substr(0, end), false, true);
    if (size_t open = before.rfind("<think>"); open != std::string_view::npos) before.remove_prefix(open + 7);
    reasoning = strip_newlines(before, true, false);
    content = strip_newlines(std::string_view(content).substr(content.rfind("</think>") + 8), true, false);
  }
  out += "<|im_start|>assistant\n";
  if (after_query && (last || !reasoning.empty())) {
    out += "<think>\n";
    out += strip_newlines(reasoning, true, true);
    out += "\n</think>\n\n";
    out += strip_newlines(content, true, false);
  } else {
    out += content;
  }
  return content;
}

}  // namespace

uint64_t ChatTemplate::fingerprint(const std::string& source) { return fnv1a(normalise(source)); }

ChatTemplate ChatTemplate::from_source(const std::string& source) {
  uint64_t h = fingerprint(source);
  for (const Known& k : kKnown)
    if (k.hash == h) return ChatTemplate(k.kind);
  std::string names;
  for (const Known& k : kKnown) names += (names.empty() ? "" : ", ") + std::string(k.name);
  fail("chat template not recognised (fingerprint ", std::hex, h, std::dec,
       "): qvl renders only these templates natively: ", names,
       "; refusing rather than render it differently from Hugging Face");
}

// Transcribes the template's branches with add_vision_id unset. With tools,
// the system turn is the first system message's text (if any) and "\n\n",
// then the "# Tools" block; without, the first system message alone. Then
// each user/assistant/tool message; a later system message is rendered
// only by the Thinking template, as a turn of its own.
std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, const std::vector<std::string>& tools,
                                 bool add_generation_prompt) const {
  if (messages.empty()) fail("chat template: no messages to render");
  std::string out;
  if (!tools.empty()) {
    out += "<|im_start|>system\n";
    if (messages[0].role == "system") {
      append_text_only(out, messages[0], 0);
      out += "\n\n";
    }
    out += kToolsHead;
    for (size_t t = 0; t < tools.size(); ++t) {
      out += '\n';
      try {
        out += python_json_dumps_text(tools[t]);
      } catch (const Error& e) {
        fail("chat template: tool ", t, " is not JSON: ", e.what());
      }
    }
    out += kToolsTail;
  } else if (messages[0].role == "system") {
    out += "<|im_start|>system\n";
    append_text_only(out, messages[0], 0);
    out += "<|im_end|>\n";
  }
  const size_t last_query = thinking() ? last_query_index(messages) : 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (!m.tool_calls.empty() && m.role != "assistant")
      fail("chat template: message ", i, " (", m.role, ") has tool calls; only assistant messages make them");
    if (m.role == "user") {
      out += "<|im_start|>user\n";
      append_content(out, m);
      out += "<|im_end|>\n";
    } else if (m.role == "assistant") {
      // `message.content` (or the Thinking template's `content`, the text
      // after its reasoning) is truthy: qvl cannot tell a string from a list
      // of parts, so it takes "has text" (a list of empty text parts, truthy
      // in Jinja, is the one case rendered differently).
      bool has_content = false;
      if (thinking()) {
        has_content = !append_thinking_assistant(out, m, i, i > last_query, i + 1 == messages.size()).empty();
      } else {
        out += "<|im_start|>assistant\n";
        const size_t content_begin = out.size();
        append_text_only(out, m, i);
        has_content = out.size() > content_begin;
      }
      for (size_t k = 0; k < m.tool_calls.size(); ++k) {
        if ((k == 0 && has_content) || k > 0) out += '\n';
        out += "<tool_call>\n{\"name\": \"";
        out += m.tool_calls[k].name;
        out += "\", \"arguments\": ";
        out += m.tool_calls[k].arguments;
        out += "}\n</tool_call>";
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      // Consecutive tool results share one user turn.
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n";
      append_content(out, m);
      out += "\n</tool_response>";
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    } else if (m.role == "system") {
      if (i != 0 && thinking()) {
        out += "<|im_start|>system\n";
        append_text_only(out, m, i);
        out += "<|im_end|>\n";
      } else if (i != 0) {
        // Rendered as nothing by the Instruct template; still checked for images.
        std::string ignored;
        append_text_only(ignored, m, i);
      }
    } else {
      fail("chat template: message ", i, " has role \"", m.role, "\"; expected system, user, assistant or tool");
    }
  }
  if (add_generation_prompt) out += thinking() ? "<|im_start|>assistant\n<think>\n" : "<|im_start|>assistant\n";
  return out;
}

}  // namespace qvl
