#include "server/chat_request.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "image/preprocess.h"
#include "server/api_error.h"
#include "util/error.h"

namespace qvl {
namespace {

using json = nlohmann::json;

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

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::optional<double> number(const json& body, const char* name, double lo, double hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) wrong_type(name, "a number", *v);
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) bad_request(name, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", x));
  return x;
}

std::optional<int64_t> integer(const json& body, const char* name, int64_t lo, int64_t hi) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  // 5.0 is accepted as 5 (JavaScript clients have only doubles).
  if (v->is_number_float() && v->get<double>() == static_cast<double>(static_cast<int64_t>(v->get<double>())) &&
      std::abs(v->get<double>()) < 9e15)
    return integer(json{{name, static_cast<int64_t>(v->get<double>())}}, name, lo, hi);
  if (!v->is_number_integer()) wrong_type(name, "an integer", *v);
  const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)
                        ? INT64_MAX
                        : v->get<int64_t>();
  if (x < lo || x > hi) bad_request(name, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", v->dump()));
  return x;
}

bool boolean(const json& obj, const char* name, const std::string& param) {
  const json* v = field(obj, name);
  if (!v) return false;
  if (!v->is_boolean()) wrong_type(param, "a boolean", *v);
  return v->get<bool>();
}

using Clock = std::chrono::steady_clock;

struct PartParser {
  const ChatLimits& limits;
  ChatRequest& out;

  std::string text(const json& v, const std::string& param) const {
    if (!v.is_string()) wrong_type(param, "a string", v);
    const std::string& s = v.get_ref<const std::string&>();
    if (static_cast<int64_t>(s.size()) > limits.max_text_bytes)
      bad_request(param, cat("a text part is ", s.size(), " bytes, over the limit of ", limits.max_text_bytes),
                  "string_too_long");
    return s;
  }

  MessagePart image(const json& part, const std::string& param) {
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
    if (++out.images > limits.max_images)
      bad_request(url_param, cat("more than ", limits.max_images, " images in one request"), "too_many_images");
    const Clock::time_point t = Clock::now();
    std::vector<uint8_t> bytes = fetch_image_bytes(url, limits.media, url_param);
    auto img = std::make_shared<Image>();
    try {
      *img = decode_image(bytes, limits.decode);
    } catch (const Error& e) {
      bad_request(url_param, cat("the image cannot be used: ", e.what()), "invalid_image");
    }
    // A per-request pixel range narrower than the server's: resize here to
    // the size the processor would pick with that range. The engine's
    // smart_resize then finds the size already on the grid and in range, so
    // the image is resized once, exactly as with per-request options.
    if (out.max_pixels != limits.max_image_pixels || out.min_pixels != limits.min_image_pixels) {
      ResizedSize target;
      try {
        target = smart_resize(img->height, img->width, limits.resize_factor, out.min_pixels, out.max_pixels);
      } catch (const Error& e) {
        bad_request(url_param, cat("the image cannot be used: ", e.what()), "invalid_image");
      }
      if (target.width != img->width || target.height != img->height)
        *img = resize_bicubic(*img, target.width, target.height);
    }
    out.image_ms += std::chrono::duration<double, std::milli>(Clock::now() - t).count();
    return {"", std::move(img)};
  }

  std::vector<MessagePart> content(const json& c, const std::string& param) {
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
      } else if (t == "image_url" || t == "input_image") {
        parts.push_back(image(part, p));
      } else {
        bad_request(p + ".type", cat("unsupported content part type '", t, "' (text and image_url are supported)"));
      }
    }
    return parts;
  }
};

}  // namespace

ChatRequest parse_chat_request(const json& body, const ChatLimits& limits) {
  if (!body.is_object()) bad_request("", cat("the request body must be a JSON object, not ", type_name(body)), "invalid_type");
  ChatRequest out;
  GenerateRequest& g = out.generate;

  if (const json* m = field(body, "model")) {
    if (!m->is_string()) wrong_type("model", "a string", *m);
    out.model = m->get<std::string>();
  }
  if (const json* n = field(body, "n"); n && !(n->is_number() && n->get<double>() == 1))
    bad_request("n", "only n = 1 is supported", "unsupported_value");
  out.stream = boolean(body, "stream", "stream");
  if (const json* so = field(body, "stream_options")) {
    if (!so->is_object()) wrong_type("stream_options", "an object", *so);
    out.include_usage = boolean(*so, "include_usage", "stream_options.include_usage");
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
  if (auto seed = integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))
    s.seed = static_cast<uint64_t>(*seed);

  // qvl's extension: the loop detector of engine/repetition_guard.h.
  g.repetition_guard = limits.repetition_guard;
  if (auto w = integer(body, "repetition_guard", 0, 1 << 24)) g.repetition_guard.window = *w;
  if (auto r = integer(body, "repetition_guard_repeats", 2, 1000)) g.repetition_guard.min_repeats = static_cast<int>(*r);

  auto mt = integer(body, "max_completion_tokens", 1, 1 << 24);
  if (!mt) mt = integer(body, "max_tokens", 1, 1 << 24);
  g.max_tokens = mt ? *mt : limits.default_max_tokens;

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

  // Per-request image area, clamped into the server's range (the cap is
  // what keeps a CPU server responsive; clients see it in /v1/qvl/config).
  out.max_pixels = limits.max_image_pixels;
  out.min_pixels = limits.min_image_pixels;
  // Both stay inside [server min, server cap], so the engine's own range
  // never moves an image resized here.
  if (auto v = integer(body, "max_pixels", 1, INT64_MAX))
    out.max_pixels = std::clamp(*v, limits.min_image_pixels, limits.max_image_pixels);
  if (auto v = integer(body, "min_pixels", 1, INT64_MAX))
    out.min_pixels = std::clamp(*v, limits.min_image_pixels, out.max_pixels);
  out.min_pixels = std::min(out.min_pixels, out.max_pixels);

  const json* messages = field(body, "messages");
  if (!messages) bad_request("messages", "'messages' is required", "missing_field");
  if (!messages->is_array()) wrong_type("messages", "an array", *messages);
  if (messages->empty()) bad_request("messages", "'messages' must not be empty");
  PartParser parts{limits, out};
  for (size_t i = 0; i < messages->size(); ++i) {
    const std::string p = cat("messages[", i, "]");
    const json& m = (*messages)[i];
    if (!m.is_object()) wrong_type(p, "an object", m);
    const json* role = field(m, "role");
    if (!role) bad_request(p + ".role", "each message needs a 'role'", "missing_field");
    if (!role->is_string()) wrong_type(p + ".role", "a string", *role);
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // OpenAI's newer name for the system role
    if (r != "system" && r != "user" && r != "assistant")
      bad_request(p + ".role", cat("unsupported role '", role->get<std::string>(), "' (system, user and assistant are supported)"));
    Message msg{r, {}};
    if (const json* c = field(m, "content")) msg.parts = parts.content(*c, p + ".content");
    else if (r != "assistant") bad_request(p + ".content", "a message needs 'content'", "missing_field");
    g.messages.push_back(std::move(msg));
  }
  return out;
}

}  // namespace qvl
