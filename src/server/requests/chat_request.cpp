#include "server/requests/chat_request.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "server/requests/api_error.h"
#include "server/requests/chat_parts.h"
#include "server/documents/document_input.h"
#include "server/media/video_input.h"
#include "util/error.h"
#include "util/json_number.h"

namespace qvl {
namespace {

using json = nlohmann::ordered_json;

// Honoured, or bookkeeping that cannot change the answer (user, metadata,
// store, service_tier, safety_identifier, prompt_cache_key: qvl keeps no
// stored completions and has one tier; its prefix cache needs no key;
// modalities and verbosity only with their defaults).
constexpr std::array<std::string_view, 39> kAccepted = {
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature", "top_p",
    "seed", "stop", "presence_penalty", "frequency_penalty", "n", "response_format", "tools", "tool_choice",
    "parallel_tool_calls", "logprobs", "top_logprobs", "logit_bias", "user", "metadata", "store", "service_tier",
    "safety_identifier", "prompt_cache_key", "modalities", "verbosity",
    // qvl's extensions
    "top_k", "min_p", "repetition_penalty", "min_pixels", "max_pixels", "repetition_guard", "repetition_guard_repeats",
    "jump_forward", "reasoning_budget",
    // vLLM's: decoding past the end-of-sequence token (benchmarks force an answer's length with it)
    "ignore_eos",
    // vLLM's: the video processor's sampling and pixel keys (video_input.h)
    "mm_processor_kwargs"};
// OpenAI fields qvl cannot honour: refused whenever set (not null), each with
// its reason (refuse_unsupported).
constexpr std::array<std::string_view, 6> kRefused = {"reasoning_effort", "audio",     "prediction",
                                                      "web_search_options", "functions", "function_call"};

// The OpenAI fields qvl cannot honour: refused when set, with what to do instead.
void refuse_unsupported(const RequestField& body) {
  if (auto f = body.find("functions"))
    f->unsupported("'functions' is the legacy form of tools; send 'tools' with {\"type\": \"function\", ...}");
  if (auto f = body.find("function_call"))
    f->unsupported("'function_call' is the legacy form of tool_choice; send 'tool_choice'");
  if (auto f = body.find("audio")) f->unsupported("audio output is not supported (the model writes text only)");
  if (auto m = body.find("modalities")) {
    for (const json& x : m->array().value())
      if (x != "text") m->unsupported(cat("only the \"text\" output modality is supported, not ", x.dump()));
  }
  if (auto f = body.find("prediction")) f->unsupported("predicted outputs ('prediction') are not supported");
  if (auto f = body.find("web_search_options")) f->unsupported("web search is not available ('web_search_options')");
  if (auto f = body.find("reasoning_effort"))
    f->unsupported("'reasoning_effort' is not supported: a Thinking model always reasons; 'reasoning_budget' (tokens) "
                   "limits how long");
  if (auto v = body.find("verbosity"); v && v->value() != "medium")
    v->unsupported("'verbosity' is not supported (only its default, \"medium\")");
}

// Bookkeeping fields: type-checked, then not used.
void check_bookkeeping(const RequestField& body) {
  for (const char* name : {"user", "safety_identifier", "prompt_cache_key"})
    if (auto v = body.find(name)) v->string();
  if (auto v = body.find("metadata")) {
    for (auto it = v->object().value().begin(); it != v->value().end(); ++it)
      RequestField(*it, v->path_of(it.key())).string();
  }
  body.boolean("store", false);
  if (auto v = body.find("service_tier")) {
    const std::string& t = v->string();
    if (t != "auto" && t != "default" && t != "flex" && t != "scale" && t != "priority")
      v->refuse(cat("unknown service_tier '", t, "'"));
  }
}

}  // namespace

std::string PartParser::text(const RequestField& v) const {
  const std::string& s = v.string();
  if (static_cast<int64_t>(s.size()) > limits.max_text_bytes)
    v.refuse(cat("a text part is ", s.size(), " bytes, over the limit of ", limits.max_text_bytes), "string_too_long");
  return s;
}

// Only the URL is taken here: its bytes are fetched, and what they are
// (an image, a PDF, a clip) decided, once the whole body is known to be
// valid (take_chat_media), so a request refused for any field costs no
// media work.
MessagePart PartParser::image_url(const RequestField& url_field, size_t part_index) {
  // A PDF in it gives every page, at the default dpi.
  MediaSource m;
  m.message = out.generate.messages.size();
  m.part = part_index;
  m.url = url_field.string();
  m.url_param = m.param = m.pages_param = url_field.path();
  ++out.media;
  out.pending.sources.push_back(std::move(m));
  return {"", nullptr};
}

MessagePart PartParser::image(const RequestField& part, size_t part_index) {
  const RequestField iu = part.at("image_url");
  if (iu.value().is_string()) return image_url(iu, part_index);  // some clients send the URL directly
  return image_url(iu.object().at("url"), part_index);
}

// OpenAI's file part, {"type": "file", "file": {"file_data": ...}}: a PDF
// whose pages are rendered once the body is known to be valid (or an
// image or a clip, should its bytes be one).
MessagePart PartParser::file(const RequestField& f, size_t part_index, bool typed_part) {
  MediaSource d = parse_file_part(f, limits.media.pdf, typed_part);
  d.message = out.generate.messages.size();
  d.part = part_index;
  ++out.media;
  out.pending.sources.push_back(std::move(d));
  return {"", nullptr};
}

MessagePart PartParser::video(const RequestField& part, size_t part_index) {
  std::vector<PendingVideo>& videos = out.pending.videos;
  videos.push_back(parse_video_part(part, video_defaults));
  videos.back().message = out.generate.messages.size();
  videos.back().part = part_index;
  ++out.media;
  return {"", nullptr, nullptr};
}

std::vector<MessagePart> PartParser::content(const RequestField& c, const PartReader& read) {
  std::vector<MessagePart> parts;
  if (c.value().is_string()) {
    parts.push_back({text(c), nullptr});
    return parts;
  }
  if (!c.value().is_array()) c.wrong_type("a string or an array of parts");
  for (size_t k = 0; k < c.size(); ++k) {
    const RequestField part = c[k];
    const RequestField type = part.object().at("type");
    type.string();
    parts.push_back(read(part, type, parts.size()));
  }
  return parts;
}

std::vector<MessagePart> PartParser::content(const RequestField& c, bool allow_media) {
  return content(c, [&](const RequestField& part, const RequestField& type, size_t index) -> MessagePart {
    const std::string& t = type.string();
    if (t == "text") return {text(part.at("text")), nullptr};
    if ((t == "image_url" || t == "input_image") && allow_media) return image(part, index);
    if (t == "file" && allow_media) {
      part.only_keys({"type", "file"});
      return file(part.at("file"), index, false);
    }
    if ((t == "video_url" || t == "video") && allow_media) return video(part, index);
    type.refuse(cat("unsupported content part type '", t, "' (",
                    allow_media ? "text, image_url, file, video_url and video are" : "only text is", " supported here)"));
  });
}

void check_image_count(const json& messages, std::initializer_list<std::string_view> types, const ChatLimits& limits,
                       const std::string& param) {
  int64_t images = 0;
  for (const json& m : messages) {
    const std::optional<RequestField> c = RequestField(m).find("content");
    if (!c || !c->value().is_array()) continue;
    for (const json& part : c->value()) {
      const std::optional<RequestField> type = RequestField(part).find("type");
      if (type && type->value().is_string() &&
          std::find(types.begin(), types.end(), type->value().get_ref<const std::string&>()) != types.end())
        ++images;
    }
  }
  if (images > limits.max_images)
    bad_request(param, cat("the request has ", images, " images, over the limit of ", limits.max_images, " per request"),
                "too_many_images");
}

namespace {

ResponseFormat response_format(const RequestField& rf) {
  ResponseFormat out;
  const std::string& type = rf.object().string("type");
  if (type == "text") {
    rf.only_keys({"type"});
  } else if (type == "json_object") {
    rf.only_keys({"type"});
    out.type = ResponseFormat::Type::JsonObject;
  } else if (type == "json_schema") {
    rf.only_keys({"type", "json_schema"});
    const RequestField js = rf.at("json_schema");
    js.object().only_keys({"name", "description", "schema", "strict"});
    function_name(js.at("name"));
    out = json_schema_format(js);
  } else {
    rf.at("type").refuse(
        cat("unknown response_format type '", type.substr(0, 80), "' (text, json_object and json_schema are supported)"));
  }
  return out;
}

void tools(const RequestField& body, GenerateRequest& g, const ChatLimits& limits) {
  const std::optional<RequestField> ts = body.find("tools");
  if (ts) {
    if (static_cast<int>(ts->array().size()) > limits.max_tools) ts->refuse(cat("at most ", limits.max_tools, " tools"));
    for (size_t i = 0; i < ts->size(); ++i) {
      const RequestField t = (*ts)[i];
      const std::string& type = t.object().string("type");
      if (type != "function")
        t.at("type").unsupported(cat("unsupported tool type '", type.substr(0, 80), "' (only \"function\" is supported)"));
      t.only_keys({"type", "function"});
      const RequestField fn = t.at("function");
      fn.object().only_keys({"name", "description", "parameters", "strict"});
      Tool tool = function_tool(fn);
      tool.definition = t.value().dump();
      add_tool(g, std::move(tool), fn.at("name"));
    }
  }
  if (const std::optional<RequestField> tc = body.find("tool_choice")) {
    if (!ts) tc->refuse("'tool_choice' is only allowed when 'tools' are given");
    if (tc->value().is_string()) {
      tool_choice_mode(*tc, g);
    } else if (tc->value().is_object()) {
      const std::string& type = tc->string("type");
      if (type != "function")
        tc->at("type").unsupported(cat("unsupported tool_choice type '", type.substr(0, 80), "' (only \"function\")"));
      tc->only_keys({"type", "function"});
      const RequestField fn = tc->at("function");
      fn.object().only_keys({"name"});
      tool_choice_function(fn.at("name"), g);
    } else {
      tc->wrong_type("a string or an object");
    }
  }
  if (g.tools.empty() && g.tool_choice == ToolChoice::Required)
    bad_request("tool_choice", "tool_choice \"required\" needs at least one tool");
  g.parallel_tool_calls = body.boolean("parallel_tool_calls", true);
}

// logprobs, top_logprobs and logit_bias.
void token_options(const RequestField& body, ChatRequest& out, const ChatLimits& limits) {
  GenerateRequest& g = out.generate;
  out.logprobs = body.boolean("logprobs", false);
  const auto top = body.integer("top_logprobs", 0, 20);
  if (top && !out.logprobs) bad_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  g.top_logprobs = out.logprobs ? static_cast<int>(top.value_or(0)) : -1;

  const std::optional<RequestField> lb = body.find("logit_bias");
  if (!lb) return;
  if (!lb->value().is_object()) lb->wrong_type("an object of token ids to numbers");
  if (static_cast<int>(lb->size()) > limits.max_logit_bias)
    lb->refuse(cat("at most ", limits.max_logit_bias, " logit_bias entries, got ", lb->size()));
  for (auto it = lb->value().begin(); it != lb->value().end(); ++it) {
    const std::string& key = it.key();
    const bool digits = !key.empty() && key.size() <= 10 && std::all_of(key.begin(), key.end(), [](char c) {
      return c >= '0' && c <= '9';
    });
    const int64_t id = digits ? std::stoll(key) : -1;
    if (!digits || id > std::numeric_limits<int32_t>::max())
      lb->refuse(cat("logit_bias key '", key.substr(0, 40), "' is not a token id"));
    if (limits.vocab_size > 0 && id >= limits.vocab_size)
      lb->refuse(cat("logit_bias token id ", id, " is not below the vocabulary size ", limits.vocab_size));
    double bias = 0;
    const NumberCheck bias_check = json_double(*it, -100, 100, bias);
    if (bias_check == NumberCheck::not_a_number) lb->wrong_type("an object of token ids to numbers");
    if (bias_check != NumberCheck::ok)
      lb->refuse(cat("logit_bias of token ", id, " must be in [-100, 100], got ", it->dump()));
    g.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias));
  }
}

// An assistant turn's tool_calls, as a client replays them.
std::vector<ToolCall> tool_calls(const RequestField& tcs) {
  std::vector<ToolCall> out;
  for (size_t k = 0; k < tcs.array().size(); ++k) {
    const RequestField tc = tcs[k];
    tc.object().only_keys({"id", "type", "function"});
    ToolCall call;
    call.id = tc.string("id");
    if (const std::string* type = tc.optional_string("type"); type && *type != "function")
      tc.at("type").unsupported(cat("unsupported tool call type '", type->substr(0, 80), "' (only \"function\")"));
    const RequestField fn = tc.at("function");
    fn.object().only_keys({"name", "arguments"});
    call.name = fn.string("name");
    const std::optional<RequestField> args = fn.find("arguments");
    if (!args) call.arguments = "{}";
    else if (args->value().is_string()) call.arguments = args->string();
    else if (args->value().is_object()) call.arguments = args->value().dump();  // some clients send the object itself
    else args->wrong_type("a string");
    out.push_back(std::move(call));
  }
  return out;
}

// One message of `messages`, added to out.generate.
void add_message(const RequestField& m, PartParser& parts, ToolTurns& turns) {
  const RequestField role = m.object().at("role");
  std::string r = role.string();
  if (r == "developer") r = "system";  // OpenAI's newer name for the system role
  if (r == "function")
    role.unsupported("the legacy 'function' role is not supported; send tool results with role 'tool'");
  if (r != "system" && r != "user" && r != "assistant" && r != "tool")
    role.refuse(cat("unsupported role '", role.string().substr(0, 80),
                    "' (system, developer, user, assistant and tool are supported)"));
  // `name` is accepted and not rendered (the chat template has no place for it).
  m.optional_string("name");
  Message msg{r, {}, {}};
  const std::optional<RequestField> c = m.find("content");
  if (r == "assistant") {
    m.only_keys({"role", "content", "name", "tool_calls", "refusal", "reasoning_content"});
    // A Thinking model's earlier reasoning (as its answers returned it);
    // the template keeps it after the last user query and drops it before.
    if (const std::string* rc = m.optional_string("reasoning_content")) msg.reasoning = *rc;
    if (auto f = m.find("refusal")) f->unsupported("an assistant turn's 'refusal' is not supported (send it as content)");
    if (auto tcs = m.find("tool_calls")) msg.tool_calls = tool_calls(*tcs);
    if (c) msg.parts = parts.content(*c, false);
    else if (msg.tool_calls.empty())
      bad_request(m.path_of("content"), cat("'", m.path_of("content"), "' is required (or 'tool_calls')"), "missing_field");
    turns.assistant();
    for (const ToolCall& tc : msg.tool_calls) turns.call(tc.id);
  } else if (r == "tool") {
    m.only_keys({"role", "content", "name", "tool_call_id"});
    turns.answer(m.at("tool_call_id"), role.path());
    msg.parts = parts.content(m.at("content"), false);
  } else {
    m.only_keys({"role", "content", "name"});
    msg.parts = parts.content(m.at("content"), r == "user");
    turns.other();
  }
  parts.out.generate.messages.push_back(std::move(msg));
}

}  // namespace

VideoOptions read_sampling_fields(const RequestField& body, GenerateRequest& g, const ChatLimits& limits) {
  SamplingParams& s = g.sampling;
  s.temperature = body.number("temperature", 0, 2);
  s.top_p = body.number("top_p", 0, 1);
  if (s.top_p && *s.top_p <= 0) bad_request("top_p", "'top_p' must be above 0");
  s.min_p = body.number("min_p", 0, 1);
  if (auto k = body.integer("top_k", 0, std::numeric_limits<int>::max())) s.top_k = static_cast<int>(*k);
  s.presence_penalty = body.number("presence_penalty", -2, 2);
  s.frequency_penalty = body.number("frequency_penalty", -2, 2);
  s.repetition_penalty = body.number("repetition_penalty", 1e-3, 100);
  // Any 64-bit seed: [INT64_MIN, UINT64_MAX], a negative one taken as its two's complement.
  if (auto seed = body.find("seed"); seed && seed->value().is_number_unsigned())
    s.seed = seed->value().get<uint64_t>();
  else if (auto v = body.integer("seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
    s.seed = static_cast<uint64_t>(*v);

  // qvl's extension: the loop detector of engine/repetition_guard.h.
  g.repetition_guard = limits.repetition_guard;
  if (auto w = body.integer("repetition_guard", 0, 1 << 24)) g.repetition_guard.window = *w;
  if (auto r = body.integer("repetition_guard_repeats", 2, 1000)) g.repetition_guard.min_repeats = static_cast<int>(*r);
  // qvl's extension: false decodes forced tokens one step each (same answer; to compare speed).
  g.jump_forward = body.boolean("jump_forward", true);
  // vLLM's extension: the answer runs to max_tokens (or a stop string, the
  // repetition guard, a constraint's end) whatever the model's end-of-sequence.
  g.ignore_eos = body.boolean("ignore_eos", false);
  // qvl's extension, Thinking models only (the engine refuses it otherwise):
  // reasoning tokens after which "</think>" is forced.
  if (auto b = body.integer("reasoning_budget", 0, 1 << 24)) g.reasoning_budget = *b;

  if (const std::optional<RequestField> stop = body.find("stop")) {
    if (stop->value().is_string()) {
      if (!stop->string().empty()) g.stop.push_back(stop->string());
    } else if (stop->value().is_array()) {
      if (static_cast<int>(stop->size()) > limits.max_stop) stop->refuse(cat("at most ", limits.max_stop, " stop strings"));
      for (size_t k = 0; k < stop->size(); ++k)
        if (const std::string& st = (*stop)[k].string(); !st.empty()) g.stop.push_back(st);
    } else {
      stop->wrong_type("a string or an array of strings");
    }
    for (const std::string& st : g.stop)
      if (st.size() > 1024) stop->refuse("a stop string is longer than 1024 bytes");
  }

  // Per-request image area (qvl's extension, as Qwen's processor takes it);
  // the engine clamps it into its range (EngineInfo), which clients see in
  // /v1/qvl/config.
  if (auto v = body.integer("max_pixels", 1, INT64_MAX)) g.max_pixels = *v;
  if (auto v = body.integer("min_pixels", 1, INT64_MAX)) g.min_pixels = *v;
  VideoOptions video_defaults;
  if (const std::optional<RequestField> kw = body.find("mm_processor_kwargs")) {
    video_defaults = parse_mm_processor_kwargs(*kw);
    // vLLM applies them to images too; the top-level fields win.
    if (video_defaults.max_pixels && !body.has("max_pixels")) g.max_pixels = *video_defaults.max_pixels;
    if (video_defaults.min_pixels && !body.has("min_pixels")) g.min_pixels = *video_defaults.min_pixels;
  }
  return video_defaults;
}

const std::string& function_name(const RequestField& f) {
  const std::string& name = f.string();
  const bool ok = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!ok) f.refuse(cat("'", f.path(), "' must be 1 to 64 of a-z, A-Z, 0-9, '_' and '-', got '", name.substr(0, 80), "'"));
  return name;
}

Tool function_tool(const RequestField& fn) {
  Tool tool;
  tool.name = function_name(fn.at("name"));
  fn.optional_string("description");
  fn.boolean("strict", false);  // the parameters are always enforced
  if (auto params = fn.find("parameters")) tool.parameters = params->object().value().dump();
  return tool;
}

void add_tool(GenerateRequest& g, Tool tool, const RequestField& name) {
  for (const Tool& other : g.tools)
    if (other.name == tool.name) name.refuse(cat("two tools are named '", tool.name, "'"), "duplicate_tool_name");
  g.tools.push_back(std::move(tool));
}

void tool_choice_mode(const RequestField& tc, GenerateRequest& g) {
  const std::string& s = tc.string();
  if (s == "auto") g.tool_choice = ToolChoice::Auto;
  else if (s == "none") g.tool_choice = ToolChoice::None;
  else if (s == "required") g.tool_choice = ToolChoice::Required;
  else tc.refuse(cat("unknown tool_choice '", s.substr(0, 80), "' (none, auto, required or a function)"));
}

void tool_choice_function(const RequestField& name_field, GenerateRequest& g) {
  const std::string& name = name_field.string();
  if (std::none_of(g.tools.begin(), g.tools.end(), [&](const Tool& t) { return t.name == name; }))
    bad_request("tool_choice", cat("tool_choice names '", name.substr(0, 80), "', which is not among the tools"));
  g.tool_choice = ToolChoice::Function;
  g.tool_choice_name = name;
}

ResponseFormat json_schema_format(const RequestField& js) {
  js.optional_string("description");
  js.boolean("strict", false);  // the schema is always enforced
  ResponseFormat out;
  out.type = ResponseFormat::Type::JsonSchema;
  out.schema = js.at("schema").object().value().dump();
  return out;
}

const std::string& ToolTurns::answer(const RequestField& id_field, const std::string& turn) const {
  const std::string& id = id_field.string();
  if (!after_calls_) bad_request(turn, "a tool result must follow an assistant turn with tool calls");
  if (!open_.count(id))
    id_field.refuse(cat("'", id_field.path(), "' '", id.substr(0, 80),
                        "' answers none of the preceding assistant turn's tool calls"));
  return id;
}

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

ChatRequest parse_chat_request(const json& json_body, const ChatLimits& limits) {
  const RequestField body(json_body);
  body.object();
  for (auto it = json_body.begin(); it != json_body.end(); ++it)
    if (std::find(kAccepted.begin(), kAccepted.end(), it.key()) == kAccepted.end() &&
        std::find(kRefused.begin(), kRefused.end(), it.key()) == kRefused.end())
      bad_request(it.key(), cat("unknown or unsupported parameter '", it.key().substr(0, 80), "'"),
                  "unsupported_parameter");
  refuse_unsupported(body);
  check_bookkeeping(body);

  ChatRequest out;
  GenerateRequest& g = out.generate;

  if (const std::string* m = body.optional_string("model")) out.model = *m;
  if (const std::optional<RequestField> n = body.find("n")) {
    g.n = static_cast<int>(n->integer(1, std::numeric_limits<int>::max()));
    if (g.n > limits.max_n)
      n->refuse(cat("'n' must be at most ", limits.max_n, " (choices per request), got ", g.n), "unsupported_value");
  }
  out.stream = body.boolean("stream", false);
  if (const std::optional<RequestField> so = body.find("stream_options")) {
    // include_obfuscation pads chunks against length side channels on the
    // public internet; it never changes the answer, and qvl does not pad.
    so->object().only_keys({"include_usage", "include_obfuscation"});
    out.include_usage = so->boolean("include_usage", false);
    so->boolean("include_obfuscation", false);
  }

  const VideoOptions video_defaults = read_sampling_fields(body, g, limits);
  auto mt = body.integer("max_completion_tokens", 1, 1 << 24);
  if (!mt) mt = body.integer("max_tokens", 1, 1 << 24);
  if (mt) g.max_tokens = *mt;  // else the engine's default

  if (auto rf = body.find("response_format")) g.response_format = response_format(*rf);
  tools(body, g, limits);
  token_options(body, out, limits);

  const RequestField messages = body.at("messages");
  if (messages.array().size() == 0) messages.refuse("'messages' must not be empty");
  check_image_count(messages.value(), {"image_url", "input_image", "file", "video_url", "video"}, limits, "messages");
  out.pending.video_defaults = video_defaults;
  PartParser parts{limits, out, out.pending.video_defaults};
  ToolTurns turns;
  for (size_t i = 0; i < messages.size(); ++i) add_message(messages[i], parts, turns);
  return out;
}

}  // namespace qvl
