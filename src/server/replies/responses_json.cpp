#include "server/replies/responses_json.h"

#include <string_view>

namespace qvl {

using ojson = nlohmann::ordered_json;

const std::string& OutputIds::call(size_t i) {
  while (calls.size() <= i) calls.push_back("fc_" + make());
  return calls[i];
}

ResponseEnd response_end(const GenerateResult& r) {
  if (r.finish_reason == FinishReason::Length) return {"incomplete", {{"reason", "max_output_tokens"}}};
  if (r.finish_reason == FinishReason::Repetition) return {"incomplete", {{"reason", "repetition"}}};
  return {"completed", nullptr};
}

namespace {

ojson bytes_of(const std::string& s) {
  ojson b = ojson::array();
  for (unsigned char c : s) b.push_back(c);
  return b;
}

}  // namespace

ojson output_text_json(const std::string& text, const std::vector<TokenLogprob>* logprobs, const TokenText& token_text) {
  ojson part = {{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}};
  if (logprobs && token_text) {
    ojson lp = ojson::array();
    for (const TokenLogprob& t : *logprobs) {
      const std::string s = token_text(t.token);
      ojson top = ojson::array();
      for (const auto& [id, p] : t.top) {
        const std::string ts = token_text(id);
        top.push_back({{"token", ts}, {"logprob", p}, {"bytes", bytes_of(ts)}});
      }
      lp.push_back({{"token", s}, {"logprob", t.logprob}, {"bytes", bytes_of(s)}, {"top_logprobs", std::move(top)}});
    }
    part["logprobs"] = std::move(lp);
  }
  return part;
}

ojson message_item_json(const std::string& id, const char* status, ojson content) {
  return {{"type", "message"}, {"id", id}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}

ojson function_call_item_json(const std::string& id, const ToolCall& call, const char* status) {
  return {{"type", "function_call"}, {"id", id},     {"call_id", call.id}, {"name", call.name},
          {"arguments", call.arguments},  {"status", status}};
}

ojson reasoning_item_json(const std::string& id, const std::string& text, const char* status) {
  return {{"type", "reasoning"},
          {"id", id},
          {"summary", ojson::array()},
          {"content", ojson::array({{{"type", "reasoning_text"}, {"text", text}}})},
          {"status", status}};
}

ojson output_json(const GenerateResult& r, OutputIds& ids, bool logprobs, const TokenText& token_text) {
  const char* status = response_end(r).status;
  ojson out = ojson::array();
  // The reasoning is complete once a reply follows it; else it ended as the
  // answer did. None (as streamed): no item.
  if (r.reasoning && !r.reasoning->empty())
    out.push_back(reasoning_item_json(ids.reasoning, *r.reasoning,
                                      r.text.empty() && r.tool_calls.empty() ? status : "completed"));
  if (!r.text.empty() || r.tool_calls.empty()) {
    // With calls the logprobs cover the whole answer, blocks included: they
    // belong to no one part, so they are left out.
    const bool lp = logprobs && r.tool_calls.empty();
    out.push_back(message_item_json(ids.message, status,
                                    ojson::array({output_text_json(r.text, lp ? &r.logprobs : nullptr, token_text)})));
  }
  for (size_t i = 0; i < r.tool_calls.size(); ++i) {
    // An answer cut by the token limit inside its last call leaves that
    // call's arguments unfinished: it is incomplete, as the stream says.
    const bool cut = i + 1 == r.tool_calls.size() && std::string_view(status) == "incomplete" &&
                     !nlohmann::json::accept(r.tool_calls[i].arguments);
    out.push_back(function_call_item_json(ids.call(i), r.tool_calls[i], cut ? "incomplete" : "completed"));
  }
  return out;
}

ojson responses_usage_json(const GenerateResult& r) {
  return {{"input_tokens", r.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", r.cached_tokens}}},
          {"output_tokens", r.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", r.reasoning_tokens}}},
          {"total_tokens", r.prompt_tokens + r.completion_tokens}};
}

std::string output_text_of(const ojson& output) {
  std::string text;
  for (const ojson& item : output) {
    if (item.value("type", "") != "message") continue;
    for (const ojson& part : item.value("content", ojson::array()))
      if (part.value("type", "") == "output_text") text += part.value("text", "");
  }
  return text;
}

ojson response_json(const ResponsesMeta& meta, const char* status, ojson output, ojson usage, ojson incomplete_details,
                    ojson error) {
  ojson r = {{"id", meta.id},
             {"object", "response"},
             {"created_at", meta.created_at},
             {"status", status},
             {"background", false},
             {"error", std::move(error)},
             {"incomplete_details", std::move(incomplete_details)}};
  const ojson& e = meta.echo;
  auto echo = [&](const char* k) { r[k] = e.contains(k) ? e[k] : ojson(nullptr); };
  echo("instructions");
  echo("max_output_tokens");
  r["model"] = meta.model;
  r["output_text"] = output_text_of(output);
  r["output"] = std::move(output);
  for (const char* k : {"parallel_tool_calls", "previous_response_id", "reasoning", "store", "temperature", "text",
                        "tool_choice", "tools", "top_logprobs", "top_p", "truncation"})
    echo(k);
  r["usage"] = std::move(usage);
  echo("user");
  echo("metadata");
  return r;
}

std::string dump_ordered(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::string sse_event(const ojson& event) {
  return "event: " + event.value("type", std::string("message")) + "\ndata: " + dump_ordered(event) + "\n\n";
}

}  // namespace qvl
