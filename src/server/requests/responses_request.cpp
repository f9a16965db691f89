#include "server/requests/responses_request.h"

#include <algorithm>
#include <optional>
#include <set>

#include "server/requests/chat_parts.h"
#include "server/requests/request_fields.h"
#include "util/error.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;

// "'param' why", code unsupported_parameter.
[[noreturn]] void unsupported(const RequestField& f, const std::string& why) {
  f.unsupported(cat("'", f.path(), "' ", why));
}

// Fields that mean the same on both routes: the Responses ones, and qvl's
// chat extensions (sampling, image area, the repetition guard), read by the
// chat parser's pieces (chat_parts.h).
const char* const kSameFields[] = {"model", "temperature", "top_p", "parallel_tool_calls",
                                   "seed", "top_k", "min_p", "repetition_penalty",
                                   "presence_penalty", "frequency_penalty", "stop", "min_pixels",
                                   "max_pixels", "repetition_guard", "repetition_guard_repeats",
                                   "reasoning_budget", "mm_processor_kwargs", "ignore_eos"};
// Fields that change nothing here (billing, caching and routing hints of
// OpenAI's service, or accepted and echoed).
const char* const kHarmless[] = {"service_tier", "prompt_cache_key", "prompt_cache_retention", "safety_identifier",
                                 "stream_options", "user", "store"};

// The conversation's items, read into the request's messages in order.
struct Conversation {
  PartParser& parts;
  ToolTurns turns;
  bool open_calls = false;  // the last message is an assistant message that function_call items may extend
  // A reasoning item's text, for the assistant message that follows it (a
  // Thinking model's template renders it as its reasoning_content).
  std::optional<std::string> reasoning;

  std::vector<Message>& messages() { return parts.out.generate.messages; }

  void add(Message m) {
    if (m.role == "assistant" && reasoning) m.reasoning = std::move(*reasoning);
    reasoning.reset();
    messages().push_back(std::move(m));
    open_calls = false;
  }

  // Content parts of a message or a function_call_output; `media`: a user
  // message's, which may hold images, PDFs and videos.
  std::vector<MessagePart> content(const RequestField& c, bool media) {
    return parts.content(c, [&](const RequestField& part, const RequestField& type, size_t index) -> MessagePart {
      const std::string& t = type.string();
      if (t == "input_text" || t == "output_text" || t == "refusal")
        return {parts.text(part.at(t == "refusal" ? "refusal" : "text")), nullptr};
      if (t == "input_image" && media) {
        if (part.has("file_id") && !part.has("image_url"))
          unsupported(part.at("file_id"), "is not supported (qvl has no file store); send 'image_url' with a data: URI or a URL");
        part.optional_string("detail");  // the server's pixel range decides
        return parts.image_url(part.at("image_url"), index);
      }
      if (t == "input_file" && media) return parts.file(part, index, true);  // a PDF: the part holds the file's fields
      // Responses has no video part of its own: chat's two kinds (vLLM's
      // video_url, Qwen's video) as they are.
      if ((t == "video_url" || t == "video") && media) return parts.video(part, index);
      type.refuse(cat("unsupported content part type '", t, "' (",
                      media ? "input_text, input_image, input_file, video_url and video are" : "input_text and output_text are",
                      " supported here)"));
    });
  }

  void message(const RequestField& it) {
    const RequestField role = it.at("role");
    const std::string& r = role.string();
    if (r != "user" && r != "system" && r != "developer" && r != "assistant")
      role.refuse(cat("unsupported role '", r, "' (user, system, developer and assistant are supported)"));
    const bool assistant = r == "assistant";
    Message m{r == "developer" ? "system" : r, content(it.at("content"), r == "user"), {}};
    if (assistant) turns.assistant();
    else turns.other();
    add(std::move(m));
    open_calls = assistant;
  }

  void function_call(const RequestField& it) {
    ToolCall call{it.string("call_id"), it.string("name"), it.string("arguments")};
    if (!open_calls) {
      add(Message{"assistant", {}, {}});
      turns.assistant();
      open_calls = true;
    }
    turns.call(call.id);
    messages().back().tool_calls.push_back(std::move(call));
  }

  // As a response returned it: its reasoning_text parts (the summary is a
  // rewording, never produced here).
  void reasoning_item(const RequestField& it) {
    std::string text;
    if (const std::optional<RequestField> c = it.find("content")) {
      if (!c->value().is_array()) c->wrong_type("an array of reasoning_text parts");
      for (size_t k = 0; k < c->size(); ++k) {
        const RequestField part = (*c)[k];
        if (part.object().string("type") != "reasoning_text")
          part.at("type").refuse("a reasoning item's content parts must be reasoning_text");
        text += part.string("text");
      }
    }
    reasoning = std::move(text);
    open_calls = false;
  }

  void function_call_output(const RequestField& it) {
    turns.answer(it.at("call_id"), it.path());
    add(Message{"tool", content(it.at("output"), false), {}});
  }

  void item(const RequestField& it) {
    it.object();
    const std::string* type = it.optional_string("type");
    const std::string t = type ? *type : "message";
    if (t == "message") message(it);
    else if (t == "function_call") function_call(it);
    else if (t == "reasoning") reasoning_item(it);
    else if (t == "function_call_output") function_call_output(it);
    else
      it.at("type").refuse(cat("unsupported input item type '", t,
                               "' (message, reasoning, function_call, function_call_output and item_reference are "
                               "supported)"));
  }
};

// `input` as a list of items with their "type", item references replaced
// by the items they name.
ojson input_items(const RequestField& input, const ResponseStore& store) {
  if (input.value().is_string())
    return ojson::array({{{"type", "message"}, {"role", "user"}, {"content", input.value()}}});
  if (!input.value().is_array()) input.wrong_type("a string or an array of items");
  ojson items = ojson::array();
  for (size_t j = 0; j < input.size(); ++j) {
    const RequestField it = input[j];
    const std::optional<RequestField> type = it.object().find("type");
    if (type && type->value() == "item_reference") {
      const RequestField id = it.at("id");
      auto found = store.find_item(id.string());
      if (!found)
        id.refuse(cat("no stored item has id '", id.string(), "' (the server keeps its last responses only)"),
                  "item_not_found");
      items.push_back(std::move(*found));
    } else {
      items.push_back(it.value());
      if (!type && it.has("role")) items.back()["type"] = "message";
    }
  }
  return items;
}

void check_metadata(const RequestField& m) {
  if (m.object().size() > 16) m.refuse("'metadata' holds at most 16 keys");
  for (auto it = m.value().begin(); it != m.value().end(); ++it) {
    const RequestField v(*it, m.path_of(it.key()));
    if (it.key().size() > 64) v.refuse("a metadata key is at most 64 characters");
    if (v.string().size() > 512) v.refuse("a metadata value is at most 512 characters");
  }
}

// text.format -> the response format.
void text_format(const RequestField& text, GenerateRequest& g) {
  for (auto it = text.object().value().begin(); it != text.value().end(); ++it)
    if (it.key() != "format" && it.key() != "verbosity") unsupported(RequestField(*it, text.path_of(it.key())), "is not supported");
  text.optional_string("verbosity");
  const std::optional<RequestField> f = text.find("format");
  if (!f) return;
  const std::string& type = f->object().string("type");
  if (type == "json_object") {
    g.response_format.type = ResponseFormat::Type::JsonObject;
  } else if (type == "json_schema") {
    if (auto name = f->find("name")) function_name(*name);  // else "response"
    g.response_format = json_schema_format(*f);
  } else if (type != "text") {
    f->at("type").refuse(cat("unsupported text format '", type, "' (text, json_object and json_schema are supported)"));
  }
}

// Flat function tools; each one's definition is the chat shape the template
// renders ({"type": "function", "function": {name, description, parameters, strict}}).
void tools(const RequestField& ts, GenerateRequest& g, const ChatLimits& limits) {
  if (static_cast<int>(ts.array().size()) > limits.max_tools) ts.refuse(cat("at most ", limits.max_tools, " tools"));
  for (size_t i = 0; i < ts.size(); ++i) {
    const RequestField t = ts[i];
    const std::string& type = t.object().string("type");
    if (type != "function")
      t.at("type").refuse(cat("tool type '", type, "' is not supported (only 'function': qvl runs no hosted tools)"),
                          "unsupported_value");
    Tool tool = function_tool(t);
    ojson fn = {{"name", tool.name}};
    for (const char* k : {"description", "parameters", "strict"})
      if (auto v = t.find(k)) fn[k] = v->value();
    tool.definition = ojson{{"type", "function"}, {"function", std::move(fn)}}.dump();
    add_tool(g, std::move(tool), t.at("name"));
  }
}

void tool_choice(const RequestField& tc, bool has_tools, GenerateRequest& g) {
  if (tc.value().is_object()) {
    const std::string& type = tc.string("type");
    if (type != "function")
      tc.at("type").refuse(cat("tool_choice type '", type, "' is not supported (\"auto\", \"none\", \"required\" "
                               "or {\"type\": \"function\", \"name\"})"));
    tc.string("name");
  } else if (!tc.value().is_string()) {
    tc.wrong_type("a string or an object");
  }
  if (!has_tools) tc.refuse("'tool_choice' is only allowed when 'tools' are given");
  if (tc.value().is_string()) tool_choice_mode(tc, g);
  else tool_choice_function(tc.at("name"), g);
}

// Every top-level key is one this route reads or accepts; what qvl cannot
// do is refused unless sent as the default.
void check_fields(const RequestField& body) {
  static const std::set<std::string> handled = {
      "input", "instructions", "max_output_tokens", "text", "tools", "tool_choice", "stream", "previous_response_id",
      "metadata", "top_logprobs", "include", "reasoning", "truncation", "background", "max_tool_calls", "conversation",
      "prompt"};
  for (auto it = body.object().value().begin(); it != body.value().end(); ++it) {
    const std::string& k = it.key();
    if (handled.count(k) || std::find(std::begin(kSameFields), std::end(kSameFields), k) != std::end(kSameFields) ||
        std::find(std::begin(kHarmless), std::end(kHarmless), k) != std::end(kHarmless))
      continue;
    unsupported(RequestField(*it, k), "is not a field qvl's /v1/responses supports");
  }
  if (const std::optional<RequestField> r = body.find("reasoning")) {
    for (auto it = r->object().value().begin(); it != r->value().end(); ++it)
      if (!it->is_null() && !(it.key() == "effort" && *it == "none"))
        unsupported(RequestField(*it, r->path_of(it.key())),
                    "is not supported: a Thinking model always reasons; 'reasoning_budget' (tokens) limits how long");
  }
  if (auto t = body.find("truncation"); t && t->value() != "disabled")
    unsupported(*t, "must be \"disabled\" (a prompt over the context is refused, not truncated)");
  if (auto b = body.find("background"); b && b->value() != false)
    unsupported(*b, "is not supported; use POST /v1/jobs for asynchronous work");
  for (const char* k : {"max_tool_calls", "conversation", "prompt"})
    if (auto f = body.find(k)) unsupported(*f, "is not supported");
}

// store, stream, include (and user, checked).
void read_options(const RequestField& body, ResponsesRequest& out) {
  out.store = body.boolean("store", true);
  body.optional_string("user");
  out.stream = body.boolean("stream", false);
  if (const std::optional<RequestField> inc = body.find("include")) {
    for (size_t i = 0; i < inc->array().size(); ++i) {
      const RequestField v = (*inc)[i];
      if (v.string() == "message.output_text.logprobs") out.output_logprobs = true;
      else v.unsupported(cat("'", v.path(), "' is '", v.string(), "', which is not supported (only \"message.output_text.logprobs\")"));
    }
  }
}

// The conversation's items into out.items: previous_response_id's stored
// ones, then input's; returns how many are stored ones.
size_t read_items(const RequestField& body, const ResponseStore& store, ResponsesRequest& out) {
  if (const std::optional<RequestField> pr = body.find("previous_response_id")) {
    auto entry = store.get(pr->string());
    if (!entry)
      pr->refuse(cat("no stored response has id '", pr->string(), "' (the server keeps its last responses in memory "
                     "only, and none with store: false)"),
                 "previous_response_not_found");
    out.items = entry->items;
  }
  const size_t stored = out.items.size();
  if (const std::optional<RequestField> input = body.find("input"))
    for (ojson& it : input_items(*input, store)) out.items.push_back(std::move(it));
  if (out.items.empty()) bad_request("input", "'input' is required (a string or a list of items)", "missing_field");
  return stored;
}

// The request fields a Response object repeats, in OpenAI's order, with
// their defaults.
ojson echo_of(const RequestField& body, bool store) {
  auto echo = [&](const char* k, ojson fallback = nullptr) -> ojson {
    const std::optional<RequestField> v = body.find(k);
    return v ? v->value() : fallback;
  };
  ojson text = echo("text", {{"format", {{"type", "text"}}}});
  if (!text.contains("format") || text["format"].is_null()) text["format"] = {{"type", "text"}};
  ojson e = ojson::object();
  const std::string* instructions = body.optional_string("instructions");
  e["instructions"] = instructions && !instructions->empty() ? ojson(*instructions) : ojson(nullptr);
  e["max_output_tokens"] = echo("max_output_tokens");
  e["parallel_tool_calls"] = echo("parallel_tool_calls", true);
  e["previous_response_id"] = echo("previous_response_id");
  e["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  e["store"] = store;
  e["temperature"] = echo("temperature");
  e["text"] = std::move(text);
  e["tool_choice"] = echo("tool_choice", "auto");
  e["tools"] = echo("tools", ojson::array());
  e["top_logprobs"] = echo("top_logprobs");
  e["top_p"] = echo("top_p");
  e["truncation"] = "disabled";
  e["user"] = echo("user");
  e["metadata"] = echo("metadata", ojson::object());
  return e;
}

// A prefix rename of a field path: "messages[2]" -> "input" also renames
// "messages[2].content", not "messagesx".
bool rename_prefix(std::string& path, const std::string& from, const std::string& to) {
  if (path.compare(0, from.size(), from) != 0) return false;
  if (path.size() > from.size() && path[from.size()] != '.' && path[from.size()] != '[') return false;
  path = to + path.substr(from.size());
  return true;
}

}  // namespace

ResponsesRequest parse_responses_request(const ojson& json_body, const ResponseStore& store, const ChatLimits& limits) {
  const RequestField body(json_body);
  check_fields(body);
  ResponsesRequest out;
  read_options(body, out);
  const size_t stored = read_items(body, store, out);

  ChatRequest& cr = out.chat;
  GenerateRequest& g = cr.generate;
  cr.stream = out.stream;
  if (const std::string* m = body.optional_string("model")) cr.model = *m;
  if (const std::optional<RequestField> t = body.find("text")) text_format(*t, g);
  const std::optional<RequestField> ts = body.find("tools");
  if (ts) tools(*ts, g, limits);
  if (const std::optional<RequestField> tc = body.find("tool_choice")) {
    // "auto" or "none" without tools asks nothing.
    if (ts || !(tc->value() == "auto" || tc->value() == "none")) tool_choice(*tc, ts.has_value(), g);
  }
  if (g.tools.empty() && g.tool_choice == ToolChoice::Required)
    bad_request("tool_choice", "tool_choice \"required\" needs at least one tool");
  g.parallel_tool_calls = body.boolean("parallel_tool_calls", true);
  if (const std::optional<RequestField> m = body.find("metadata")) check_metadata(*m);
  const VideoOptions video_defaults = read_sampling_fields(body, g, limits);
  if (auto mt = body.integer("max_output_tokens", 1, 1 << 24)) g.max_tokens = *mt;  // else the engine's default
  const std::optional<int64_t> top = body.integer("top_logprobs", 0, 20);
  cr.logprobs = top || out.output_logprobs;
  g.top_logprobs = cr.logprobs ? static_cast<int>(top.value_or(0)) : -1;

  // The conversation: instructions, the stored items, then input's.
  check_image_count(out.items, {"input_image", "input_file", "video_url", "video"}, limits, "input");
  cr.pending.video_defaults = video_defaults;
  PartParser parts{limits, cr, cr.pending.video_defaults};
  Conversation conv{parts};
  if (const std::string* instructions = body.optional_string("instructions"); instructions && !instructions->empty()) {
    conv.add(Message{"system", {{parts.text(body.at("instructions")), nullptr}}, {}});
    conv.turns.other();
  }
  for (size_t j = 0; j < stored; ++j) conv.item(RequestField::whole(out.items[j], "previous_response_id"));
  for (size_t j = stored; j < out.items.size(); ++j) conv.item(RequestField(out.items[j], cat("input[", j - stored, "]")));
  if (g.messages.empty()) bad_request("input", "'input' must not be empty");
  out.echo = echo_of(body, out.store);
  return out;
}

std::string responses_param(const std::string& chat_param) {
  std::string p = chat_param;
  if (rename_prefix(p, "messages", "input")) return "input";  // the prompt as a whole
  if (p.rfind("tools[", 0) == 0) {
    const size_t close = p.find(']');
    if (close != std::string::npos) {
      std::string rest = p.substr(close + 1);
      rename_prefix(rest, ".function", "");
      return p.substr(0, close + 1) + rest;
    }
  }
  if (rename_prefix(p, "tool_choice.function", "tool_choice")) return p;
  if (rename_prefix(p, "response_format.json_schema", "text.format")) return p;
  if (rename_prefix(p, "response_format", "text.format")) return p;
  if (p == "max_completion_tokens" || p == "max_tokens") return "max_output_tokens";
  if (p == "logprobs") return "include";
  return p;
}

ApiError responses_error(const ApiError& e) {
  if (e.param().empty()) return e;
  const std::string to = responses_param(e.param());
  if (to == e.param()) return e;
  std::string msg = e.what();
  for (size_t at = 0; (at = msg.find(e.param(), at)) != std::string::npos; at += to.size())
    msg.replace(at, e.param().size(), to);
  return ApiError(e.status(), e.code(), msg, to);
}

}  // namespace qvl
