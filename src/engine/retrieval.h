// Qwen3-VL-Embedding and Qwen3-VL-Reranker on the engine, as the official
// scripts (QwenLM/Qwen3-VL-Embedding src/models/qwen3_vl_embedding.py,
// qwen3_vl_reranker.py; shipped in the checkpoints as scripts/) use them:
//
// embedding: system turn = the instruction (default "Represent the user's
//   input."; stripped, "." added unless it ends in Unicode punctuation); user
//   turn = the input's videos, then its images, then its texts (no
//   separators; none at all: the text "NULL"); the generation prompt; the
//   final-normed state of the last token ("\n" after "assistant"),
//   L2-normalised; a dimension d (MRL) takes its first d components,
//   normalised again.
// reranker: a fixed system turn; user turn "<Instruct>: {instruction}<Query>:
//   {query}\n<Document>:{document}" (each side's images before its text,
//   empty side "NULL"); score = sigmoid(h · (W[yes] − W[no])).
// Images of both go through qwen-vl-utils' budget, 4096 … 1843200 pixels
// (kRetrievalMinPixels/MaxPixels), not the checkpoint's preprocessor_config.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"

namespace qvl {

inline constexpr int64_t kRetrievalMinPixels = 4096;        // qwen-vl-utils' MIN_PIXELS in the scripts
inline constexpr int64_t kRetrievalMaxPixels = 1843200;     // 1800 * 32 * 32
inline constexpr const char* kDefaultEmbeddingInstruction = "Represent the user's input.";
inline constexpr const char* kDefaultRerankInstruction =
    "Given a search query, retrieve relevant candidates that answer the query.";
inline constexpr const char* kRerankSystem =
    "Judge whether the Document meets the requirements based on the Query and the Instruct provided. Note that "
    "the answer can only be \"yes\" or \"no\".";

// One input of the official scripts' shape: {"text", "image", "video",
// "instruction"}, each text/image/video a value or a list.
struct RetrievalInput {
  std::vector<std::string> texts;
  std::vector<std::shared_ptr<const Image>> images;
  std::vector<std::shared_ptr<const Video>> videos;
  std::optional<std::string> instruction;  // embedding only: this input's own instruction
};

// The system text of an embedding prompt: the default for none or blank,
// else the instruction stripped, with "." appended unless its last character
// is Unicode punctuation (category P*).
std::string embedding_instruction(const std::optional<std::string>& instruction);

// The conversations the scripts build (engine Messages; rendered by the
// engine with the generation prompt).
std::vector<Message> embedding_messages(const RetrievalInput& input, const std::optional<std::string>& instruction);
std::vector<Message> rerank_messages(const RetrievalInput& query, const RetrievalInput& document,
                                     const std::optional<std::string>& instruction);

// x[:dimensions] / max(‖x[:dimensions]‖, 1e-12) (F.normalize); dimensions 0: all of x.
std::vector<float> normalized_prefix(std::span<const float> x, int64_t dimensions);

struct EmbedOptions {
  std::optional<std::string> instruction;  // for every input without its own
  int64_t dimensions = 0;                  // MRL: 1 … hidden size; 0: the hidden size
  const std::atomic<bool>* cancel = nullptr;
};

struct EmbedResult {
  std::vector<std::vector<float>> embeddings;  // [inputs][dimensions], unit length
  std::vector<int64_t> prompt_tokens;          // [inputs]
  std::vector<std::vector<int32_t>> prompt_ids;  // [inputs][tokens]
  Timings timings;
};

// Throws FieldError("dimensions") for a dimension outside 1 … hidden size,
// FieldError("input") for no inputs.
EmbedResult embed(Engine& engine, const std::vector<RetrievalInput>& inputs, const EmbedOptions& options);

struct RerankOptions {
  std::optional<std::string> instruction;  // verbatim; none or empty: kDefaultRerankInstruction
  const std::atomic<bool>* cancel = nullptr;
};

struct RerankScore {
  double score = 0;       // sigmoid(logit)
  double logit = 0;       // h · (W[yes] − W[no]) = logit(yes) − logit(no)
  int64_t prompt_tokens = 0;
};

struct RerankResult {
  std::vector<RerankScore> scores;  // [documents], in the documents' order
  std::vector<std::vector<int32_t>> prompt_ids;  // [documents][tokens]
  Timings timings;
};

// The tokens "yes" and "no" of the tokenizer's vocabulary (9693, 2152 for
// Qwen3): bare words, not " yes" or "Yes".
struct YesNoTokens {
  int32_t yes = -1, no = -1;
};
YesNoTokens yes_no_tokens(const Engine& engine);

RerankResult rerank(Engine& engine, const RetrievalInput& query, const std::vector<RetrievalInput>& documents,
                    const RerankOptions& options);

}  // namespace qvl
