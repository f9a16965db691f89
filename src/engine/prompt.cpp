#include "engine/prompt.h"

#include "util/error.h"

namespace qvl {

PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const ModelFolder& folder,
                              const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              const PreprocessOptions& preprocess_options, std::optional<uint64_t> key_seed) {
  return prepare_prompt(messages, {}, folder, chat_template, tokenizer, preprocess_options, key_seed);
}

PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const std::vector<Tool>& tools,
                              const ModelFolder& folder, const ChatTemplate& chat_template,
                              const Tokenizer& tokenizer, const PreprocessOptions& preprocess_options,
                              std::optional<uint64_t> key_seed) {
  PreparedPrompt p;
  const ModelConfig& c = folder.config;
  const int merge = c.vision.spatial_merge_size;
  std::vector<ChatMessage> chat;
  for (const Message& m : messages) {
    ChatMessage cm;
    cm.role = m.role;
    for (const MessagePart& part : m.parts) {
      ChatPart cp;
      if (part.image) {
        const ResizedSize size = preprocess_size(*part.image, folder.preprocessor, preprocess_options);
        const int patch = folder.preprocessor.patch_size;
        p.images.push_back(part.image);
        p.grids.push_back({1, size.height / patch, size.width / patch});  // a still image is one temporal patch
        p.keys.push_back(key_seed ? image_key(*part.image, preprocess_options.min_pixels,
                                              preprocess_options.max_pixels, *key_seed)
                                  : ImageKey{});
        cp.kind = ChatPart::Kind::Image;
        cp.image_tokens = p.grids.back().tokens(merge);
      } else {
        cp.kind = ChatPart::Kind::Text;
        cp.text = part.text;
      }
      cm.parts.push_back(std::move(cp));
    }
    for (const ToolCall& call : m.tool_calls) cm.tool_calls.push_back({call.name, call.arguments});
    cm.reasoning = m.reasoning;
    chat.push_back(std::move(cm));
  }
  std::vector<std::string> definitions;
  definitions.reserve(tools.size());
  for (const Tool& t : tools) definitions.push_back(t.definition);
  p.ids = tokenizer.encode(chat_template.render(chat, definitions, true));
  p.positions = rope_index(p.ids, p.grids, c.image_token_id, merge);
  p.image_row = image_rows(p.ids, c.image_token_id);
  p.token_key.assign(p.ids.size(), 0);
  size_t image = 0;
  int64_t left = 0;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (p.image_row[i] < 0) continue;
    if (left == 0) left = p.grids[image++].tokens(merge);
    p.token_key[i] = p.keys[image - 1].hash;
    --left;
  }
  return p;
}

}  // namespace qvl
