// POST /v1/chat/completions: validate, decode images and count the prompt on
// the request's thread; queue; then answer in one JSON object or as an SSE
// stream. A client that goes away cancels its task.
//
// A stream carries each choice's pieces as OpenAI does: a first chunk per
// choice with the role, then (a Thinking model's) delta.reasoning_content
// until "</think>", as vLLM and llama.cpp stream it, then content (and, with tools, delta.tool_calls as a
// ToolCallParser splits the raw text: the call's id and name once, then its
// arguments piece by piece), each chunk with the logprobs of the tokens it
// holds, then each choice's finish reason, the usage chunk if asked, [DONE].
#include <algorithm>
#include <optional>

#include "engine/reasoning.h"
#include "engine/tool_calls.h"
#include "server/media/chat_media.h"
#include "server/server_core.h"
#include "server/routes/stream_pump.h"
#include "util/error.h"

namespace qvl {

using json = nlohmann::json;

namespace {

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

// One choice of a stream: its reasoning splitter (a Thinking model's), its
// tool-call parser (when the model may call tools) and the logprobs of
// tokens that showed no text yet.
struct ChoiceStream {
  std::optional<ReasoningSplitter> splitter;
  std::optional<ToolCallParser> parser;
  json logprobs = json::array();
};

// The delta objects one poll makes for one choice: consecutive content, and
// consecutive argument pieces of one call, are merged into one chunk.
struct ChoiceChunks {
  std::vector<json> deltas;

  // Text under `key` ("content", "reasoning_content"), merged into the last delta if it is one of those.
  void text(const char* key, const std::string& text) {
    if (text.empty()) return;
    if (!deltas.empty() && deltas.back().contains(key)) {
      deltas.back()[key] = deltas.back()[key].get<std::string>() + text;
      return;
    }
    deltas.push_back({{key, text}});
  }
  void reasoning(const std::string& t) { text("reasoning_content", t); }
  void content(const std::string& t) { text("content", t); }
  void call_begin(int index, const std::string& id, const std::string& name) {
    deltas.push_back({{"tool_calls", json::array({{{"index", index},
                                                   {"id", id},
                                                   {"type", "function"},
                                                   {"function", {{"name", name}, {"arguments", ""}}}}})}});
  }
  void call_arguments(int index, const std::string& piece) {
    if (piece.empty()) return;
    if (!deltas.empty() && deltas.back().contains("tool_calls")) {
      json& call = deltas.back()["tool_calls"][0];
      if (call["index"] == index && !call.contains("id")) {
        call["function"]["arguments"] = call["function"]["arguments"].get<std::string>() + piece;
        return;
      }
    }
    deltas.push_back({{"tool_calls", json::array({{{"index", index}, {"function", {{"arguments", piece}}}}})}});
  }
  void events(const std::vector<ToolCallParser::Event>& evs) {
    for (const ToolCallParser::Event& e : evs) {
      switch (e.kind) {
        case ToolCallParser::Event::Kind::Content: content(e.text); break;
        case ToolCallParser::Event::Kind::CallBegin: call_begin(e.index, e.id, e.text); break;
        case ToolCallParser::Event::Kind::CallArguments: call_arguments(e.index, e.text); break;
      }
    }
  }
  // The reply's text (after a Thinking model's reasoning): content, or the
  // tool-call parser's events.
  void after_reasoning(ChoiceStream& cs, const std::string& text) {
    if (cs.parser) events(cs.parser->push(text));
    else content(text);
  }
  // A piece of the raw answer: reasoning, then the reply.
  void piece(ChoiceStream& cs, const std::string& text) {
    if (!cs.splitter) return after_reasoning(cs, text);
    ReasoningSplitter::Pieces p = cs.splitter->push(text);
    reasoning(p.reasoning);
    after_reasoning(cs, p.content);
  }
  void finish(ChoiceStream& cs) {
    if (cs.splitter) {
      ReasoningSplitter::Pieces p = cs.splitter->finish();
      reasoning(p.reasoning);
      after_reasoning(cs, p.content);
    }
    if (cs.parser) events(cs.parser->finish());
  }
};

// The chunks of one chat completion's stream (StreamPump writes them).
class ChatStream : public StreamEvents {
 public:
  ChatStream(ResponseMeta meta, int n, bool may_call, bool thinking, bool include_usage, bool logprobs,
             std::function<ApiError(const Task&)> error)
      : meta_(std::move(meta)), include_usage_(include_usage), logprobs_(logprobs), choices_(n), error_(std::move(error)) {
    for (ChoiceStream& cs : choices_) {
      if (may_call) cs.parser.emplace();
      if (thinking) cs.splitter.emplace();
    }
  }

  std::string opening() override {
    std::string first;
    for (size_t i = 0; i < choices_.size(); ++i)
      first += sse(chunk_json(meta_, static_cast<int>(i), {{"role", "assistant"}, {"content", ""}}));
    return first;
  }

  std::string pieces(std::vector<TaskDelta> deltas, bool last) override {
    std::string out;
    std::vector<ChoiceChunks> chunks(choices_.size());
    for (const TaskDelta& d : deltas) {
      if (d.choice < 0 || d.choice >= static_cast<int>(choices_.size())) continue;
      ChoiceStream& cs = choices_[d.choice];
      chunks[d.choice].piece(cs, d.text);
      if (logprobs_ && d.logprob) cs.logprobs.push_back(logprob_json(*d.logprob, *meta_.tokenizer));
    }
    if (last)  // what a splitter or parser held back (a block that never closed is content)
      for (size_t i = 0; i < choices_.size(); ++i) chunks[i].finish(choices_[i]);
    for (size_t i = 0; i < choices_.size(); ++i) {
      ChoiceStream& cs = choices_[i];
      for (json& delta : chunks[i].deltas) {
        json lp = nullptr;
        if (logprobs_ && !cs.logprobs.empty()) {
          lp = {{"content", std::move(cs.logprobs)}, {"refusal", nullptr}};
          cs.logprobs = json::array();
        }
        out += sse(chunk_json(meta_, static_cast<int>(i), std::move(delta), std::move(lp)));
      }
    }
    return out;
  }

  std::string closing(const Task& t) override {
    std::string tail;
    if (t.outcome() == TaskOutcome::Succeeded) {
      const GenerateResult& r = t.result();
      for (size_t i = 0; i < choices_.size() && i < r.choices(); ++i) {
        ChoiceStream& cs = choices_[i];
        // Tokens that showed no text (a held-back stop string's) keep their logprobs here.
        json lp = nullptr;
        if (logprobs_ && !cs.logprobs.empty()) lp = {{"content", std::move(cs.logprobs)}, {"refusal", nullptr}};
        tail += sse(chunk_json(meta_, static_cast<int>(i), json::object(), std::move(lp), finish_reason(r.choice(i))));
      }
      if (include_usage_) tail += sse(usage_chunk_json(t, meta_));
    } else {
      tail = sse(error_(t).to_json());
    }
    return tail + "data: [DONE]\n\n";
  }

 private:
  ResponseMeta meta_;
  bool include_usage_ = false;
  bool logprobs_ = false;
  std::vector<ChoiceStream> choices_;
  std::function<ApiError(const Task&)> error_;  // what a task that did not succeed reports
};

}  // namespace

ChatRequest ServerCore::prepare_chat(const HttpRequest& req, std::string_view raw_body, int64_t& prompt_tokens,
                                     int64_t& image_tokens) {
  return prepare_chat(parse_body(req, raw_body), prompt_tokens, image_tokens);
}

ChatRequest ServerCore::prepare_chat(const nlohmann::ordered_json& body, int64_t& prompt_tokens,
                                     int64_t& image_tokens) {
  require_task(ModelTask::Chat);  // an embedding or reranker deployment generates nothing
  ChatRequest cr = parse_chat_request(body, chat_limits);
  take_chat_media(cr, chat_limits, &memory_admission);
  check_chat(cr, prompt_tokens, image_tokens);
  return cr;
}

void ServerCore::check_chat(const ChatRequest& cr, int64_t& prompt_tokens, int64_t& image_tokens) {
  // What the engine must enforce (schemas, tools, logit_bias ids) compiles
  // here, so a schema it cannot honour is the client's 400, not a failed task.
  try {
    engine->validate(cr.generate);
  } catch (const FieldError& e) {
    throw ApiError(400, "unsupported_value", e.what(), e.field());
  } catch (const Error& e) {
    throw ApiError(400, "invalid_value", e.what());
  }
  PromptSize size;
  try {
    size = engine->prompt_size(cr.generate);  // the template lists the tools
  } catch (const Error& e) {
    // The template or the image processor refused this conversation (e.g. an
    // extreme aspect ratio): the client's input, so 400.
    throw ApiError(400, "invalid_prompt", e.what(), "messages");
  }
  prompt_tokens = size.tokens;
  image_tokens = size.image_tokens;
  const int64_t ctx = engine->slot_ctx();
  if (prompt_tokens >= ctx)
    throw ApiError(400, "context_length_exceeded",
                   cat("the prompt is ", prompt_tokens, " tokens (", image_tokens, " of them image tokens) but the context "
                       "holds ", ctx, " tokens", engine->slots() > 1 ? " per slot" : "",
                       "; send fewer or smaller images, or a shorter conversation"),
                   "messages");
  // The other choices' KV caches (Engine::choices_kv_bytes) come out of the same budget as images.
  if (const uint64_t kv = engine->choices_kv_bytes(cr.generate, prompt_tokens), room = memory_admission.media_budget();
      kv > room)
    throw ApiError(413, "request_too_large",
                   cat("the KV caches of the ", cr.generate.n - 1, " choices after the first need up to ", kv,
                       " bytes, over the server's memory budget for requests of ", room, " bytes (", mebibytes(room),
                       ": what --memory-budget leaves beside the KV caches); ask for fewer choices or a lower max_tokens"),
                   "n");
}

void ServerCore::submit(const std::shared_ptr<Task>& task) {
  switch (scheduler->submit(task)) {
    case Scheduler::Refusal::None:
      return;
    case Scheduler::Refusal::QueueFull: {
      ApiError e(429, "queue_full",
                 cat("the server is busy: all ", scheduler->stats().parallel, " slots and ", options.scheduler.queue_size,
                     " queue places are taken; retry later"));
      throw e;
    }
    case Scheduler::Refusal::ShuttingDown:
      throw ApiError(503, "shutting_down", "the server is shutting down");
  }
}

void ServerCore::on_task_done(const Task& t, const ResponseMeta& meta, const std::shared_ptr<RequestRecord>& rec) {
  const GenerateResult& r = t.result();
  const bool ran = t.outcome() == TaskOutcome::Succeeded || r.prompt_tokens > 0;
  Metrics::Generation g;
  g.queue_s = t.queue_ms() / 1e3;
  g.image_s = (meta.image_ms + r.timings.preprocess_ms) / 1e3;
  g.vision_s = r.timings.vision_ms / 1e3;
  g.prefill_s = r.timings.prefill_ms / 1e3;
  g.decode_s = r.timings.decode_ms / 1e3;
  g.first_token_s = r.timings.first_token_ms / 1e3;
  g.prompt_tokens = r.prompt_tokens;
  g.cached_tokens = r.cached_tokens;
  g.completion_tokens = r.completion_tokens;
  g.outcome = outcome_name(t.outcome());
  g.ran = ran;
  metrics.generation(g);
  if (!rec) return;
  std::lock_guard lock(rec->mutex);
  rec->fields["outcome"] = g.outcome;
  rec->fields["prompt_tokens"] = r.prompt_tokens;
  rec->fields["cached_tokens"] = r.cached_tokens;
  rec->fields["completion_tokens"] = r.completion_tokens;
  rec->fields["queue_ms"] = t.queue_ms();
  rec->fields["image_ms"] = meta.image_ms + r.timings.preprocess_ms;
  rec->fields["vision_ms"] = r.timings.vision_ms;
  if (r.timings.image_cache_hits > 0) rec->fields["image_cache_hits"] = r.timings.image_cache_hits;
  rec->fields["prefill_ms"] = r.timings.prefill_ms;
  rec->fields["decode_tok_s"] = r.timings.decode_tok_s();
  if (t.outcome() == TaskOutcome::Failed) rec->fields["error"] = t.error();
}

ApiError ServerCore::task_error(const Task& t, const std::string& request_id) const {
  switch (t.outcome()) {
    case TaskOutcome::TimedOut:
      return ApiError(504, "timeout",
                      cat("the request did not finish within the server's ", options.scheduler.timeout_s,
                          " s timeout (--timeout)"));
    case TaskOutcome::Shutdown:
      return ApiError(503, "shutting_down", "the server shut down before the request finished");
    case TaskOutcome::Cancelled:
      return ApiError(499, "cancelled", "the request was cancelled");
    default:
      // The engine's message may name files; it goes to the log, not the client.
      return ApiError(500, "generation_failed", "generation failed (request " + request_id + ")");
  }
}

void ServerCore::register_chat_routes(HttpRouter& router) {
  router.post("/v1/chat/completions", [this](HttpRequest& req, HttpResponse& res) {
    auto rec = record(req);
    try {
      int64_t prompt_tokens = 0, image_tokens = 0;
      ChatRequest cr = prepare_chat(req, req.body, prompt_tokens, image_tokens);
      ResponseMeta meta{"chatcmpl-" + new_request_id() + new_request_id(), unix_now(),
                        model_name, cr.media_ms, image_tokens, &engine->tokenizer()};
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["stream"] = cr.stream;
        rec->fields["images"] = cr.media;
        if (cr.generate.n > 1) rec->fields["n"] = cr.generate.n;
        if (!cr.generate.tools.empty()) rec->fields["tools"] = cr.generate.tools.size();
      }
      const GenerateRequest& g = cr.generate;
      const bool may_call = !g.tools.empty() && g.tool_choice != ToolChoice::None;
      const int n = g.n;
      auto task = std::make_shared<Task>(std::move(cr.generate), cr.stream);
      task->set_on_done([this, meta, rec](const Task& t) { on_task_done(t, meta, rec); });
      submit(task);

      if (!cr.stream) {
        await_answer(*task, req);
        if (task->outcome() == TaskOutcome::Succeeded) reply_json(res, 200, completion_json(*task, meta));
        else reply_error(res, task_error(*task, rec->id));
        return;
      }

      auto events = std::make_unique<ChatStream>(meta, n, may_call, engine->info().thinking, cr.include_usage,
                                                 cr.logprobs && meta.tokenizer,
                                                 [this, id = rec->id](const Task& t) { return task_error(t, id); });
      StreamPump::serve(res, std::make_shared<StreamPump>(task, std::move(events), req.client_gone));
    } catch (const ApiError& e) {
      refuse(res, *rec, e);
    }
  });
}

}  // namespace qvl
