#include "server/responses_request.h"

#include <algorithm>
#include <optional>
#include <set>

#include "util/error.h"

namespace qvl {
namespace {

using ojson = nlohmann::ordered_json;

const char* type_name(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "null";
    case ojson::value_t::boolean: return "a boolean";
    case ojson::value_t::string: return "a string";
    case ojson::value_t::array: return "an array";
    case ojson::value_t::object: return "an object";
    case ojson::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

[[noreturn]] void wrong_type(const std::string& param, const char* want, const ojson& got) {
  bad_request(param, cat("'", param, "' must be ", want, ", not ", type_name(got)), "invalid_type");
}

const ojson* field(const ojson& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

const std::string& string_field(const ojson& obj, const char* name, const std::string& param, bool required = true) {
  static const std::string empty;
  const ojson* v = field(obj, name);
  if (!v) {
    if (required) bad_request(param, cat("'", param, "' is required"), "missing_field");
    return empty;
  }
  if (!v->is_string()) wrong_type(param, "a string", *v);
  return v->get_ref<const std::string&>();
}

[[noreturn]] void unsupported(const std::string& param, const std::string& why) {
  bad_request(param, cat("'", param, "' ", why), "unsupported_parameter");
}

// Fields that mean the same on both routes: the Responses ones, and qvl's
// chat extensions (sampling, image area, the repetition guard).
const char* const kSameFields[] = {"model", "temperature", "top_p", "parallel_tool_calls",
                                   "seed", "top_k", "min_p", "repetition_penalty",
                                   "presence_penalty", "frequency_penalty", "stop", "min_pixels",
                                   "max_pixels", "repetition_guard", "repetition_guard_repeats",
                                   "reasoning_budget", "mm_processor_kwargs", "ignore_eos"};
// Fields that change nothing here (billing, caching and routing hints of
// OpenAI's service, or accepted and echoed).
const char* const kHarmless[] = {"service_tier", "prompt_cache_key", "prompt_cache_retention", "safety_identifier",
                                 "stream_options", "user", "store"};

// Content parts of a message or a function_call_output, Responses -> chat.
ojson parts(const ojson& content, const std::string& param, bool assistant) {
  ojson out = ojson::array();
  for (size_t k = 0; k < content.size(); ++k) {
    const std::string p = cat(param, "[", k, "]");
    const ojson& part = content[k];
    if (!part.is_object()) wrong_type(p, "an object", part);
    const std::string& type = string_field(part, "type", p + ".type");
    if (type == "input_text" || type == "output_text" || type == "refusal") {
      const char* key = type == "refusal" ? "refusal" : "text";
      out.push_back({{"type", "text"}, {"text", string_field(part, key, cat(p, ".", key))}});
    } else if (type == "input_image" && !assistant) {
      if (field(part, "file_id") && !field(part, "image_url"))
        unsupported(p + ".file_id", "is not supported (qvl has no file store); send 'image_url' with a data: URI or a URL");
      const std::string& url = string_field(part, "image_url", p + ".image_url");
      if (const ojson* d = field(part, "detail"); d && !d->is_string()) wrong_type(p + ".detail", "a string", *d);
      out.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});  // detail: the server's pixel range decides
    } else if (type == "input_file" && !assistant) {
      // A PDF: the chat file part with the same fields, which the chat
      // parser checks (file_id and unknown keys refused, named back here).
      ojson file = ojson::object();
      for (auto it = part.begin(); it != part.end(); ++it)
        if (it.key() != "type") file[it.key()] = *it;
      out.push_back({{"type", "file"}, {"file", std::move(file)}});
    } else if ((type == "video_url" || type == "video") && !assistant) {
      // Responses has no video part of its own: chat's two kinds (vLLM's
      // video_url, Qwen's video) as they are, which the chat parser checks
      // with their sampling keys, naming them back here.
      out.push_back(part);
    } else {
      bad_request(p + ".type",
                  cat("unsupported content part type '", type, "' (",
                      assistant ? "output_text" : "input_text, input_image, input_file, video_url and video",
                      " are supported", assistant ? " in an assistant message" : "", ")"));
    }
  }
  return out;
}

struct Conversation {
  ojson messages = ojson::array();
  std::vector<ResponsesRequest::Source> sources;
  bool open_calls = false;  // the last message is an assistant message that function_call items may extend
  // A reasoning item's text, for the assistant message that follows it (a
  // Thinking model's template renders it as reasoning_content).
  std::optional<std::string> reasoning;

  void add(ojson m, std::string path, bool tool_output = false) {
    if (m["role"] == "assistant" && reasoning) m["reasoning_content"] = *reasoning;
    reasoning.reset();
    messages.push_back(std::move(m));
    sources.push_back({std::move(path), tool_output, {}});
    open_calls = false;
  }

  void item(const ojson& it, const std::string& p) {
    if (!it.is_object()) wrong_type(p, "an object", it);
    const ojson* type = field(it, "type");
    if (type && !type->is_string()) wrong_type(p + ".type", "a string", *type);
    const std::string t = type ? type->get<std::string>() : "message";
    if (t == "message") {
      const std::string& role = string_field(it, "role", p + ".role");
      if (role != "user" && role != "system" && role != "developer" && role != "assistant")
        bad_request(p + ".role", cat("unsupported role '", role, "' (user, system, developer and assistant are supported)"));
      const bool assistant = role == "assistant";
      const ojson* c = field(it, "content");
      if (!c) bad_request(p + ".content", "a message needs 'content'", "missing_field");
      ojson m = {{"role", role}};
      if (c->is_string()) m["content"] = *c;
      else if (c->is_array()) m["content"] = parts(*c, p + ".content", assistant);
      else wrong_type(p + ".content", "a string or an array of parts", *c);
      add(std::move(m), p);
      open_calls = assistant;
    } else if (t == "function_call") {
      const std::string& call_id = string_field(it, "call_id", p + ".call_id");
      const std::string& name = string_field(it, "name", p + ".name");
      const std::string& args = string_field(it, "arguments", p + ".arguments");
      if (!open_calls) {
        add({{"role", "assistant"}, {"content", nullptr}}, p);
        open_calls = true;
      }
      ojson& m = messages.back();
      if (!m.contains("tool_calls")) m["tool_calls"] = ojson::array();
      m["tool_calls"].push_back({{"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}});
      sources.back().calls.push_back(p);
    } else if (t == "reasoning") {
      // As a response returned it: its reasoning_text parts (the summary is a
      // rewording, never produced here).
      std::string text;
      if (const ojson* c = field(it, "content")) {
        if (!c->is_array()) wrong_type(p + ".content", "an array of reasoning_text parts", *c);
        for (size_t k = 0; k < c->size(); ++k) {
          const std::string pk = cat(p, ".content[", k, "]");
          if (!(*c)[k].is_object()) wrong_type(pk, "an object", (*c)[k]);
          if (string_field((*c)[k], "type", pk + ".type") != "reasoning_text")
            bad_request(pk + ".type", "a reasoning item's content parts must be reasoning_text");
          text += string_field((*c)[k], "text", pk + ".text");
        }
      }
      reasoning = std::move(text);
      open_calls = false;
    } else if (t == "function_call_output") {
      const std::string& call_id = string_field(it, "call_id", p + ".call_id");
      const ojson* out = field(it, "output");
      if (!out) bad_request(p + ".output", "a function_call_output item needs 'output'", "missing_field");
      ojson m = {{"role", "tool"}, {"tool_call_id", call_id}};
      if (out->is_string()) m["content"] = *out;
      else if (out->is_array()) m["content"] = parts(*out, p + ".output", false);
      else wrong_type(p + ".output", "a string or an array of parts", *out);
      add(std::move(m), p, true);
    } else {
      bad_request(p + ".type", cat("unsupported input item type '", t,
                                   "' (message, reasoning, function_call, function_call_output and item_reference are supported)"));
    }
  }
};

// `input` as a list of items with their "type", item references replaced
// by the items they name.
ojson input_items(const ojson& input, const ResponseStore& store) {
  if (input.is_string()) return ojson::array({{{"type", "message"}, {"role", "user"}, {"content", input}}});
  if (!input.is_array()) wrong_type("input", "a string or an array of items", input);
  ojson items = ojson::array();
  for (size_t j = 0; j < input.size(); ++j) {
    const std::string p = cat("input[", j, "]");
    ojson it = input[j];
    if (!it.is_object()) wrong_type(p, "an object", it);
    const ojson* type = field(it, "type");
    if (type && type->is_string() && type->get_ref<const std::string&>() == "item_reference") {
      const std::string& id = string_field(it, "id", p + ".id");
      auto found = store.find_item(id);
      if (!found) bad_request(p + ".id", cat("no stored item has id '", id, "' (the server keeps its last responses only)"),
                              "item_not_found");
      it = std::move(*found);
    } else if (!type && it.contains("role")) {
      it["type"] = "message";
    }
    items.push_back(std::move(it));
  }
  return items;
}

void check_metadata(const ojson& m) {
  if (!m.is_object()) wrong_type("metadata", "an object", m);
  if (m.size() > 16) bad_request("metadata", "'metadata' holds at most 16 keys");
  for (auto it = m.begin(); it != m.end(); ++it) {
    const std::string p = "metadata." + it.key();
    if (it.key().size() > 64) bad_request(p, "a metadata key is at most 64 characters");
    if (!it->is_string()) wrong_type(p, "a string", *it);
    if (it->get_ref<const std::string&>().size() > 512) bad_request(p, "a metadata value is at most 512 characters");
  }
}

// text.format -> response_format.
ojson response_format(const ojson& text) {
  if (!text.is_object()) wrong_type("text", "an object", text);
  for (auto it = text.begin(); it != text.end(); ++it)
    if (it.key() != "format" && it.key() != "verbosity") unsupported("text." + it.key(), "is not supported");
  if (const ojson* v = field(text, "verbosity"); v && !v->is_string()) wrong_type("text.verbosity", "a string", *v);
  const ojson* f = field(text, "format");
  if (!f) return nullptr;
  if (!f->is_object()) wrong_type("text.format", "an object", *f);
  const std::string& type = string_field(*f, "type", "text.format.type");
  if (type == "text" || type == "json_object") return {{"type", type}};
  if (type != "json_schema")
    bad_request("text.format.type", cat("unsupported text format '", type, "' (text, json_object and json_schema are supported)"));
  ojson js = ojson::object();
  js["name"] = field(*f, "name") ? string_field(*f, "name", "text.format.name") : "response";
  if (const ojson* d = field(*f, "description")) {
    if (!d->is_string()) wrong_type("text.format.description", "a string", *d);
    js["description"] = *d;
  }
  const ojson* schema = field(*f, "schema");
  if (!schema) bad_request("text.format.schema", "a json_schema format needs 'schema'", "missing_field");
  js["schema"] = *schema;
  if (const ojson* s = field(*f, "strict")) js["strict"] = *s;
  return {{"type", "json_schema"}, {"json_schema", std::move(js)}};
}

ojson chat_tools(const ojson& tools) {
  if (!tools.is_array()) wrong_type("tools", "an array", tools);
  ojson out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string p = cat("tools[", i, "]");
    const ojson& t = tools[i];
    if (!t.is_object()) wrong_type(p, "an object", t);
    const std::string& type = string_field(t, "type", p + ".type");
    if (type != "function")
      bad_request(p + ".type", cat("tool type '", type, "' is not supported (only 'function': qvl runs no hosted tools)"),
                  "unsupported_value");
    ojson fn = {{"name", string_field(t, "name", p + ".name")}};
    for (const char* k : {"description", "parameters", "strict"})
      if (const ojson* v = field(t, k)) fn[k] = *v;
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

ojson chat_tool_choice(const ojson& tc) {
  if (tc.is_string()) return tc;  // auto/none/required: parse_chat_request checks the value
  if (!tc.is_object()) wrong_type("tool_choice", "a string or an object", tc);
  const std::string& type = string_field(tc, "type", "tool_choice.type");
  if (type != "function")
    bad_request("tool_choice.type", cat("tool_choice type '", type, "' is not supported (\"auto\", \"none\", \"required\" "
                                        "or {\"type\": \"function\", \"name\"})"));
  return {{"type", "function"}, {"function", {{"name", string_field(tc, "name", "tool_choice.name")}}}};
}

// A prefix rename of a field path: "messages[2]" -> "input[1]" also renames
// "messages[2].content", not "messages[20]".
bool rename_prefix(std::string& path, const std::string& from, const std::string& to) {
  if (path.compare(0, from.size(), from) != 0) return false;
  if (path.size() > from.size() && path[from.size()] != '.' && path[from.size()] != '[') return false;
  path = to + path.substr(from.size());
  return true;
}

}  // namespace

ResponsesRequest translate_responses_request(const ojson& body, const ResponseStore& store) {
  if (!body.is_object()) bad_request("", cat("the request body must be a JSON object, not ", type_name(body)), "invalid_type");
  ResponsesRequest out;
  ojson& chat = out.chat;
  chat = ojson::object();

  static const std::set<std::string> handled = {
      "input", "instructions", "max_output_tokens", "text", "tools", "tool_choice", "stream", "previous_response_id",
      "metadata", "top_logprobs", "include", "reasoning", "truncation", "background", "max_tool_calls", "conversation",
      "prompt"};
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& k = it.key();
    if (handled.count(k) || std::find(std::begin(kSameFields), std::end(kSameFields), k) != std::end(kSameFields) ||
        std::find(std::begin(kHarmless), std::end(kHarmless), k) != std::end(kHarmless))
      continue;
    unsupported(k, "is not a field qvl's /v1/responses supports");
  }

  // What qvl cannot do, refused unless sent as the default.
  if (const ojson* r = field(body, "reasoning")) {
    if (!r->is_object()) wrong_type("reasoning", "an object", *r);
    for (auto it = r->begin(); it != r->end(); ++it)
      if (!it->is_null() && !(it.key() == "effort" && *it == "none"))
        unsupported("reasoning." + it.key(),
                    "is not supported: a Thinking model always reasons; 'reasoning_budget' (tokens) limits how long");
  }
  if (const ojson* t = field(body, "truncation"); t && *t != "disabled")
    unsupported("truncation", "must be \"disabled\" (a prompt over the context is refused, not truncated)");
  if (const ojson* b = field(body, "background"); b && *b != false)
    unsupported("background", "is not supported; use POST /v1/jobs for asynchronous work");
  for (const char* k : {"max_tool_calls", "conversation", "prompt"})
    if (field(body, k)) unsupported(k, "is not supported");
  if (const ojson* s = field(body, "store")) {
    if (!s->is_boolean()) wrong_type("store", "a boolean", *s);
    out.store = s->get<bool>();
  }
  if (const ojson* u = field(body, "user"); u && !u->is_string()) wrong_type("user", "a string", *u);
  if (const ojson* st = field(body, "stream")) {
    if (!st->is_boolean()) wrong_type("stream", "a boolean", *st);
    out.stream = st->get<bool>();
  }
  if (const ojson* inc = field(body, "include")) {
    if (!inc->is_array()) wrong_type("include", "an array", *inc);
    for (size_t i = 0; i < inc->size(); ++i) {
      const std::string p = cat("include[", i, "]");
      if (!(*inc)[i].is_string()) wrong_type(p, "a string", (*inc)[i]);
      if ((*inc)[i] == "message.output_text.logprobs") out.output_logprobs = true;
      else unsupported(p, cat("'", (*inc)[i].get<std::string>(), "' is not supported (only \"message.output_text.logprobs\")"));
    }
  }

  // The conversation: the stored one, instructions, then input.
  Conversation conv;
  std::string previous;
  if (const ojson* pr = field(body, "previous_response_id")) {
    if (!pr->is_string()) wrong_type("previous_response_id", "a string", *pr);
    previous = pr->get<std::string>();
    auto entry = store.get(previous);
    if (!entry)
      bad_request("previous_response_id",
                  cat("no stored response has id '", previous, "' (the server keeps its last responses in memory only, "
                                                               "and none with store: false)"),
                  "previous_response_not_found");
    out.items = entry->items;
  }
  std::string instructions;
  if (const ojson* ins = field(body, "instructions")) {
    if (!ins->is_string()) wrong_type("instructions", "a string", *ins);
    instructions = ins->get<std::string>();
    if (!instructions.empty()) conv.add({{"role", "system"}, {"content", instructions}}, "instructions");
  }
  const size_t stored = out.items.size();
  for (size_t j = 0; j < stored; ++j) conv.item(out.items[j], "previous_response_id");
  if (const ojson* input = field(body, "input")) {
    ojson items = input_items(*input, store);
    for (size_t j = 0; j < items.size(); ++j) {
      conv.item(items[j], cat("input[", j, "]"));
      out.items.push_back(std::move(items[j]));
    }
  }
  if (out.items.empty()) bad_request("input", "'input' is required (a string or a list of items)", "missing_field");
  out.sources = std::move(conv.sources);

  // The chat body, field by field.
  for (const char* k : kSameFields)
    if (auto it = body.find(k); it != body.end()) chat[k] = *it;
  chat["messages"] = std::move(conv.messages);
  if (auto it = body.find("max_output_tokens"); it != body.end()) chat["max_completion_tokens"] = *it;
  if (out.stream) chat["stream"] = true;
  ojson text_echo = {{"format", {{"type", "text"}}}};
  if (const ojson* t = field(body, "text")) {
    ojson rf = response_format(*t);
    if (!rf.is_null()) chat["response_format"] = std::move(rf);
    text_echo = *t;
    if (!field(text_echo, "format")) text_echo["format"] = {{"type", "text"}};
  }
  ojson tools_echo = ojson::array();
  if (const ojson* t = field(body, "tools")) {
    chat["tools"] = chat_tools(*t);
    tools_echo = *t;
  }
  ojson tool_choice_echo = "auto";
  if (const ojson* tc = field(body, "tool_choice")) {
    // "auto" or "none" without tools asks nothing (chat refuses a tool_choice without tools).
    if (chat.contains("tools") || !(*tc == "auto" || *tc == "none")) chat["tool_choice"] = chat_tool_choice(*tc);
    tool_choice_echo = *tc;
  }
  if (const ojson* k = field(body, "top_logprobs")) {
    chat["top_logprobs"] = *k;
    chat["logprobs"] = true;
  } else if (out.output_logprobs) {
    chat["logprobs"] = true;
  }
  ojson metadata = ojson::object();
  if (const ojson* m = field(body, "metadata")) {
    check_metadata(*m);
    metadata = *m;
  }

  auto echo = [&](const char* k) -> ojson {
    const ojson* v = field(body, k);
    return v ? *v : ojson(nullptr);
  };
  ojson& e = out.echo;
  e["instructions"] = instructions.empty() ? ojson(nullptr) : ojson(instructions);
  e["max_output_tokens"] = echo("max_output_tokens");
  e["parallel_tool_calls"] = field(body, "parallel_tool_calls") ? echo("parallel_tool_calls") : ojson(true);
  e["previous_response_id"] = previous.empty() ? ojson(nullptr) : ojson(previous);
  e["reasoning"] = {{"effort", nullptr}, {"summary", nullptr}};
  e["store"] = out.store;
  e["temperature"] = echo("temperature");
  e["text"] = std::move(text_echo);
  e["tool_choice"] = std::move(tool_choice_echo);
  e["tools"] = std::move(tools_echo);
  e["top_logprobs"] = echo("top_logprobs");
  e["top_p"] = echo("top_p");
  e["truncation"] = "disabled";
  e["user"] = echo("user");
  e["metadata"] = std::move(metadata);
  return out;
}

std::string ResponsesRequest::responses_param(const std::string& chat_param) const {
  std::string p = chat_param;
  if (p.rfind("messages[", 0) == 0) {
    const size_t close = p.find(']');
    size_t i = 0;
    try {
      i = std::stoul(p.substr(9, close - 9));
    } catch (...) {
      return "input";
    }
    if (close == std::string::npos || i >= sources.size()) return "input";
    const Source& s = sources[i];
    std::string rest = p.substr(close + 1);
    // The assistant message of function_call items: name the call's item.
    if (rest.rfind(".tool_calls[", 0) == 0 && !s.calls.empty()) {
      const size_t c = rest.find(']');
      size_t k = 0;
      try {
        k = std::stoul(rest.substr(12, c - 12));
      } catch (...) {
      }
      std::string sub = c == std::string::npos ? "" : rest.substr(c + 1);
      rename_prefix(sub, ".function", "");
      rename_prefix(sub, ".id", ".call_id");
      return (k < s.calls.size() ? s.calls[k] : s.calls.back()) + sub;
    }
    if (s.path == "instructions" || s.path == "previous_response_id") return s.path;
    if (s.tool_output) rename_prefix(rest, ".content", ".output");
    // A chat image part's URL is the Responses part's image_url string.
    if (const size_t u = rest.find(".image_url.url"); u != std::string::npos && u + 14 == rest.size())
      rest.resize(u + 10);
    if (rest == ".tool_call_id") rest = ".call_id";
    // A chat file part's "file" object is the input_file part itself.
    if (const size_t f = rest.find("].file"); f != std::string::npos &&
        (f + 6 == rest.size() || rest[f + 6] == '.'))
      rest.erase(f + 1, 5);
    return s.path + rest;
  }
  if (rename_prefix(p, "messages", "input")) return p;
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

ApiError ResponsesRequest::translate_error(const ApiError& e) const {
  if (e.param().empty()) return e;
  const std::string to = responses_param(e.param());
  if (to == e.param()) return e;
  std::string msg = e.what();
  for (size_t at = 0; (at = msg.find(e.param(), at)) != std::string::npos; at += to.size())
    msg.replace(at, e.param().size(), to);
  return ApiError(e.status(), e.code(), msg, to);
}

}  // namespace qvl
