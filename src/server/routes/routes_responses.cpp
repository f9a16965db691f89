// POST /v1/responses (OpenAI's Responses API) on the chat-completions path:
// the body is read into the chat route's request (responses_request.h),
// checked, queued and run exactly like POST /v1/chat/completions, then answered as a
// Response object or as the Responses stream of typed events. GET and DELETE
// /v1/responses/{id} read and drop the responses kept for
// previous_response_id (response_store.h).
#include <optional>

#include "engine/reasoning.h"
#include "engine/tool_calls.h"
#include "server/media/chat_media.h"
#include "server/jobs/response_store.h"
#include "server/replies/responses_json.h"
#include "server/requests/responses_request.h"
#include "server/server_core.h"
#include "server/routes/stream_pump.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace qvl {

using ojson = nlohmann::ordered_json;

namespace {

// The store entry of a finished response: the conversation it ends.
ResponseStore::Entry store_entry(const ResponsesMeta& meta, const ojson& items, const ojson& response) {
  ResponseStore::Entry e;
  e.id = meta.id;
  e.items = items;
  for (const ojson& item : response["output"]) e.items.push_back(item);
  e.response = response;
  return e;
}

// Keeps a finished response for previous_response_id. A store that went
// away (or failed) while it was generated loses the entry (the request's
// log says so), not the answer already made; a stream's writer, which calls
// this, has no handler around it to catch anything.
void keep_response(ResponseStore& store, ResponseStore::Entry e, RequestRecord& rec) {
  try {
    store.put(std::move(e));
  } catch (const std::exception& u) {
    std::lock_guard lock(rec.mutex);
    rec.fields["store_error"] = u.what();
  }
}

// The Responses event stream of one answer. The task's text is the model's
// raw answer: a Thinking model's reasoning (ReasoningSplitter) becomes a
// reasoning item's reasoning_text deltas; the rest, with tools through
// ToolCallParser, a message item's output_text deltas and each <tool_call>
// block a function_call item whose arguments stream as they are written.
struct ResponsesStream : StreamEvents {
  ResponsesMeta meta;
  ojson items;  // the request's conversation, for the store
  bool keep = true;
  bool parse_calls = false;
  std::shared_ptr<RequestRecord> rec;
  std::function<ApiError(const Task&)> error;  // what a task that did not succeed reports
  ResponseStore* store = nullptr;  // the job store's (outlives every request)
  OutputIds ids;
  std::optional<ReasoningSplitter> splitter;  // a Thinking model's
  ToolCallParser parser;

  int64_t sequence = 0;
  std::string pending;             // events not written yet
  ojson output = ojson::array();   // the items so far, as streamed
  enum class Open { None, Reasoning, Message, Call } open = Open::None;
  size_t messages = 0, calls = 0;  // items of each kind opened

  void event(ojson e) {
    e["sequence_number"] = sequence++;
    pending += sse_event(e);
  }
  ojson& item() { return output.back(); }
  int index() const { return static_cast<int>(output.size()) - 1; }

  void open_message() {
    close(/*status=*/"completed");
    const std::string id = messages++ == 0 ? ids.message : "msg_" + ids.make();
    output.push_back(message_item_json(id, "in_progress", ojson::array()));
    open = Open::Message;
    event({{"type", "response.output_item.added"}, {"output_index", index()}, {"item", item()}});
    item()["content"].push_back(output_text_json(""));
    event({{"type", "response.content_part.added"}, {"item_id", id}, {"output_index", index()}, {"content_index", 0},
           {"part", item()["content"][0]}});
  }

  void reasoning(const std::string& t) {
    if (t.empty()) return;
    if (open != Open::Reasoning) {
      close("completed");
      output.push_back(reasoning_item_json(ids.reasoning, "", "in_progress"));
      open = Open::Reasoning;
      event({{"type", "response.output_item.added"}, {"output_index", index()}, {"item", item()}});
    }
    item()["content"][0]["text"].get_ref<std::string&>() += t;
    event({{"type", "response.reasoning_text.delta"}, {"item_id", item()["id"]}, {"output_index", index()},
           {"content_index", 0}, {"delta", t}});
  }

  void text(const std::string& t) {
    if (t.empty()) return;
    // The "\n" between and after call blocks is no message of its own.
    if (open != Open::Message && calls > 0 && t.find_first_not_of(" \t\r\n") == std::string::npos) return;
    if (open != Open::Message) open_message();
    item()["content"][0]["text"].get_ref<std::string&>() += t;
    event({{"type", "response.output_text.delta"}, {"item_id", item()["id"]}, {"output_index", index()},
           {"content_index", 0}, {"delta", t}, {"logprobs", ojson::array()}});
  }

  void call_begin(const std::string& name, const std::string& call_id) {
    close("completed");
    ToolCall call{call_id, name, ""};
    output.push_back(function_call_item_json(ids.call(calls++), call, "in_progress"));
    open = Open::Call;
    event({{"type", "response.output_item.added"}, {"output_index", index()}, {"item", item()}});
  }

  void call_arguments(const std::string& piece) {
    if (open != Open::Call || piece.empty()) return;
    item()["arguments"].get_ref<std::string&>() += piece;
    event({{"type", "response.function_call_arguments.delta"}, {"item_id", item()["id"]}, {"output_index", index()},
           {"delta", piece}});
  }

  // Ends the open item with `status`.
  void close(const char* status) {
    if (open == Open::Reasoning) {
      event({{"type", "response.reasoning_text.done"}, {"item_id", item()["id"]}, {"output_index", index()},
             {"content_index", 0}, {"text", item()["content"][0]["text"]}});
    } else if (open == Open::Message) {
      ojson& part = item()["content"][0];
      event({{"type", "response.output_text.done"}, {"item_id", item()["id"]}, {"output_index", index()},
             {"content_index", 0}, {"text", part["text"]}, {"logprobs", ojson::array()}});
      event({{"type", "response.content_part.done"}, {"item_id", item()["id"]}, {"output_index", index()},
             {"content_index", 0}, {"part", part}});
    } else if (open == Open::Call) {
      event({{"type", "response.function_call_arguments.done"}, {"item_id", item()["id"]}, {"output_index", index()},
             {"name", item()["name"]}, {"arguments", item()["arguments"]}});
    } else {
      return;
    }
    item()["status"] = status;
    event({{"type", "response.output_item.done"}, {"output_index", index()}, {"item", item()}});
    open = Open::None;
  }

  void on_events(const std::vector<ToolCallParser::Event>& events) {
    for (const ToolCallParser::Event& e : events) {
      switch (e.kind) {
        case ToolCallParser::Event::Kind::Content: text(e.text); break;
        case ToolCallParser::Event::Kind::CallBegin: call_begin(e.text, e.id); break;
        case ToolCallParser::Event::Kind::CallArguments: call_arguments(e.text); break;
      }
    }
  }

  void reply(const std::string& t) {
    if (parse_calls) on_events(parser.push(t));
    else text(t);
  }

  void push(const std::string& t) {
    if (!splitter) return reply(t);
    ReasoningSplitter::Pieces p = splitter->push(t);
    reasoning(p.reasoning);
    reply(p.content);
  }

  // The answer is complete: close what is open, add what the stream did not
  // show (calls the parser could not see), and the final Response.
  void finish(const GenerateResult& r) {
    if (splitter) {
      ReasoningSplitter::Pieces p = splitter->finish();
      reasoning(p.reasoning);
      reply(p.content);
    }
    if (parse_calls) on_events(parser.finish());
    const ResponseEnd end = response_end(r);
    // A call cut short by max_output_tokens is not among the result's calls.
    const bool cut = open == Open::Call && calls > r.tool_calls.size();
    close(cut ? "incomplete" : end.status);
    for (size_t i = calls; i < r.tool_calls.size(); ++i) {
      call_begin(r.tool_calls[i].name, r.tool_calls[i].id);
      call_arguments(r.tool_calls[i].arguments);
      close("completed");
    }
    if (messages == 0 && calls == 0) open_message();  // an empty answer is an empty message, as unstreamed
    close(end.status);
    for (ojson& it : output)
      if (it["type"] == "message") it["status"] = end.status;
    ojson response = response_json(meta, end.status, output, responses_usage_json(r), end.incomplete_details);
    event({{"type", end.incomplete_details.is_null() ? "response.completed" : "response.incomplete"},
           {"response", response}});
    if (keep) keep_response(*store, store_entry(meta, items, response), *rec);
  }

  void fail(const ApiError& e) {
    close("incomplete");
    ojson response = response_json(meta, "failed", output, nullptr, nullptr, {{"code", e.code()}, {"message", e.what()}});
    event({{"type", "response.failed"}, {"response", response}});
  }

  // StreamEvents: the events queued since the previous call.
  std::string opening() override {
    const ojson r = response_json(meta, "in_progress", ojson::array());
    event({{"type", "response.created"}, {"response", r}});
    event({{"type", "response.in_progress"}, {"response", r}});
    return std::exchange(pending, {});
  }
  std::string pieces(std::vector<TaskDelta> deltas, bool /*last: finish() empties the splitter and parser*/) override {
    std::string text;
    for (const TaskDelta& d : deltas)
      if (d.choice == 0) text += d.text;
    push(text);
    return std::exchange(pending, {});
  }
  std::string closing(const Task& t) override {
    if (t.outcome() == TaskOutcome::Succeeded) finish(t.result());
    else fail(error(t));
    return std::exchange(pending, {});
  }
};

}  // namespace

void ServerCore::register_responses_routes(HttpRouter& router) {
  ResponseStore* store = &jobs->responses();

  router.post("/v1/responses", [this, store](HttpRequest& req, HttpResponse& res) {
    auto rec = record(req);
    try {
      const ojson body = parse_body(req);
      require_task(ModelTask::Chat);  // an embedding or reranker deployment generates nothing
      ResponsesRequest rr = parse_responses_request(body, *store, chat_limits);
      try {
        take_chat_media(rr.chat, chat_limits, &memory_admission);
      } catch (const ApiError& e) {
        throw responses_error(e);  // a refusal of the request's media as a whole names "messages"
      }
      // An answer to keep (store, OpenAI's default) waits for the store; store: false is answered now.
      if (std::string why = jobs->unavailable(); rr.store && !why.empty()) throw StoreUnavailable(why);
      int64_t prompt_tokens = 0, image_tokens = 0;
      ChatRequest& cr = rr.chat;
      try {
        check_chat(cr, prompt_tokens, image_tokens);  // the chat route's checks of what the engine runs
      } catch (const ApiError& e) {
        throw responses_error(e);
      }
      const std::string id = "resp_" + new_request_id() + new_request_id();
      const ResponseMeta chat_meta{id, unix_now(), model_name, cr.media_ms, image_tokens};
      ResponsesMeta meta{id, chat_meta.created, model_name, rr.echo};
      {
        std::lock_guard lock(rec->mutex);
        rec->fields["stream"] = rr.stream;
        rec->fields["images"] = cr.media;
      }
      const bool parse_calls = !cr.generate.tools.empty();
      auto task = std::make_shared<Task>(std::move(cr.generate), /*stream_deltas=*/rr.stream);
      task->set_on_done([this, chat_meta, rec](const Task& t) { on_task_done(t, chat_meta, rec); });
      submit(task);
      auto make_id = [this] { return new_request_id() + new_request_id(); };

      if (!rr.stream) {
        await_answer(*task, req);
        if (task->outcome() != TaskOutcome::Succeeded) {
          reply_error(res, task_error(*task, rec->id));
          return;
        }
        const GenerateResult& r = task->result();
        OutputIds ids{make_id, "msg_" + make_id(), "rs_" + make_id(), {}};
        const Tokenizer& tok = engine->tokenizer();
        TokenText token_text = [&tok](int32_t t) { return tok.decode(std::span<const int32_t>(&t, 1)); };
        const ResponseEnd end = response_end(r);
        ojson response = response_json(meta, end.status, output_json(r, ids, rr.output_logprobs, token_text),
                                       responses_usage_json(r), end.incomplete_details);
        if (rr.store) keep_response(*store, store_entry(meta, rr.items, response), *rec);
        res.status = 200;
        res.set_content(dump_ordered(response), "application/json");
        return;
      }

      auto st = std::make_unique<ResponsesStream>();
      st->meta = std::move(meta);
      st->items = std::move(rr.items);
      st->keep = rr.store;
      st->parse_calls = parse_calls;
      st->rec = rec;
      st->error = [this, id = rec->id](const Task& t) { return task_error(t, id); };
      st->store = store;
      st->ids = OutputIds{make_id, "msg_" + make_id(), "rs_" + make_id(), {}};
      if (engine->info().thinking) st->splitter.emplace();
      StreamPump::serve(res, std::make_shared<StreamPump>(task, std::move(st), req.client_gone));
    } catch (const ApiError& e) {
      refuse(res, *rec, e);
    }
  });

  const std::string path = R"(/v1/responses/([A-Za-z0-9_]+))";
  auto not_found = [](HttpResponse& res, const std::string& id) {
    reply_error(res, ApiError(404, "not_found",
                              cat("no stored response has id '", id.substr(0, 80),
                                  "' (the server keeps its last ", ResponseStore::kMaxEntries, " responses)"),
                              "response_id"));
  };
  router.get("/v1/responses/{id}", path, [store, not_found](HttpRequest& req, HttpResponse& res) {
    auto e = store->get(req.matches[1]);
    if (!e) return not_found(res, req.matches[1]);
    res.status = 200;
    res.set_content(dump_ordered(e->response), "application/json");
  });
  router.del("/v1/responses/{id}", path, [store, not_found](HttpRequest& req, HttpResponse& res) {
    if (!store->erase(req.matches[1])) return not_found(res, req.matches[1]);
    reply_json(res, 200, {{"id", req.matches[1]}, {"object", "response.deleted"}, {"deleted", true}});
  });
}

}  // namespace qvl
