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
PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const std::vector<Tool>& tools,
                              const ModelFolder& folder, const ChatTemplate& chat_template,
                              const Tokenizer& tokenizer, const PreprocessOptions& preprocess_options,
                              std::optional<uint64_t> key_seed);
// Without tools.
PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const ModelFolder& folder,
                              const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              const PreprocessOptions& preprocess_options, std::optional<uint64_t> key_seed);

}  // namespace qvl
