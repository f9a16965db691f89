// A request's messages turned into what the model consumes: each image's grid
// (its token count) and cache key, the chat template rendered with those
// counts, the text tokenized, M-RoPE positions and the image-row map. The
// pixels are not preprocessed here: the engine does that only for images
// whose embeddings it must compute (not cached, not in a reused prefix).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/engine.h"
#include "engine/image_cache.h"
#include "image/preprocess.h"
#include "io/model_config.h"
#include "model/positions.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

struct PreparedPrompt {
  std::vector<int32_t> ids;            // [L]
  // The prompt's visual inputs in order, each an image or a video (the
  // other pointer null); the vision stage drops them once encoded.
  std::vector<std::shared_ptr<const Image>> images;
  std::vector<std::shared_ptr<const Video>> videos;
  std::vector<ImageGrid> grids;        // per image or video (a video's t: its temporal groups)
  std::vector<ImageKey> keys;          // per image (hash 0 when not asked for)
  // Per item: a video's pixel range as preprocessed (its own, lowered to the
  // video-token budget); unused for images.
  std::vector<PreprocessOptions> video_options;
  PromptPositions positions;           // [L] and rope_delta
  std::vector<int64_t> image_row;      // [L]: row among all image tokens, -1 for text
  // [L]: 0 for text, the image's key hash for its tokens; a video's key from
  // its first to its last token, timestamps between groups included, so a
  // reused prefix never ends inside a video.
  std::vector<uint64_t> token_key;
};

// `tools`: the request's tools, each rendered from its `definition` (the
// template's "# Tools" block; none: the template without it); the assistant
// messages' tool_calls render as <tool_call> blocks (name and arguments text
// verbatim). `key_seed`: hash every image (image_key) with this seed; without
// it the keys (and token_key) stay 0, for callers that only count tokens.
// `max_video_tokens` (0: none): each video's prompt tokens, its timestamps'
// text and delimiters included, at most this many (video_tokens_within).
PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const std::vector<Tool>& tools,
                              const ModelFolder& folder, const ChatTemplate& chat_template,
                              const Tokenizer& tokenizer, const PreprocessOptions& preprocess_options,
                              std::optional<uint64_t> key_seed, int64_t max_video_tokens = 0);
// Without tools.
PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const ModelFolder& folder,
                              const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              const PreprocessOptions& preprocess_options, std::optional<uint64_t> key_seed,
                              int64_t max_video_tokens = 0);

// A video's pixel range within `max_tokens` prompt tokens (0: its own range):
// the text of each temporal group ("<t seconds>" as `tokenizer` splits it,
// vision_start, vision_end) comes off the budget first, the vision tokens
// get the rest (video_options_within_tokens). Throws naming the budget when
// the text alone does not leave one token per group.
PreprocessOptions video_options_within_budget(const Video& video, const VideoPreprocessorConfig& config,
                                              const Tokenizer& tokenizer, int64_t max_tokens);

}  // namespace qvl
