#include "engine/retrieval.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace qvl {
namespace {

// Python's str.isspace: White_Space, and the separators U+001C … U+001F.
bool python_space(uint32_t cp) { return unicode::is_space(cp) || (cp >= 0x1C && cp <= 0x1F); }

// Python's str.strip() of valid UTF-8 (invalid bytes are kept as they are).
std::string python_strip(std::string_view s) {
  size_t begin = 0, end = 0;  // [begin, end): from the first to past the last non-space
  bool seen = false;
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8::valid_length(s, i);
    const bool space = len > 0 && python_space(utf8::code_point(s, i, len));
    const size_t next = i + (len > 0 ? len : 1);
    if (!space) {
      if (!seen) begin = i;
      seen = true;
      end = next;
    }
    i = next;
  }
  return seen ? std::string(s.substr(begin, end - begin)) : std::string();
}

// The code point that ends `s` (valid UTF-8, not empty), 0 when its last
// bytes do not form one.
uint32_t last_code_point(std::string_view s) {
  for (size_t back = 1; back <= 4 && back <= s.size(); ++back) {
    const size_t i = s.size() - back;
    if (utf8::valid_length(s, i) == back) return utf8::code_point(s, i, back);
  }
  return 0;
}

// A side of the conversation in the scripts' order: videos, images, texts.
void append_parts(const RetrievalInput& in, std::vector<MessagePart>& parts) {
  for (const auto& v : in.videos) parts.push_back({"", nullptr, v});
  for (const auto& img : in.images) parts.push_back({"", img, nullptr});
  for (const std::string& t : in.texts) parts.push_back({t, nullptr, nullptr});
}

bool empty_input(const RetrievalInput& in) { return in.texts.empty() && in.images.empty() && in.videos.empty(); }

Message text_message(std::string role, std::string text) {
  Message m;
  m.role = std::move(role);
  m.parts.push_back({std::move(text), nullptr, nullptr});
  return m;
}

}  // namespace

std::string embedding_instruction(const std::optional<std::string>& instruction) {
  const std::string s = instruction ? python_strip(*instruction) : std::string();
  if (s.empty()) return kDefaultEmbeddingInstruction;
  return unicode::is_punctuation(last_code_point(s)) ? s : s + ".";
}

std::vector<Message> embedding_messages(const RetrievalInput& input, const std::optional<std::string>& instruction) {
  std::vector<Message> out;
  out.push_back(text_message("system", embedding_instruction(input.instruction ? input.instruction : instruction)));
  Message user;
  user.role = "user";
  if (empty_input(input)) user.parts.push_back({"NULL", nullptr, nullptr});
  else append_parts(input, user.parts);
  out.push_back(std::move(user));
  return out;
}

std::vector<Message> rerank_messages(const RetrievalInput& query, const RetrievalInput& document,
                                     const std::optional<std::string>& instruction) {
  std::vector<Message> out;
  out.push_back(text_message("system", kRerankSystem));
  Message user;
  user.role = "user";
  const std::string inst = instruction && !instruction->empty() ? *instruction : kDefaultRerankInstruction;
  user.parts.push_back({"<Instruct>: " + inst, nullptr, nullptr});
  user.parts.push_back({"<Query>:", nullptr, nullptr});
  if (empty_input(query)) user.parts.push_back({"NULL", nullptr, nullptr});
  else append_parts(query, user.parts);
  user.parts.push_back({"\n<Document>:", nullptr, nullptr});
  if (empty_input(document)) user.parts.push_back({"NULL", nullptr, nullptr});
  else append_parts(document, user.parts);
  out.push_back(std::move(user));
  return out;
}

std::vector<float> normalized_prefix(std::span<const float> x, int64_t dimensions) {
  const size_t d = dimensions > 0 ? static_cast<size_t>(dimensions) : x.size();
  if (d > x.size()) fail("an embedding of ", x.size(), " components has no prefix of ", d);
  double sum = 0;
  for (size_t i = 0; i < d; ++i) sum += double(x[i]) * x[i];
  const float norm = std::max(static_cast<float>(std::sqrt(sum)), 1e-12f);
  std::vector<float> out(x.begin(), x.begin() + d);
  for (float& v : out) v /= norm;
  return out;
}

EmbedResult embed(Engine& engine, const std::vector<RetrievalInput>& inputs, const EmbedOptions& options) {
  if (inputs.empty()) throw FieldError("input", "'input' is empty: give at least one text, image or video");
  const int64_t hidden = engine.info().hidden_size;
  if (options.dimensions < 0 || options.dimensions > hidden)
    throw FieldError("dimensions", cat("'dimensions' must be in [1, ", hidden, "] for this model, got ",
                                       options.dimensions));
  PoolRequest request;
  request.min_pixels = kRetrievalMinPixels;
  request.max_pixels = kRetrievalMaxPixels;
  request.cancel = options.cancel;
  for (const RetrievalInput& in : inputs) request.prompts.push_back(embedding_messages(in, options.instruction));
  PoolResult pooled = engine.last_hidden_states(request);
  EmbedResult out;
  for (size_t i = 0; i < inputs.size(); ++i) out.embeddings.push_back(normalized_prefix(pooled.state(i), options.dimensions));
  out.prompt_tokens = std::move(pooled.prompt_tokens);
  out.prompt_ids = std::move(pooled.prompt_ids);
  out.timings = pooled.timings;
  return out;
}

YesNoTokens yes_no_tokens(const Engine& engine) {
  const YesNoTokens t{engine.tokenizer().token_id("yes"), engine.tokenizer().token_id("no")};
  if (t.yes < 0 || t.no < 0) fail("the tokenizer has no token 'yes' or 'no' to score a reranker's answer with");
  return t;
}

RerankResult rerank(Engine& engine, const RetrievalInput& query, const std::vector<RetrievalInput>& documents,
                    const RerankOptions& options) {
  if (documents.empty()) throw FieldError("documents", "'documents' is empty: give at least one document");
  const YesNoTokens t = yes_no_tokens(engine);
  const int32_t ids[2] = {t.yes, t.no};
  const std::vector<float> head = engine.head_rows(ids);  // [2, hidden]
  PoolRequest request;
  request.min_pixels = kRetrievalMinPixels;
  request.max_pixels = kRetrievalMaxPixels;
  request.cancel = options.cancel;
  for (const RetrievalInput& doc : documents) request.prompts.push_back(rerank_messages(query, doc, options.instruction));
  PoolResult pooled = engine.last_hidden_states(request);
  const size_t h = static_cast<size_t>(pooled.hidden_size);
  RerankResult out;
  for (size_t i = 0; i < documents.size(); ++i) {
    const std::span<const float> s = pooled.state(i);
    // h·W[yes] − h·W[no], each a float dot product as the script's logits are.
    float yes = 0, no = 0;
    for (size_t k = 0; k < h; ++k) {
      yes += s[k] * head[k];
      no += s[k] * head[h + k];
    }
    RerankScore r;
    r.logit = double(yes) - double(no);
    r.score = 1.0 / (1.0 + std::exp(-r.logit));
    r.prompt_tokens = pooled.prompt_tokens[i];
    out.scores.push_back(r);
  }
  out.prompt_ids = std::move(pooled.prompt_ids);
  out.timings = pooled.timings;
  return out;
}

}  // namespace qvl
