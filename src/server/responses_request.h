// An OpenAI Responses API body (POST /v1/responses) turned into the
// chat-completions body that parse_chat_request reads, so both routes share
// one parser, one set of limits and one engine path. What differs is only
// the shape: `input` items instead of `messages` (function_call and
// function_call_output items become an assistant message's tool_calls and
// tool messages), `instructions` a system message in front, flat `tools`
// and `text.format`, `max_output_tokens`, and `previous_response_id`, whose
// stored conversation goes in front of `input`. Every field is checked
// (400 naming it); a field qvl cannot honour is refused, not ignored.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/response_store.h"

namespace qvl {

struct ResponsesRequest {
  nlohmann::ordered_json chat;  // the chat-completions body
  // The conversation as Responses items (previous_response_id's, then this
  // `input`, item references resolved): what the store keeps with the output.
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  // The request fields a Response object repeats (instructions, tools, text, …),
  // in OpenAI's order.
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
  bool stream = false;
  bool store = true;
  bool output_logprobs = false;  // include: ["message.output_text.logprobs"]

  // Where chat message i came from: "input[3]", "instructions" or
  // "previous_response_id"; and for an assistant message made of
  // function_call items, each call's item.
  struct Source {
    std::string path;
    bool tool_output = false;  // a function_call_output item (content is its "output")
    std::vector<std::string> calls;
  };
  std::vector<Source> sources;

  // The Responses name of a chat-completions field path (as parse_chat_request
  // and Engine::validate name them): "messages[2].content[0].image_url.url"
  // -> "input[1].content[0].image_url", "tools[0].function.parameters.x" ->
  // "tools[0].parameters.x", "response_format.json_schema.schema" ->
  // "text.format.schema", "max_completion_tokens" -> "max_output_tokens".
  std::string responses_param(const std::string& chat_param) const;
  // The same error, naming the Responses field (in its param and message).
  ApiError translate_error(const ApiError& e) const;
};

ResponsesRequest translate_responses_request(const nlohmann::ordered_json& body, const ResponseStore& store);

}  // namespace qvl
