#include "engine/prompt.h"

#include <cstring>

#include "util/error.h"

namespace qvl {
namespace {

// FNV-1a over the patch values and the grid: identifies an image's content
// for prefix reuse (image tokens are all the same id).
uint64_t content_hash(const PixelValues& pv) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  const int dims[3] = {pv.grid_t, pv.grid_h, pv.grid_w};
  mix(dims, sizeof dims);
  mix(pv.data.data(), pv.data.size() * sizeof(float));
  return h | 1;  // never 0, which marks text
}

}  // namespace

PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const ModelFolder& folder,
                              const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              const PreprocessOptions& preprocess_options) {
  PreparedPrompt p;
  const ModelConfig& c = folder.config;
  const int merge = c.vision.spatial_merge_size;
  std::vector<ChatMessage> chat;
  std::vector<uint64_t> hashes;
  for (const Message& m : messages) {
    ChatMessage cm;
    cm.role = m.role;
    for (const MessagePart& part : m.parts) {
      ChatPart cp;
      if (part.image) {
        p.images.push_back(preprocess(*part.image, folder.preprocessor, preprocess_options));
        const PixelValues& pv = p.images.back();
        p.grids.push_back({pv.grid_t, pv.grid_h, pv.grid_w});
        hashes.push_back(content_hash(pv));
        cp.kind = ChatPart::Kind::Image;
        cp.image_tokens = pv.num_tokens(merge);
      } else {
        cp.kind = ChatPart::Kind::Text;
        cp.text = part.text;
      }
      cm.parts.push_back(std::move(cp));
    }
    chat.push_back(std::move(cm));
  }
  p.ids = tokenizer.encode(chat_template.render(chat, true));
  p.positions = rope_index(p.ids, p.grids, c.image_token_id, merge);
  p.image_row = image_rows(p.ids, c.image_token_id);
  p.token_key.assign(p.ids.size(), 0);
  size_t image = 0;
  int64_t left = 0;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (p.image_row[i] < 0) continue;
    if (left == 0) left = p.grids[image++].tokens(merge);
    p.token_key[i] = hashes[image - 1];
    --left;
  }
  return p;
}

}  // namespace qvl
