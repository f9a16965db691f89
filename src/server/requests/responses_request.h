// An OpenAI Responses API body (POST /v1/responses) read into the same
// ChatRequest parse_chat_request makes, with the same pieces (chat_parts.h),
// so both routes share one set of checks and limits and one engine path,
// and no body is translated into another. What differs is only the shape:
// `input` items instead of `messages` (function_call and
// function_call_output items become an assistant message's tool_calls and
// tool messages), `instructions` a system message in front, flat `tools`
// and `text.format`, `max_output_tokens`, and `previous_response_id`, whose
// stored conversation goes in front of `input`. Every field is checked (400
// naming its Responses path); a field qvl cannot honour is refused, not ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/requests/api_error.h"
#include "server/requests/chat_request.h"
#include "server/jobs/response_store.h"

namespace qvl {

struct ResponsesRequest {
  ChatRequest chat;  // what the engine runs, as for POST /v1/chat/completions
  // The conversation as Responses items (previous_response_id's, then this
  // `input`, item references resolved): what the store keeps with the output.
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  // The request fields a Response object repeats (instructions, tools, text, …),
  // in OpenAI's order.
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
  bool stream = false;
  bool store = true;
  bool output_logprobs = false;  // include: ["message.output_text.logprobs"]
};

// The body read into the chat route's request, with no I/O: its media are
// left pending (ChatRequest::pending) for take_chat_media (chat_media.h),
// whose refusals name chat paths ("messages"): responses_error renames them.
ResponsesRequest parse_responses_request(const nlohmann::ordered_json& body, const ResponseStore& store,
                                         const ChatLimits& limits);

// The Responses name of a field the engine names by its chat path once the
// request is read (Engine::validate, the prompt's fit): "messages" ->
// "input", "tools[0].function.parameters.x" -> "tools[0].parameters.x",
// "response_format.json_schema.schema" -> "text.format.schema".
std::string responses_param(const std::string& chat_param);
// The same error, naming the Responses field (in its param and message).
ApiError responses_error(const ApiError& e);

}  // namespace qvl
