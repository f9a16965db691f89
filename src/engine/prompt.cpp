#include "engine/prompt.h"

#include "image/video_preprocess.h"
#include "util/error.h"

namespace qvl {

PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const ModelFolder& folder,
                              const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              const PreprocessOptions& preprocess_options, std::optional<uint64_t> key_seed,
                              int64_t max_video_tokens) {
  return prepare_prompt(messages, {}, folder, chat_template, tokenizer, preprocess_options, key_seed,
                        max_video_tokens);
}

PreprocessOptions video_options_within_budget(const Video& v, const VideoPreprocessorConfig& config,
                                              const Tokenizer& tokenizer, int64_t max_tokens) {
  const PreprocessOptions own{v.min_pixels, v.max_pixels};
  if (max_tokens <= 0) return own;
  const int tp = config.frames.temporal_patch_size;
  int64_t text = 0;
  for (double t : temporal_group_timestamps(v.frame_indices, v.fps, tp))
    text += static_cast<int64_t>(tokenizer.encode(video_timestamp_text(t)).size()) + 2;  // + vision_start, vision_end
  const int n = static_cast<int>(v.frames.size());
  const int64_t groups = (n + tp - 1) / tp;
  if (max_tokens - text < groups)
    fail("a video of ", n, " frames has ", groups, " temporal groups whose timestamps take ", text,
         " tokens, leaving under one vision token per group within the video-token budget of ", max_tokens,
         " (--max-video-tokens); sample fewer frames");
  return video_options_within_tokens(n, v.height, v.width, config.frames, own, max_tokens - text);
}

PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const std::vector<Tool>& tools,
                              const ModelFolder& folder, const ChatTemplate& chat_template,
                              const Tokenizer& tokenizer, const PreprocessOptions& preprocess_options,
                              std::optional<uint64_t> key_seed, int64_t max_video_tokens) {
  PreparedPrompt p;
  const ModelConfig& c = folder.config;
  const int merge = c.vision.spatial_merge_size;
  const VideoPreprocessorConfig& video_config = folder.video_preprocessor;
  std::vector<ImageGrid> run_grids;  // per run of vision tokens: images, and each video's groups as (1, h, w)
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
        p.videos.push_back(nullptr);
        p.video_options.emplace_back();
        run_grids.push_back(p.grids.back());
        cp.kind = ChatPart::Kind::Image;
        cp.image_tokens = p.grids.back().tokens(merge);
      } else if (part.video) {
        const Video& v = *part.video;
        if (v.frames.empty()) fail("video part without frames");
        const PreprocessOptions options = video_options_within_budget(v, video_config, tokenizer, max_video_tokens);
        const ResizedSize size =
            video_preprocess_size(static_cast<int>(v.frames.size()), v.height, v.width, video_config.frames, options);
        const int patch = video_config.frames.patch_size, tp = video_config.frames.temporal_patch_size;
        const ImageGrid grid{static_cast<int>((v.frames.size() + tp - 1) / tp), size.height / patch,
                             size.width / patch};
        p.images.push_back(nullptr);
        p.videos.push_back(part.video);
        p.grids.push_back(grid);
        p.video_options.push_back(options);
        p.keys.push_back(key_seed ? video_key(v.frames, options.min_pixels, options.max_pixels, *key_seed) : ImageKey{});
        for (int g = 0; g < grid.t; ++g) run_grids.push_back({1, grid.h, grid.w});
        cp.kind = ChatPart::Kind::Video;
        cp.image_tokens = static_cast<int>(ImageGrid{1, grid.h, grid.w}.tokens(merge));
        cp.timestamps = temporal_group_timestamps(v.frame_indices, v.fps, tp);
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
  p.positions = rope_index(p.ids, run_grids, c.image_token_id, c.video_token_id, merge);
  p.image_row = image_rows(p.ids, c.image_token_id, c.video_token_id);
  p.token_key.assign(p.ids.size(), 0);
  size_t image = 0;
  int64_t left = 0;
  for (size_t i = 0; i < p.ids.size(); ++i) {
    if (p.image_row[i] < 0) {
      // Text inside a video (its timestamps and group delimiters) carries its key.
      if (left > 0) p.token_key[i] = p.keys[image - 1].hash;
      continue;
    }
    if (left == 0) left = p.grids[image++].tokens(merge);
    p.token_key[i] = p.keys[image - 1].hash;
    --left;
  }
  return p;
}

}  // namespace qvl
