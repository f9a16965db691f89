#include "server/chat_request.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

#include "server/api_error.h"
#include "server/document_input.h"
#include "server/video_input.h"
#include "util/error.h"
#include "util/json_number.h"

namespace qvl {
namespace {

using json = nlohmann::ordered_json;

// Honoured, or bookkeeping that cannot change the answer (user, metadata,
// store, service_tier, safety_identifier, prompt_cache_key: qvl keeps no
// stored completions and has one tier; its prefix cache needs no key;
// modalities and verbosity only with their defaults).
constexpr std::array<std::string_view, 38> kAccepted = {
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature", "top_p",
    "seed", "stop", "presence_penalty", "frequency_penalty", "n", "response_format", "tools", "tool_choice",
    "parallel_tool_calls", "logprobs", "top_logprobs", "logit_bias", "user", "metadata", "store", "service_tier",
    "safety_identifier", "prompt_cache_key", "modalities", "verbosity",
    // qvl's extensions
    "top_k", "min_p", "repetition_penalty", "min_pixels", "max_pixels", "repetition_guard", "repetition_guard_repeats",
    "jump_forward", "reasoning_budget",
    // vLLM's: the video processor's sampling and pixel keys (video_input.h)
    "mm_processor_kwargs"};
// OpenAI fields qvl cannot honour: refused whenever set (not null), each with
// its reason (refuse_unsupported).
constexpr std::array<std::string_view, 6> kRefused = {"reasoning_effort", "audio",     "prediction",
                                                      "web_search_options", "functions", "function_call"};

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a number";
    default: return "an integer";
  }
}

[[noreturn]] void wrong_type(const std::string& param, const char* want, const json& got) {
  bad_request(param, cat("'", param, "' must be ", want, ", not ", type_name(got)), "invalid_type");
}

[[noreturn]] void unsupported(const std::string& param, const std::string& message) {
  bad_request(param, message, "unsupported_parameter");
}

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// Keys of a nested object outside `known` are refused, naming the key.
void only_keys(const json& obj, const std::string& param, std::initializer_list<std::string_view> known) {
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      unsupported(param + "." + it.key(), cat("unknown field '", it.key(), "' in '", param, "'"));
}

const std::string& string_field(const json& obj, const char* name, const std::string& param, bool required = true) {
  static const std::string empty;
  const json* v = field(obj, name);
  if (!v) {
    if (required) bad_request(param, cat("'", param, "' is required"), "missing_field");
    return empty;
  }
  if (!v->is_string()) wrong_type(param, "a string", *v);
  return v->get_ref<const std::string&>();
}

// Every number of a request is read here, through util/json_number.h: the
// range is checked on the value as parsed, before any cast.
double number_value(const json& v, const std::string& name, double lo, double hi) {
  double x = 0;
  switch (json_double(v, lo, hi, x)) {
    case NumberCheck::ok: return x;
    case NumberCheck::not_a_number: wrong_type(name, "a number", v);
    default: bad_request(name, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", v.dump()));
  }
}

std::optional<double> number(const json& body, const char* name, double lo, double hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  return number_value(*v, name, lo, hi);
}

// 5.0 is accepted as 5 (JavaScript clients have only doubles).
std::optional<int64_t> integer_value(const json& v, const std::string& name, int64_t lo, int64_t hi) {
  int64_t x = 0;
  switch (json_integer(v, lo, hi, x)) {
    case NumberCheck::ok: return x;
    case NumberCheck::not_a_number:
    case NumberCheck::not_an_integer: wrong_type(name, "an integer", v);
    default: bad_request(name, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", v.dump()));
  }
}

std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  return integer_value(*v, name, lo, hi);
}

bool boolean(const json& obj, const char* name, const std::string& param, bool fallback = false) {
  const json* v = field(obj, name);
  if (!v) return fallback;
  if (!v->is_boolean()) wrong_type(param, "a boolean", *v);
  return v->get<bool>();
}

// OpenAI's rule for function and schema names: [a-zA-Z0-9_-]{1,64}.
void check_name(const std::string& name, const std::string& param) {
  const bool ok = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!ok) bad_request(param, cat("'", param, "' must be 1 to 64 of a-z, A-Z, 0-9, '_' and '-', got '",
                                  name.substr(0, 80), "'"));
}

// The OpenAI fields qvl cannot honour: refused when set, with what to do instead.
void refuse_unsupported(const json& body) {
  if (field(body, "functions"))
    unsupported("functions", "'functions' is the legacy form of tools; send 'tools' with {\"type\": \"function\", ...}");
  if (field(body, "function_call"))
    unsupported("function_call", "'function_call' is the legacy form of tool_choice; send 'tool_choice'");
  if (field(body, "audio")) unsupported("audio", "audio output is not supported (the model writes text only)");
  if (const json* m = field(body, "modalities")) {
    if (!m->is_array()) wrong_type("modalities", "an array", *m);
    for (const json& x : *m)
      if (x != "text") unsupported("modalities", cat("only the \"text\" output modality is supported, not ", x.dump()));
  }
  if (field(body, "prediction"))
    unsupported("prediction", "predicted outputs ('prediction') are not supported");
  if (field(body, "web_search_options"))
    unsupported("web_search_options", "web search is not available ('web_search_options')");
  if (field(body, "reasoning_effort"))
    unsupported("reasoning_effort",
                "'reasoning_effort' is not supported: a Thinking model always reasons; 'reasoning_budget' (tokens) "
                "limits how long");
  if (const json* v = field(body, "verbosity"); v && *v != "medium")
    unsupported("verbosity", "'verbosity' is not supported (only its default, \"medium\")");
}

// Bookkeeping fields: type-checked, then not used.
void check_bookkeeping(const json& body) {
  for (const char* name : {"user", "safety_identifier", "prompt_cache_key"})
    if (const json* v = field(body, name); v && !v->is_string()) wrong_type(name, "a string", *v);
  if (const json* v = field(body, "metadata")) {
    if (!v->is_object()) wrong_type("metadata", "an object", *v);
    for (auto it = v->begin(); it != v->end(); ++it)
      if (!it->is_string()) wrong_type("metadata." + it.key(), "a string", *it);
  }
  boolean(body, "store", "store");
  if (const json* v = field(body, "service_tier")) {
    if (!v->is_string()) wrong_type("service_tier", "a string", *v);
    const std::string& t = v->get_ref<const std::string&>();
    if (t != "auto" && t != "default" && t != "flex" && t != "scale" && t != "priority")
      bad_request("service_tier", cat("unknown service_tier '", t, "'"));
  }
}

struct PartParser {
  const ChatLimits& limits;
  ChatRequest& out;
  const VideoOptions& video_defaults;  // mm_processor_kwargs

  std::string text(const json& v, const std::string& param) const {
    if (!v.is_string()) wrong_type(param, "a string", v);
    const std::string& s = v.get_ref<const std::string&>();
    if (static_cast<int64_t>(s.size()) > limits.max_text_bytes)
      bad_request(param, cat("a text part is ", s.size(), " bytes, over the limit of ", limits.max_text_bytes),
                  "string_too_long");
    return s;
  }

  // Only the URL is taken here: its bytes are fetched, and what they are
  // (an image, a PDF, a clip) decided, once the whole body is known to be
  // valid (take_chat_media), so a request refused for any field costs no
  // media work.
  MessagePart image(const json& part, const std::string& param, size_t part_index) {
    const json* iu = field(part, "image_url");
    if (!iu) bad_request(param + ".image_url", "an image_url part needs 'image_url'", "missing_field");
    std::string url;
    std::string url_param = param + ".image_url";
    if (iu->is_string()) {
      url = iu->get<std::string>();  // some clients send the URL directly
    } else if (iu->is_object()) {
      url_param += ".url";
      const json* u = field(*iu, "url");
      if (!u) bad_request(url_param, "'image_url' needs 'url'", "missing_field");
      if (!u->is_string()) wrong_type(url_param, "a string", *u);
      url = u->get<std::string>();
    } else {
      wrong_type(url_param, "an object", *iu);
    }
    // A PDF in it gives every page, at the default dpi.
    MediaSource m;
    m.message = out.generate.messages.size();
    m.part = part_index;
    m.url = std::move(url);
    m.url_param = m.param = m.pages_param = std::move(url_param);
    ++out.media;
    out.pending.sources.push_back(std::move(m));
    return {"", nullptr};
  }

  // OpenAI's file part, {"type": "file", "file": {"file_data": ...}}: a PDF
  // whose pages are rendered once the body is known to be valid (or an
  // image or a clip, should its bytes be one).
  MessagePart file(const json& part, const std::string& param, size_t part_index) {
    only_keys(part, param, {"type", "file"});
    const json* f = field(part, "file");
    if (!f) bad_request(param + ".file", "a file part needs 'file'", "missing_field");
    MediaSource d = parse_file_part(*f, param + ".file", limits.media.pdf);
    d.message = out.generate.messages.size();
    d.part = part_index;
    ++out.media;
    out.pending.sources.push_back(std::move(d));
    return {"", nullptr};
  }

  // allow_images false: text parts only (tool results, assistant turns).
  std::vector<MessagePart> content(const json& c, const std::string& param, bool allow_images = true) {
    std::vector<MessagePart> parts;
    if (c.is_string()) {
      parts.push_back({text(c, param), nullptr});
      return parts;
    }
    if (!c.is_array()) wrong_type(param, "a string or an array of parts", c);
    for (size_t k = 0; k < c.size(); ++k) {
      const std::string p = cat(param, "[", k, "]");
      const json& part = c[k];
      if (!part.is_object()) wrong_type(p, "an object", part);
      const json* type = field(part, "type");
      if (!type || !type->is_string()) bad_request(p + ".type", "each content part needs a string 'type'", "missing_field");
      const std::string& t = type->get_ref<const std::string&>();
      if (t == "text") {
        const json* tx = field(part, "text");
        if (!tx) bad_request(p + ".text", "a text part needs 'text'", "missing_field");
        parts.push_back({text(*tx, p + ".text"), nullptr});
      } else if ((t == "image_url" || t == "input_image") && allow_images) {
        parts.push_back(image(part, p, parts.size()));
      } else if (t == "file" && allow_images) {
        parts.push_back(file(part, p, parts.size()));
      } else if ((t == "video_url" || t == "video") && allow_images) {
        std::vector<PendingVideo>& videos = out.pending.videos;
        videos.push_back(parse_video_part(part, p, video_defaults));
        videos.back().message = out.generate.messages.size();
        videos.back().part = parts.size();
        ++out.media;
        parts.push_back({"", nullptr, nullptr});
      } else {
        bad_request(p + ".type", cat("unsupported content part type '", t, "' (",
                                      allow_images ? "text, image_url, file, video_url and video are" : "only text is", " supported here)"));
      }
    }
    return parts;
  }
};


// The image parts of every message, counted before anything is parsed or
// decoded, so a body with a hundred images is refused at once (a file part
// counts as one here, as its pages once its PDF is opened).
void check_image_count(const json& messages, const ChatLimits& limits) {
  int64_t images = 0;
  for (const json& m : messages) {
    const json* c = m.is_object() ? field(m, "content") : nullptr;
    if (!c || !c->is_array()) continue;
    for (const json& part : *c) {
      const json* type = part.is_object() ? field(part, "type") : nullptr;
      if (type && (*type == "image_url" || *type == "input_image" || *type == "file" || *type == "video_url" ||
                   *type == "video"))
        ++images;
    }
  }
  if (images > limits.max_images)
    bad_request("messages", cat("the request has ", images, " images, over the limit of ", limits.max_images,
                                " per request"),
                "too_many_images");
}

ResponseFormat response_format(const json& rf) {
  ResponseFormat out;
  if (!rf.is_object()) wrong_type("response_format", "an object", rf);
  const std::string& type = string_field(rf, "type", "response_format.type");
  if (type == "text") {
    only_keys(rf, "response_format", {"type"});
  } else if (type == "json_object") {
    only_keys(rf, "response_format", {"type"});
    out.type = ResponseFormat::Type::JsonObject;
  } else if (type == "json_schema") {
    only_keys(rf, "response_format", {"type", "json_schema"});
    const json* js = field(rf, "json_schema");
    if (!js) bad_request("response_format.json_schema", "a json_schema response_format needs 'json_schema'", "missing_field");
    if (!js->is_object()) wrong_type("response_format.json_schema", "an object", *js);
    only_keys(*js, "response_format.json_schema", {"name", "description", "schema", "strict"});
    check_name(string_field(*js, "name", "response_format.json_schema.name"), "response_format.json_schema.name");
    string_field(*js, "description", "response_format.json_schema.description", false);
    boolean(*js, "strict", "response_format.json_schema.strict");  // the schema is always enforced
    const json* schema = field(*js, "schema");
    if (!schema) bad_request("response_format.json_schema.schema", "'response_format.json_schema.schema' is required",
                             "missing_field");
    if (!schema->is_object()) wrong_type("response_format.json_schema.schema", "an object", *schema);
    out.type = ResponseFormat::Type::JsonSchema;
    out.schema = schema->dump();
  } else {
    bad_request("response_format.type",
                cat("unknown response_format type '", type.substr(0, 80), "' (text, json_object and json_schema are supported)"));
  }
  return out;
}

void tools(const json& body, GenerateRequest& g, const ChatLimits& limits) {
  const json* ts = field(body, "tools");
  if (ts) {
    if (!ts->is_array()) wrong_type("tools", "an array", *ts);
    if (static_cast<int>(ts->size()) > limits.max_tools) bad_request("tools", cat("at most ", limits.max_tools, " tools"));
    for (size_t i = 0; i < ts->size(); ++i) {
      const std::string p = cat("tools[", i, "]");
      const json& t = (*ts)[i];
      if (!t.is_object()) wrong_type(p, "an object", t);
      const std::string& type = string_field(t, "type", p + ".type");
      if (type != "function")
        unsupported(p + ".type", cat("unsupported tool type '", type.substr(0, 80), "' (only \"function\" is supported)"));
      only_keys(t, p, {"type", "function"});
      const json* fn = field(t, "function");
      if (!fn) bad_request(p + ".function", "a function tool needs 'function'", "missing_field");
      if (!fn->is_object()) wrong_type(p + ".function", "an object", *fn);
      only_keys(*fn, p + ".function", {"name", "description", "parameters", "strict"});
      Tool tool;
      tool.name = string_field(*fn, "name", p + ".function.name");
      check_name(tool.name, p + ".function.name");
      string_field(*fn, "description", p + ".function.description", false);
      boolean(*fn, "strict", p + ".function.strict");  // the parameters are always enforced
      if (const json* params = field(*fn, "parameters")) {
        if (!params->is_object()) wrong_type(p + ".function.parameters", "an object", *params);
        tool.parameters = params->dump();
      }
      for (const Tool& other : g.tools)
        if (other.name == tool.name)
          bad_request(p + ".function.name", cat("two tools are named '", tool.name, "'"), "duplicate_tool_name");
      tool.definition = t.dump();
      g.tools.push_back(std::move(tool));
    }
  }
  if (const json* tc = field(body, "tool_choice")) {
    if (!ts) bad_request("tool_choice", "'tool_choice' is only allowed when 'tools' are given");
    if (tc->is_string()) {
      const std::string& s = tc->get_ref<const std::string&>();
      if (s == "auto") g.tool_choice = ToolChoice::Auto;
      else if (s == "none") g.tool_choice = ToolChoice::None;
      else if (s == "required") g.tool_choice = ToolChoice::Required;
      else bad_request("tool_choice", cat("unknown tool_choice '", s.substr(0, 80), "' (none, auto, required or a function)"));
    } else if (tc->is_object()) {
      const std::string& type = string_field(*tc, "type", "tool_choice.type");
      if (type != "function")
        unsupported("tool_choice.type", cat("unsupported tool_choice type '", type.substr(0, 80), "' (only \"function\")"));
      only_keys(*tc, "tool_choice", {"type", "function"});
      const json* fn = field(*tc, "function");
      if (!fn) bad_request("tool_choice.function", "'tool_choice.function' is required", "missing_field");
      if (!fn->is_object()) wrong_type("tool_choice.function", "an object", *fn);
      only_keys(*fn, "tool_choice.function", {"name"});
      const std::string& name = string_field(*fn, "name", "tool_choice.function.name");
      if (std::none_of(g.tools.begin(), g.tools.end(), [&](const Tool& t) { return t.name == name; }))
        bad_request("tool_choice", cat("tool_choice names '", name.substr(0, 80), "', which is not among the tools"));
      g.tool_choice = ToolChoice::Function;
      g.tool_choice_name = name;
    } else {
      wrong_type("tool_choice", "a string or an object", *tc);
    }
  }
  if (g.tools.empty() && g.tool_choice == ToolChoice::Required)
    bad_request("tool_choice", "tool_choice \"required\" needs at least one tool");
  g.parallel_tool_calls = boolean(body, "parallel_tool_calls", "parallel_tool_calls", true);
}

// logprobs, top_logprobs and logit_bias.
void token_options(const json& body, ChatRequest& out, const ChatLimits& limits) {
  GenerateRequest& g = out.generate;
  out.logprobs = boolean(body, "logprobs", "logprobs");
  const auto top = integer(body, "top_logprobs", 0, 20);
  if (top && !out.logprobs) bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  g.top_logprobs = out.logprobs ? static_cast<int>(top.value_or(0)) : -1;

  const json* lb = field(body, "logit_bias");
  if (!lb) return;
  if (!lb->is_object()) wrong_type("logit_bias", "an object of token ids to numbers", *lb);
  if (static_cast<int>(lb->size()) > limits.max_logit_bias)
    bad_request("logit_bias", cat("at most ", limits.max_logit_bias, " logit_bias entries, got ", lb->size()));
  for (auto it = lb->begin(); it != lb->end(); ++it) {
    const std::string& key = it.key();
    const bool digits = !key.empty() && key.size() <= 10 && std::all_of(key.begin(), key.end(), [](char c) {
      return c >= '0' && c <= '9';
    });
    const int64_t id = digits ? std::stoll(key) : -1;
    if (!digits || id > std::numeric_limits<int32_t>::max())
      bad_request("logit_bias", cat("logit_bias key '", key.substr(0, 40), "' is not a token id"));
    if (limits.vocab_size > 0 && id >= limits.vocab_size)
      bad_request("logit_bias", cat("logit_bias token id ", id, " is not below the vocabulary size ", limits.vocab_size));
    double bias = 0;
    const NumberCheck bias_check = json_double(*it, -100, 100, bias);
    if (bias_check == NumberCheck::not_a_number) wrong_type("logit_bias", "an object of token ids to numbers", *it);
    if (bias_check != NumberCheck::ok)
      bad_request("logit_bias", cat("logit_bias of token ", id, " must be in [-100, 100], got ", it->dump()));
    g.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias));
  }
}

// An assistant turn's tool_calls, as a client replays them.
std::vector<ToolCall> tool_calls(const json& tcs, const std::string& param) {
  if (!tcs.is_array()) wrong_type(param, "an array", tcs);
  std::vector<ToolCall> out;
  for (size_t k = 0; k < tcs.size(); ++k) {
    const std::string p = cat(param, "[", k, "]");
    const json& tc = tcs[k];
    if (!tc.is_object()) wrong_type(p, "an object", tc);
    only_keys(tc, p, {"id", "type", "function"});
    ToolCall call;
    call.id = string_field(tc, "id", p + ".id");
    const std::string& type = string_field(tc, "type", p + ".type", false);
    if (!type.empty() && type != "function")
      unsupported(p + ".type", cat("unsupported tool call type '", type.substr(0, 80), "' (only \"function\")"));
    const json* fn = field(tc, "function");
    if (!fn) bad_request(p + ".function", "a tool call needs 'function'", "missing_field");
    if (!fn->is_object()) wrong_type(p + ".function", "an object", *fn);
    only_keys(*fn, p + ".function", {"name", "arguments"});
    call.name = string_field(*fn, "name", p + ".function.name");
    const json* args = field(*fn, "arguments");
    if (!args) call.arguments = "{}";
    else if (args->is_string()) call.arguments = args->get<std::string>();
    else if (args->is_object()) call.arguments = args->dump();  // some clients send the object itself
    else wrong_type(p + ".function.arguments", "a string", *args);
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace

std::span<const std::string_view> chat_fields() { return kAccepted; }

MediaLimits media_limits(const ChatLimits& limits) {
  MediaLimits m;
  m.image = limits.decode;
  m.video.max_encoded_bytes = limits.media.max_video_bytes;
  m.pdf = limits.media.pdf;  // max_bytes: --max-pdf-bytes, as the CLI and the C API cap a PDF
  return m;
}

void refuse_time_limit(const MediaTimeLimit& e, const std::string& param) {
  bad_request(param, cat(e.what(), " (--image-time-limit)"), "image_time_limit");
}

void refuse_too_large(const MediaTooLarge& e, const std::string& param) {
  // A clip's cap (MediaOptions::max_video_bytes) has no flag.
  const char* flag = e.kind() == MediaKind::Pdf ? " (--max-pdf-bytes)" : e.kind() == MediaKind::Image ? " (--max-image-bytes)" : "";
  throw ApiError(413, "image_too_large", cat(e.what(), flag), param);
}

ChatLimits request_chat_limits(const MediaOptions& media, const RepetitionGuardOptions& repetition_guard) {
  ChatLimits l;
  l.media = media;
  l.decode.max_encoded_bytes = media.max_image_bytes;
  l.repetition_guard = repetition_guard;
  return l;
}

ChatRequest parse_chat_request(const json& body, const ChatLimits& limits) {
  if (!body.is_object()) bad_request("", cat("the request body must be a JSON object, not ", type_name(body)), "invalid_type");
  for (auto it = body.begin(); it != body.end(); ++it)
    if (std::find(kAccepted.begin(), kAccepted.end(), it.key()) == kAccepted.end() &&
        std::find(kRefused.begin(), kRefused.end(), it.key()) == kRefused.end())
      unsupported(it.key(), cat("unknown or unsupported parameter '", it.key().substr(0, 80), "'"));
  refuse_unsupported(body);
  check_bookkeeping(body);

  ChatRequest out;
  GenerateRequest& g = out.generate;

  if (const json* m = field(body, "model")) {
    if (!m->is_string()) wrong_type("model", "a string", *m);
    out.model = m->get<std::string>();
  }
  if (auto n = integer(body, "n", 1, std::numeric_limits<int>::max())) {
    if (*n > limits.max_n)
      bad_request("n", cat("'n' must be at most ", limits.max_n, " (choices per request), got ", *n), "unsupported_value");
    g.n = static_cast<int>(*n);
  }
  out.stream = boolean(body, "stream", "stream");
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    // include_obfuscation pads chunks against length side channels on the
    // public internet; it never changes the answer, and qvl does not pad.
    only_keys(*so, "stream_options", {"include_usage", "include_obfuscation"});
    out.include_usage = boolean(*so, "include_usage", "stream_options.include_usage");
    boolean(*so, "include_obfuscation", "stream_options.include_obfuscation");
  }

  SamplingParams& s = g.sampling;
  s.temperature = number(body, "temperature", 0, 2);
  s.top_p = number(body, "top_p", 0, 1);
  if (s.top_p && *s.top_p <= 0) bad_request("top_p", "'top_p' must be above 0");
  s.min_p = number(body, "min_p", 0, 1);
  if (auto k = integer(body, "top_k", 0, std::numeric_limits<int>::max())) s.top_k = static_cast<int>(*k);
  s.presence_penalty = number(body, "presence_penalty", -2, 2);
  s.frequency_penalty = number(body, "frequency_penalty", -2, 2);
  s.repetition_penalty = number(body, "repetition_penalty", 1e-3, 100);
  // Any 64-bit seed: [INT64_MIN, UINT64_MAX], a negative one taken as its two's complement.
  if (const json* seed = field(body, "seed"); seed && seed->is_number_unsigned())
    s.seed = seed->get<uint64_t>();
  else if (auto v = integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
    s.seed = static_cast<uint64_t>(*v);

  // qvl's extension: the loop detector of engine/repetition_guard.h.
  g.repetition_guard = limits.repetition_guard;
  if (auto w = integer(body, "repetition_guard", 0, 1 << 24)) g.repetition_guard.window = *w;
  if (auto r = integer(body, "repetition_guard_repeats", 2, 1000)) g.repetition_guard.min_repeats = static_cast<int>(*r);
  // qvl's extension: false decodes forced tokens one step each (same answer; to compare speed).
  g.jump_forward = boolean(body, "jump_forward", "jump_forward", true);
  // qvl's extension, Thinking models only (the engine refuses it otherwise):
  // reasoning tokens after which "</think>" is forced.
  if (auto b = integer(body, "reasoning_budget", 0, 1 << 24)) g.reasoning_budget = *b;

  auto mt = integer(body, "max_completion_tokens", 1, 1 << 24);
  if (!mt) mt = integer(body, "max_tokens", 1, 1 << 24);
  if (mt) g.max_tokens = *mt;  // else the engine's default

  if (const json* stop = field(body, "stop")) {
    if (stop->is_string()) {
      if (!stop->get_ref<const std::string&>().empty()) g.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      if (static_cast<int>(stop->size()) > limits.max_stop)
        bad_request("stop", cat("at most ", limits.max_stop, " stop strings"));
      for (size_t k = 0; k < stop->size(); ++k) {
        if (!(*stop)[k].is_string()) wrong_type(cat("stop[", k, "]"), "a string", (*stop)[k]);
        if (!(*stop)[k].get_ref<const std::string&>().empty()) g.stop.push_back((*stop)[k].get<std::string>());
      }
    } else {
      wrong_type("stop", "a string or an array of strings", *stop);
    }
    for (const std::string& st : g.stop)
      if (st.size() > 1024) bad_request("stop", "a stop string is longer than 1024 bytes");
  }

  if (const json* rf = field(body, "response_format")) g.response_format = response_format(*rf);
  tools(body, g, limits);
  token_options(body, out, limits);

  // Per-request image area (qvl's extension, as Qwen's processor takes it);
  // the engine clamps it into its range (EngineInfo), which clients see in
  // /v1/qvl/config.
  if (auto v = integer(body, "max_pixels", 1, INT64_MAX)) g.max_pixels = *v;
  if (auto v = integer(body, "min_pixels", 1, INT64_MAX)) g.min_pixels = *v;
  VideoOptions video_defaults;
  if (const json* kw = field(body, "mm_processor_kwargs")) {
    video_defaults = parse_mm_processor_kwargs(*kw);
    // vLLM applies them to images too; the top-level fields win.
    if (video_defaults.max_pixels && !field(body, "max_pixels")) g.max_pixels = *video_defaults.max_pixels;
    if (video_defaults.min_pixels && !field(body, "min_pixels")) g.min_pixels = *video_defaults.min_pixels;
  }

  const json* messages = field(body, "messages");
  if (!messages) bad_request("messages", "'messages' is required", "missing_field");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) bad_request("messages", "'messages' must not be empty");
  check_image_count(*messages, limits);
  out.pending.video_defaults = video_defaults;
  PartParser parts{limits, out, out.pending.video_defaults};
  // The ids of the latest assistant turn's calls, which the tool messages
  // after it answer (the template renders results by position, so an id
  // that answers no call is the client's mistake, as OpenAI says too).
  std::set<std::string> open_calls;
  bool after_calls = false;
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string p = cat("messages[", i, "]");
    const json& m = (*messages)[i];
    if (!m.is_object()) wrong_type(p, "an object", m);
    const json* role = field(m, "role");
    if (!role) bad_request(p + ".role", "each message needs a 'role'", "missing_field");
    if (!role->is_string()) wrong_type(p + ".role", "a string", *role);
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r == "function")
      unsupported(p + ".role", "the legacy 'function' role is not supported; send tool results with role 'tool'");
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      bad_request(p + ".role", cat("unsupported role '", role->get<std::string>().substr(0, 80),
                                   "' (system, developer, user, assistant and tool are supported)"));
    // `name` is accepted and not rendered (the chat template has no place for it).
    if (const json* nm = field(m, "name"); nm && !nm->is_string()) wrong_type(p + ".name", "a string", *nm);
    Message msg{r, {}, {}};
    const json* c = field(m, "content");
    if (r == "assistant") {
      only_keys(m, p, {"role", "content", "name", "tool_calls", "refusal", "reasoning_content"});
      // A Thinking model's earlier reasoning (as its answers returned it);
      // the template keeps it after the last user query and drops it before.
      if (const json* rc = field(m, "reasoning_content")) {
        if (!rc->is_string()) wrong_type(p + ".reasoning_content", "a string", *rc);
        msg.reasoning = rc->get<std::string>();
      }
      if (field(m, "refusal")) unsupported(p + ".refusal", "an assistant turn's 'refusal' is not supported (send it as content)");
      if (const json* tcs = field(m, "tool_calls")) msg.tool_calls = tool_calls(*tcs, p + ".tool_calls");
      if (c) msg.parts = parts.content(*c, p + ".content", false);
      else if (msg.tool_calls.empty()) bad_request(p + ".content", "an assistant message needs 'content' or 'tool_calls'", "missing_field");
      open_calls.clear();
      for (const ToolCall& tc : msg.tool_calls) open_calls.insert(tc.id);
      after_calls = !msg.tool_calls.empty();
    } else if (r == "tool") {
      only_keys(m, p, {"role", "content", "name", "tool_call_id"});
      const std::string& id = string_field(m, "tool_call_id", p + ".tool_call_id");
      if (!after_calls)
        bad_request(p + ".role", "a 'tool' message must follow an assistant message with 'tool_calls'");
      if (!open_calls.count(id))
        bad_request(p + ".tool_call_id", cat("tool_call_id '", id.substr(0, 80), "' answers none of the preceding assistant "
                                             "message's tool_calls"));
      if (!c) bad_request(p + ".content", "a message needs 'content'", "missing_field");
      msg.parts = parts.content(*c, p + ".content", false);
    } else {
      only_keys(m, p, {"role", "content", "name"});
      if (!c) bad_request(p + ".content", "a message needs 'content'", "missing_field");
      msg.parts = parts.content(*c, p + ".content", r == "user");
      after_calls = false;
    }
    g.messages.push_back(std::move(msg));
  }
  return out;
}

}  // namespace qvl
