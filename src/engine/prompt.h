// A request's messages turned into what the model consumes: images
// preprocessed into patches, the chat template rendered with each image's
// token count, the text tokenized, M-RoPE positions and the image-row map.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/engine.h"
#include "image/preprocess.h"
#include "io/model_config.h"
#include "model/positions.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace qvl {

struct PreparedPrompt {
  std::vector<int32_t> ids;            // [L]
  std::vector<PixelValues> images;     // in prompt order
  std::vector<ImageGrid> grids;        // per image
  PromptPositions positions;           // [L] and rope_delta
  std::vector<int64_t> image_row;      // [L]: row among all image tokens, -1 for text
  std::vector<uint64_t> token_key;     // [L]: 0 for text, the image's content hash for its tokens
};

PreparedPrompt prepare_prompt(const std::vector<Message>& messages, const ModelFolder& folder,
                              const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                              const PreprocessOptions& preprocess_options);

}  // namespace qvl
