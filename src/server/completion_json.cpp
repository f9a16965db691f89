#include "server/completion_json.h"

namespace qvl {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

const char* finish_reason(const GenerateResult& r) {
  if (r.finish_reason == "stop") return "stop";
  if (r.finish_reason == "repetition") return "repetition";  // qvl's: the answer fell into a loop
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

json completion_json(const Task& task, const ResponseMeta& meta) {
  const GenerateResult& r = task.result();
  return {{"id", meta.id},
          {"object", "chat.completion"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices",
           json::array({{{"index", 0},
                         {"message", {{"role", "assistant"}, {"content", r.text}}},
                         {"logprobs", nullptr},
                         {"finish_reason", finish_reason(r)}}})},
          {"usage", usage_json(r, meta)},
          {"timings", timings_json(task, meta)}};
}

json chunk_json(const ResponseMeta& meta, json delta, const char* finish) {
  return {{"id", meta.id},
          {"object", "chat.completion.chunk"},
          {"created", meta.created},
          {"model", meta.model},
          {"choices", json::array({{{"index", 0},
                                     {"delta", std::move(delta)},
                                     {"logprobs", nullptr},
                                     {"finish_reason", finish ? json(finish) : json(nullptr)}}})}};
}

json usage_chunk_json(const Task& task, const ResponseMeta& meta) {
  return {{"id", meta.id},           {"object", "chat.completion.chunk"},
          {"created", meta.created}, {"model", meta.model},
          {"choices", json::array()}, {"usage", usage_json(task.result(), meta)},
          {"timings", timings_json(task, meta)}};
}

}  // namespace qvl
