// Qwen3-VL's chat templates (Instruct and Thinking), rendered natively (no
// Jinja engine). A
// model folder whose template this code does not recognise (by a fingerprint
// of its text) is refused (from_source throws) rather than rendered
// differently from Hugging Face. render() follows the template's branches for
// tools (the system turn's "# Tools" block), system (first message only, text
// parts), user (text and images), assistant (text, then its tool calls) and
// tool messages (text and images; consecutive ones share one user turn); it
// throws on an unknown role, on an image in a system or assistant message or a
// tool call outside an assistant message (the template would drop them
// silently), on a tool that is not JSON and on an empty conversation.
//
// The Thinking template differs in four places: the answer opens with
// "<think>\n" (the generation prompt); an assistant turn after the last user
// query shows its reasoning as "<think>\n…\n</think>\n\n" before its text,
// one before it drops the reasoning; the reasoning is the message's
// reasoning_content or, without one, what its text holds before "</think>";
// and a system message after the first is rendered as a turn of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qvl {

struct ChatPart {
  enum class Kind { Text, Image, Video };
  Kind kind = Kind::Text;
  std::string text;      // Kind::Text
  int image_tokens = 0;  // Kind::Image: how many <|image_pad|> it expands to; Kind::Video: per temporal group
  // Kind::Video: one timestamp per temporal group, seconds. With image_tokens
  // > 0 the video renders as Qwen3VLProcessor expands the template's
  // <|vision_start|><|video_pad|><|vision_end|>: per group "<%.1f seconds>"
  // (Python's {:.1f}), <|vision_start|>, image_tokens × <|video_pad|>,
  // <|vision_end|>; with 0, as the template itself renders it.
  std::vector<double> timestamps;
};

// "<12.5 seconds>": how a video's temporal group is introduced in the
// prompt, Python's "<{:.1f} seconds>" of its time (the exact binary value
// rounded, ties to even). Clients showing what the model reads use it too.
std::string video_timestamp_text(double seconds);

// A call in an assistant message of the history, rendered as
//   <tool_call>\n{"name": "NAME", "arguments": ARGUMENTS}\n</tool_call>
// with both fields inserted verbatim (the template renders a string
// `arguments` as is; a client's object is serialised Python-style, see
// py_json.h, before it gets here).
struct ChatToolCall {
  std::string name;
  std::string arguments;  // JSON text
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool"
  std::vector<ChatPart> parts;
  std::vector<ChatToolCall> tool_calls;  // assistant messages only
  // Assistant messages of the history: the client's reasoning_content (the
  // Thinking template renders it; the Instruct one has no place for it).
  std::optional<std::string> reasoning;
};

class ChatTemplate {
 public:
  enum class Kind { Instruct, Thinking };
  // `source`: the Jinja text from the model folder.
  static ChatTemplate from_source(const std::string& source);
  Kind kind() const { return kind_; }
  // The Thinking variant: the answer starts inside a think block, which the
  // model closes with "</think>" before the reply.
  bool thinking() const { return kind_ == Kind::Thinking; }
  // What from_source() recognises a template by: a hash of its text with
  // every line trimmed and empty lines dropped.
  static uint64_t fingerprint(const std::string& source);
  // With image_tokens > 0 each image becomes <|vision_start|> + that many
  // <|image_pad|> + <|vision_end|>; with 0, one <|image_pad|> (as HF renders it).
  // `tools`: each tool object's JSON text as the client sent it (keys in the
  // client's order); the template renders it `| tojson`, i.e. Python's
  // json.dumps(tool, ensure_ascii=False). No tools: the template's branch
  // without a "# Tools" block.
  std::string render(const std::vector<ChatMessage>& messages, const std::vector<std::string>& tools,
                     bool add_generation_prompt = true) const;
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const {
    return render(messages, {}, add_generation_prompt);
  }

 private:
  explicit ChatTemplate(Kind kind) : kind_(kind) {}
  Kind kind_ = Kind::Instruct;
};

}  // namespace qvl
