#include "server/replies/completion_json.h"

#include <cmath>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace qvl {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

const char* finish_reason(const Choice& c) {
  switch (c.finish_reason) {
    case FinishReason::Stop: return c.tool_calls.empty() ? "stop" : "tool_calls";
    case FinishReason::ToolCalls: return "tool_calls";
    case FinishReason::Repetition: return "repetition";  // qvl's: the answer fell into a loop
    case FinishReason::Length:
    case FinishReason::Cancelled: break;  // OpenAI has no "cancelled": the answer was cut short
  }
  return "length";
}

json usage_json(const GenerateResult& r, const ResponseMeta& meta) {
  return {{"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"total_tokens", r.prompt_tokens + r.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", r.cached_tokens}, {"image_tokens", meta.image_tokens}}}};
}

json timings_json(const Task& task, const ResponseMeta& meta) {
  const Timings& t = task.result().timings;
  return {{"queue_ms", task.queue_ms()},
          {"image_ms", meta.image_ms + t.preprocess_ms},
          {"vision_ms", t.vision_ms},
          {"image_cache_hits", t.image_cache_hits},
          {"image_cache_misses", t.image_cache_misses},
          {"cached_tokens", task.result().cached_tokens},
          {"prefill_ms", t.prefill_ms},
          {"prefill_tokens", t.prefill_tokens},
          {"prefill_tok_s", t.prefill_tok_s()},
          {"first_token_ms", t.first_token_ms},
          {"decode_ms", t.decode_ms},
          {"decode_tokens", t.decode_tokens},
          {"decode_tok_s", t.decode_tok_s()},
          {"total_ms", task.total_ms() + meta.image_ms}};
}

namespace {

// A token as OpenAI shows it: its text (bytes that are not valid UTF-8 on
// their own become U+FFFD, as the tokenizer decodes them), its raw bytes,
// its log-probability (OpenAI's -9999 for one too small to write).
json token_json(int32_t id, float logprob, const Tokenizer& tok) {
  const std::string bytes = tok.token_bytes(id);
  json b = json::array();
  for (unsigned char c : bytes) b.push_back(static_cast<int>(c));
  return {{"token", utf8::lossy(bytes)}, {"logprob", std::isfinite(logprob) ? logprob : -9999.0f}, {"bytes", b}};
}

}  // namespace

json logprob_json(const TokenLogprob& lp, const Tokenizer& tok) {
  json e = token_json(lp.token, lp.logprob, tok);
  json top = json::array();
  for (const auto& [id, logprob] : lp.top) top.push_back(token_json(id, logprob, tok));
  e["top_logprobs"] = std::move(top);
  return e;
}

json logprobs_json(std::span<const TokenLogprob> lps, const Tokenizer& tok) {
  json content = json::array();
  for (const TokenLogprob& lp : lps) content.push_back(logprob_json(lp, tok));
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

json tool_calls_json(const std::vector<ToolCall>& calls) {
  json out = json::array();
  for (const ToolCall& c : calls)
    out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return out;
}

json completion_json(const Task& task, const ResponseMeta& meta) {
  const GenerateResult& r = task.result();
  const bool logprobs = task.request().top_logprobs >= 0 && meta.tokenizer;
  json choices = json::array();
  for (size_t i = 0; i < r.choices(); ++i) {
    const Choice& c = r.choice(i);
    json message = {{"role", "assistant"}};
    // OpenAI's content is null for an answer that is only tool calls.
    message["content"] = c.text.empty() && !c.tool_calls.empty() ? json(nullptr) : json(c.text);
    message["refusal"] = nullptr;
    // A Thinking model's reasoning, beside the reply (vLLM's and llama.cpp's field).
    if (c.reasoning) message["reasoning_content"] = *c.reasoning;
    if (!c.tool_calls.empty()) message["tool_calls"] = tool_calls_json(c.tool_calls);
    choices.push_back({{"index", i},
                       {"message", std::move(message)},
                       {"logprobs", logprobs ? logprobs_json(c.logprobs, *meta.tokenizer) : json(nullptr)},
                       {"finish_reason", finish_reason(c)}});
  }
  return {{"id", meta.id},
          {"object", "chat.completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(r, meta)},
          {"timings", timings_json(task, meta)}};
}

json chunk_json(const ResponseMeta& meta, int index, json delta, json logprobs, const char* finish) {
  return {{"id", meta.id},
          {"object", "chat.completion.chunk"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array({{{"index", index},
                                     {"delta", std::move(delta)},
                                     {"logprobs", std::move(logprobs)},
                                     {"finish_reason", finish ? json(finish) : json(nullptr)}}})}};
}

json usage_chunk_json(const Task& task, const ResponseMeta& meta) {
  return {{"id", meta.id},           {"object", "chat.completion.chunk"},
          {"created", meta.created}, {"model", meta.model},
          {"choices", json::array()}, {"usage", usage_json(task.result(), meta)},
          {"timings", timings_json(task, meta)}};
}

}  // namespace qvl
