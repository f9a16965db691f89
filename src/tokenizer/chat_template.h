// Qwen3-VL-Instruct's chat template, rendered natively (no Jinja engine). A
// model folder whose template this code does not recognise (by a fingerprint
// of its text) is refused (from_source throws) rather than rendered
// differently from Hugging Face. render() follows the template's branches for
// system (first message only, text parts), user (text and images), assistant
// (text) and tool messages; it throws on an unknown role, on an image in a
// system or assistant message (the template would drop it silently) and on an
// empty conversation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qvl {

struct ChatPart {
  enum class Kind { Text, Image };
  Kind kind = Kind::Text;
  std::string text;      // Kind::Text
  int image_tokens = 0;  // Kind::Image: how many <|image_pad|> it expands to
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::vector<ChatPart> parts;
};

class ChatTemplate {
 public:
  // `source`: the Jinja text from the model folder.
  static ChatTemplate from_source(const std::string& source);
  // What from_source() recognises a template by: a hash of its text with
  // every line trimmed and empty lines dropped.
  static uint64_t fingerprint(const std::string& source);
  // With image_tokens > 0 each image becomes <|vision_start|> + that many
  // <|image_pad|> + <|vision_end|>; with 0, one <|image_pad|> (as HF renders it).
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
};

}  // namespace qvl
