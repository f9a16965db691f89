// OpenAI Response objects (POST /v1/responses) for a generation: the
// Response with its output items (a message with output_text, then one
// function_call item per call), usage, and the stream's events.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace qvl {

struct ResponsesMeta {
  std::string id;          // "resp_…"
  int64_t created_at = 0;  // Unix seconds
  std::string model;
  nlohmann::ordered_json echo;  // ResponsesRequest::echo
};

// Ids of one response's output items, made before the answer exists so a
// stream and the final object agree.
struct OutputIds {
  std::function<std::string()> make;  // a fresh random hex id
  std::string message;                // "msg_…"
  std::string reasoning;              // "rs_…"
  std::vector<std::string> calls;     // "fc_…", one per call
  const std::string& call(size_t i);  // made on first use
};

// How the answer ended, in the Response's terms: "completed", or
// "incomplete" with the reason (max_output_tokens; qvl's "repetition" when
// the repetition guard stopped it).
struct ResponseEnd {
  const char* status = "completed";
  nlohmann::ordered_json incomplete_details;  // null when completed
};
ResponseEnd response_end(const GenerateResult& r);

// A token's text as the tokenizer decodes it.
using TokenText = std::function<std::string(int32_t)>;

// The output_text part of a message: text, annotations, and (with
// `token_text`) logprobs.
nlohmann::ordered_json output_text_json(const std::string& text, const std::vector<TokenLogprob>* logprobs = nullptr,
                                        const TokenText& token_text = {});
nlohmann::ordered_json message_item_json(const std::string& id, const char* status, nlohmann::ordered_json content);
nlohmann::ordered_json function_call_item_json(const std::string& id, const ToolCall& call, const char* status);
// OpenAI's reasoning item for a Thinking model's reasoning: no summary, the
// text as one reasoning_text part.
nlohmann::ordered_json reasoning_item_json(const std::string& id, const std::string& text, const char* status);
// The output items of a finished answer: a Thinking model's reasoning, a
// message when there is text or no call, then the calls.
nlohmann::ordered_json output_json(const GenerateResult& r, OutputIds& ids, bool logprobs, const TokenText& token_text);

nlohmann::ordered_json responses_usage_json(const GenerateResult& r);
// The Response object. `usage` null while in progress.
nlohmann::ordered_json response_json(const ResponsesMeta& meta, const char* status, nlohmann::ordered_json output,
                                     nlohmann::ordered_json usage = nullptr,
                                     nlohmann::ordered_json incomplete_details = nullptr,
                                     nlohmann::ordered_json error = nullptr);
// Concatenated output_text of the message items (the SDKs' `output_text`).
std::string output_text_of(const nlohmann::ordered_json& output);

// Output that must stay valid UTF-8 JSON whatever the model produced.
std::string dump_ordered(const nlohmann::ordered_json& j);
// One server-sent event: "event: TYPE\ndata: {...}\n\n" (the event's "type").
std::string sse_event(const nlohmann::ordered_json& event);

}  // namespace qvl
