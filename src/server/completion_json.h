// OpenAI response objects for a generation: chat.completion, the
// chat.completion.chunk stream pieces, usage, and qvl's `timings` extension.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/scheduler.h"

namespace qvl {

struct ResponseMeta {
  std::string id;      // "chatcmpl-…"
  int64_t created = 0; // Unix seconds
  std::string model;
  double image_ms = 0; // fetch + decode on the request thread
  int64_t image_tokens = 0;
};

nlohmann::json usage_json(const GenerateResult& r, const ResponseMeta& meta);
nlohmann::json timings_json(const Task& task, const ResponseMeta& meta);
nlohmann::json completion_json(const Task& task, const ResponseMeta& meta);
// One stream chunk: `delta` (e.g. {"content": "…"}) and, at the end, a finish reason.
nlohmann::json chunk_json(const ResponseMeta& meta, nlohmann::json delta, const char* finish_reason = nullptr);
// The final chunk with stream_options.include_usage: no choices, usage + timings.
nlohmann::json usage_chunk_json(const Task& task, const ResponseMeta& meta);
// OpenAI's finish_reason for the engine's.
const char* finish_reason(const GenerateResult& r);

// Output that must stay valid UTF-8 JSON whatever the model produced.
std::string dump(const nlohmann::json& j);

}  // namespace qvl
