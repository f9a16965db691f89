// OpenAI response objects for a generation: chat.completion (every choice,
// its tool calls and logprobs), the chat.completion.chunk stream pieces,
// usage, and qvl's `timings` extension.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "engine/scheduler.h"

namespace qvl {

class Tokenizer;

struct ResponseMeta {
  std::string id;      // "chatcmpl-…"
  int64_t created = 0; // Unix seconds
  std::string model;
  double image_ms = 0; // fetch + decode on the request thread
  int64_t image_tokens = 0;
  const Tokenizer* tokenizer = nullptr;  // the server's (outlives every response): logprobs' token text and bytes
};

nlohmann::json usage_json(const GenerateResult& r, const ResponseMeta& meta);
nlohmann::json timings_json(const Task& task, const ResponseMeta& meta);
// The whole answer: choices[i] with message (content, a Thinking model's
// reasoning_content, tool_calls), logprobs
// (null unless the request asked) and finish_reason, usage over every choice.
nlohmann::json completion_json(const Task& task, const ResponseMeta& meta);
// One entry of logprobs.content: {"token", "logprob", "bytes", "top_logprobs"}.
nlohmann::json logprob_json(const TokenLogprob& lp, const Tokenizer& tokenizer);
// {"content": [entries...], "refusal": null}
nlohmann::json logprobs_json(std::span<const TokenLogprob> lps, const Tokenizer& tokenizer);
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls);
// One stream chunk for choice `index`: `delta` (e.g. {"content": "…"}), its
// logprobs ({"content": [...], "refusal": null} or null) and, at the end, a finish reason.
nlohmann::json chunk_json(const ResponseMeta& meta, int index, nlohmann::json delta,
                          nlohmann::json logprobs = nullptr, const char* finish_reason = nullptr);
// The final chunk with stream_options.include_usage: no choices, usage + timings.
nlohmann::json usage_chunk_json(const Task& task, const ResponseMeta& meta);
// OpenAI's finish_reason for the engine's: stop, length, tool_calls, or
// qvl's repetition.
const char* finish_reason(const Choice& c);

// Output that must stay valid UTF-8 JSON whatever the model produced.
std::string dump(const nlohmann::json& j);

}  // namespace qvl
