// The C API (include/qvl.h) over qvl::Engine. Every entry point catches
// everything: no exception crosses into C. A failure sets the thread's last
// error and returns its qvl_status.
#include "qvl.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine.h"
#include "engine/reasoning.h"
#include "engine/retrieval.h"
#include "image/image.h"
#include "io/model_source.h"
#include "media/admission.h"
#include "media/intake.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

#ifndef QVL_VERSION
#define QVL_VERSION "0.0.0"
#endif

struct qvl_model {
  // The model's memory budget (qvl_model_params.memory_budget): the engine's
  // KV caches for its life, a request's media while it is answered. Declared
  // first, so it outlives the engine that holds a reservation in it.
  std::unique_ptr<qvl::MemoryAdmission> memory;
  std::unique_ptr<qvl::Engine> engine;
  std::mutex mutex;  // generate() is not re-entrant
};

struct qvl_request {
  qvl::GenerateRequest request;
  // Every medium is decoded as it is added, through the intake qvl serve and
  // qvl run use, with its default caps; the request meets a model's memory
  // budget only in qvl_generate (held_media).
  qvl::MediaIntake media{qvl::MediaLimits{}};
  std::atomic<bool> cancel{false};
  std::unordered_map<int32_t, size_t> bias_at;  // token id -> its entry in request.logit_bias
};

namespace qvl::capi {

// C arrays over TokenLogprobs (what qvl_token_logprob and qvl_logprob point
// into): `top` holds every token's alternatives in order, `bytes` every
// entry's token bytes, NUL-separated.
struct LogprobArrays {
  std::vector<qvl_token_logprob> tokens;
  std::vector<qvl_logprob> top;
  std::string bytes;

  void assign(std::span<const qvl::TokenLogprob> lps, const qvl::Tokenizer& tok) {
    tokens.clear();
    top.clear();
    bytes.clear();
    offsets_.clear();
    size_t n_top = 0;
    for (const qvl::TokenLogprob& lp : lps) n_top += lp.top.size();
    tokens.reserve(lps.size());
    top.reserve(n_top);
    auto entry = [&](int32_t id, float logprob) {
      const std::string b = tok.token_bytes(id);
      offsets_.push_back(bytes.size());
      bytes.append(b).push_back('\0');
      return qvl_logprob{id, logprob, nullptr, b.size()};
    };
    for (const qvl::TokenLogprob& lp : lps) {
      qvl_token_logprob t{entry(lp.token, lp.logprob), nullptr, lp.top.size()};
      for (const auto& [id, logprob] : lp.top) top.push_back(entry(id, logprob));
      tokens.push_back(t);
    }
    // Every string is in place: point at it (each token's entry, then its alternatives).
    size_t next = 0, at = 0;
    for (qvl_token_logprob& t : tokens) {
      t.token.bytes = bytes.data() + offsets_[next++];
      t.top = t.n_top ? top.data() + at : nullptr;
      for (size_t k = 0; k < t.n_top; ++k) top[at++].bytes = bytes.data() + offsets_[next++];
    }
  }

 private:
  std::vector<size_t> offsets_;  // [tokens + top] scratch: where each entry's bytes start
};

}  // namespace qvl::capi

// A result's choices as qvl_result_choice shows them: each one's copy of
// the engine's Choice and the qvl_choice over it.
struct qvl_result_choices {
  struct One {
    std::string text, tool_calls_json;
    std::optional<std::string> reasoning;
    const char* finish_reason = "";
    std::vector<int32_t> token_ids;
    qvl::capi::LogprobArrays logprobs;
    qvl_choice view{};
  };
  std::vector<One> choices;
};

namespace {

using json = nlohmann::ordered_json;

thread_local std::string last_error;

// A failure of the caller's making, with its status.
struct StatusError : qvl::Error {
  qvl_status status;
  StatusError(qvl_status s, const std::string& message) : qvl::Error(message), status(s) {}
};

[[noreturn]] void fail_with(qvl_status s, const std::string& message) { throw StatusError(s, message); }

qvl_status set_error(qvl_status s, const std::string& message) {
  last_error = message;
  return s;
}

// Runs `body`, mapping what it throws to a status; `fallback` is the status
// of a plain qvl::Error at this call.
template <typename F>
qvl_status guarded(qvl_status fallback, F&& body) {
  try {
    body();
    return QVL_OK;
  } catch (const StatusError& e) {
    return set_error(e.status, e.what());
  } catch (const qvl::FieldError& e) {
    std::string msg = e.what();
    if (!e.field().empty() && msg.find(e.field()) == std::string::npos) msg = e.field() + ": " + msg;
    return set_error(QVL_ERR_INVALID_ARGUMENT, msg);
  } catch (const qvl::UsageError& e) {
    return set_error(QVL_ERR_INVALID_ARGUMENT, e.what());
  } catch (const qvl::MemoryBudgetExceeded& e) {
    return set_error(QVL_ERR_OUT_OF_MEMORY, qvl::cat(e.what(), " (qvl_model_params.memory_budget)"));
  } catch (const qvl::MediaRefusal& e) {
    return set_error(QVL_ERR_OUT_OF_MEMORY, qvl::cat(e.param(), ": ", e.what(), "; raise qvl_model_params.memory_budget"));
  } catch (const qvl::Error& e) {
    return set_error(fallback, e.what());
  } catch (const std::bad_alloc&) {
    return set_error(QVL_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return set_error(QVL_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return set_error(QVL_ERR_INTERNAL, "internal error: unknown exception");
  }
}

void require(bool ok, const char* what) {
  if (!ok) fail_with(QVL_ERR_INVALID_ARGUMENT, what);
}

std::optional<double> opt(double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); }

char* copy_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

qvl::Message& last_message(qvl_request* r) {
  require(r != nullptr, "request is NULL");
  if (r->request.messages.empty())
    fail_with(QVL_ERR_INVALID_ARGUMENT, "no message to add a part to: call qvl_request_add_message first");
  return r->request.messages.back();
}

void add_image(qvl_request* r, std::shared_ptr<const qvl::Image> image) {
  last_message(r).parts.push_back({"", std::move(image)});
}

void add_video(qvl_request* r, std::shared_ptr<const qvl::Video> video) {
  last_message(r).parts.push_back({"", nullptr, std::move(video)});
}

// A file's bytes for a medium (`kind`: "image", "video", "PDF"); a file that
// cannot be read is QVL_ERR_IO naming it.
std::vector<uint8_t> media_file(const char* path, size_t max_bytes, const char* kind) {
  require(path != nullptr && *path, qvl::cat(kind, " path: empty").c_str());
  try {
    return qvl::read_media_bytes(path, max_bytes);
  } catch (const qvl::Error& e) {
    fail_with(QVL_ERR_IO, qvl::cat(kind, " ", path, ": ", e.what()));
  }
}

// Runs `decode`, a medium that cannot be used being QVL_ERR_INVALID_ARGUMENT
// after `what` ("video", "video clip.mp4").
template <typename F>
auto decoded(const std::string& what, F&& decode) {
  try {
    return decode();
  } catch (const qvl::Error& e) {
    fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat(what, ": ", e.what()));
  }
}

// 8-bit RGB rows at `stride` bytes into a packed image; `what` names it in errors.
qvl::Image rgb_image(const uint8_t* rgb, int32_t width, int32_t height, int32_t stride, const std::string& what) {
  if (rgb == nullptr) fail_with(QVL_ERR_INVALID_ARGUMENT, what + ": rgb is NULL");
  if (width <= 0 || height <= 0) fail_with(QVL_ERR_INVALID_ARGUMENT, what + ": width and height must be positive");
  if (int64_t{width} * height > 100'000'000) fail_with(QVL_ERR_INVALID_ARGUMENT, what + ": over 100 million pixels");
  if (int64_t{stride} < int64_t{width} * 3)
    fail_with(QVL_ERR_INVALID_ARGUMENT, what + ": stride must be at least 3 * width");
  qvl::Image img;
  img.width = width;
  img.height = height;
  const size_t row = size_t(width) * 3;
  img.rgb.resize(row * size_t(height));
  for (int32_t y = 0; y < height; ++y) std::memcpy(img.rgb.data() + row * size_t(y), rgb + size_t(stride) * size_t(y), row);
  return img;
}

// qvl_video_params as the server's video part keys; 0 is unset. Checked as
// every front end checks them (check_video_options); a list of frames
// (`frame_list`) is not sampled: fps and the frame counts are refused.
qvl::VideoOptions video_options(const qvl_video_params* p, bool frame_list) {
  qvl::VideoOptions o;
  if (!p) return o;
  if (p->fps != 0) o.fps = p->fps;
  if (p->min_frames != 0) o.min_frames = p->min_frames;
  if (p->max_frames != 0) o.max_frames = p->max_frames;
  if (p->min_pixels != 0) o.min_pixels = p->min_pixels;
  if (p->max_pixels != 0) o.max_pixels = p->max_pixels;
  if (p->total_pixels != 0) o.total_pixels = p->total_pixels;
  try {
    qvl::check_video_options(o, frame_list);
  } catch (const qvl::VideoOptionError& e) {
    fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("video params: ", e.key(), " ", e.what()));
  }
  return o;
}

// A list of frames' count and rate, checked as qvl serve checks a frame list's.
void check_frame_list(const uint8_t* const* frames, size_t n_frames, double fps) {
  require(frames != nullptr && n_frames > 0, "video: no frames");
  try {
    qvl::check_frame_list(n_frames, fps);
  } catch (const qvl::VideoOptionError& e) {
    fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("video: ", e.key(), " ", e.what()));
  }
}

qvl::PdfRenderRequest pdf_request(const char* pages, double dpi) {
  qvl::PdfRenderRequest r;
  if (pages) r.pages = pages;
  if (dpi != 0) r.dpi = dpi;
  return r;
}

// A medium's bytes through the intake's one entry (the kind decided from
// the bytes as qvl serve and qvl run decide it). Each call names its kind,
// so bytes that say another are refused, naming the call that takes them.
// `what` names it in errors ("image", "PDF doc.pdf").
void add_medium(qvl_request* r, std::span<const uint8_t> bytes, const qvl::MediaHint& hint, const std::string& what) {
  if (const qvl::MediaKind kind = qvl::media_kind(bytes, hint.kind); kind != hint.kind) {
    const char* call = kind == qvl::MediaKind::Pdf     ? "qvl_request_add_pdf"
                       : kind == qvl::MediaKind::Video ? "qvl_request_add_video"
                                                       : "qvl_request_add_image";
    fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat(what, ": the bytes are a ", qvl::media_kind_name(kind), ", not a ",
                                                 qvl::media_kind_name(hint.kind), " (", call, " takes them)"));
  }
  qvl::MediaIntake::Medium m = decoded(what, [&] { return r->media.take(bytes, hint, what); });
  for (std::shared_ptr<const qvl::Image>& image : m.images) add_image(r, std::move(image));
  if (m.video) add_video(r, std::move(m.video));
}

qvl::MediaHint hint_of(qvl::MediaKind kind, qvl::VideoOptions video = {}, qvl::PdfRenderRequest pdf = {}) {
  return {kind, std::move(video), std::move(pdf)};
}

void add_pdf(qvl_request* r, std::span<const uint8_t> bytes, const char* pages, double dpi, const std::string& what) {
  add_medium(r, bytes, hint_of(qvl::MediaKind::Pdf, {}, pdf_request(pages, dpi)), what);
}

void parse_tools(const char* text, qvl::GenerateRequest& g) {
  json tools;
  try {
    tools = json::parse(text);
  } catch (const json::parse_error& e) {
    fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("tools: not valid JSON (", e.what(), ")"));
  }
  if (!tools.is_array()) fail_with(QVL_ERR_INVALID_ARGUMENT, "tools: must be a JSON array of tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string p = qvl::cat("tools[", i, "]");
    json t = tools[i];
    if (!t.is_object()) fail_with(QVL_ERR_INVALID_ARGUMENT, p + ": must be an object");
    if (!t.contains("function") && t.contains("name"))  // a bare function object
      t = json{{"type", "function"}, {"function", t}};
    if (t.contains("type") && t["type"] != "function")
      fail_with(QVL_ERR_UNSUPPORTED, p + ".type: only \"function\" tools are supported");
    const json& fn = t["function"];
    if (!fn.is_object() || !fn.contains("name") || !fn["name"].is_string())
      fail_with(QVL_ERR_INVALID_ARGUMENT, p + ".function.name: a tool needs a function with a string name");
    qvl::Tool tool;
    tool.name = fn["name"].get<std::string>();
    if (fn.contains("parameters") && !fn["parameters"].is_null()) {
      if (!fn["parameters"].is_object())
        fail_with(QVL_ERR_INVALID_ARGUMENT, p + ".function.parameters: must be a JSON Schema object");
      tool.parameters = fn["parameters"].dump();
    }
    tool.definition = t.dump();
    g.tools.push_back(std::move(tool));
  }
}

std::string tool_calls_json(const std::vector<qvl::ToolCall>& calls) {
  json out = json::array();
  for (const qvl::ToolCall& c : calls)
    out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

const char* reason_name(const qvl::Choice& c) { return qvl::finish_reason_name(c.finish_reason); }

qvl_result_choices* copy_choices(const qvl::GenerateResult& r, const qvl::Tokenizer& tok) {
  auto all = std::make_unique<qvl_result_choices>();
  all->choices.resize(r.choices());
  for (size_t i = 0; i < r.choices(); ++i) {
    const qvl::Choice& c = r.choice(i);
    qvl_result_choices::One& o = all->choices[i];
    o.text = c.text;
    o.finish_reason = reason_name(c);
    o.tool_calls_json = tool_calls_json(c.tool_calls);
    o.token_ids = c.token_ids;
    o.logprobs.assign(c.logprobs, tok);
    qvl_choice& v = o.view;
    v.text = o.text.c_str();
    v.text_len = o.text.size();
    v.finish_reason = o.finish_reason;
    v.token_ids = o.token_ids.data();
    v.n_token_ids = o.token_ids.size();
    v.tool_calls_json = o.tool_calls_json.c_str();
    v.logprobs = c.logprobs.empty() ? nullptr : o.logprobs.tokens.data();
    v.n_logprobs = o.logprobs.tokens.size();
    v.repetition_period = c.repetition_period;
    o.reasoning = c.reasoning;
    v.reasoning = o.reasoning ? o.reasoning->c_str() : nullptr;
    v.reasoning_len = o.reasoning ? o.reasoning->size() : 0;
    v.reasoning_tokens = c.reasoning_tokens;
  }
  return all.release();
}

// What the caller streams: qvl_generate's text callback or
// qvl_generate_deltas' delta callback.
struct CCallbacks {
  qvl_text_callback on_text = nullptr;
  qvl_delta_callback on_delta = nullptr;
  void* user_data = nullptr;
};

// The engine's raw pieces to the C callbacks. A Thinking model's raw answer
// is reasoning, "</think>", reply: each choice's pieces go through a
// ReasoningSplitter, as qvl serve's streams do, so on_text gets the reply
// only (what qvl_result.text holds) and a delta tells the two apart.
class CStream {
 public:
  CStream(const CCallbacks& c, bool thinking, const qvl::Tokenizer& tok) : c_(c), thinking_(thinking), tok_(tok) {}

  qvl::GenerateCallbacks callbacks() {
    qvl::GenerateCallbacks cb;
    if (c_.on_text || c_.on_delta)
      cb.on_delta = [this](const qvl::ChoiceDelta& d) {
        if (!thinking_) return deliver(d.choice, {"", std::string(d.text)}, d.logprob);
        return deliver(d.choice, splitter(d.choice).push(d.text), d.logprob);
      };
    return cb;
  }
  // The end of the answer: what each splitter held back (a tail that might
  // have been the start of "</think>").
  void finish() {
    for (size_t i = 0; i < splitters_.size(); ++i) deliver(static_cast<int>(i), splitters_[i].finish(), nullptr);
  }

 private:
  qvl::ReasoningSplitter& splitter(int choice) {
    if (static_cast<size_t>(choice) >= splitters_.size()) splitters_.resize(choice + 1);
    return splitters_[choice];
  }
  bool deliver(int choice, const qvl::ReasoningSplitter::Pieces& p, const qvl::TokenLogprob* logprob) {
    bool go = true;
    if (c_.on_delta && (!p.content.empty() || !p.reasoning.empty() || logprob)) {
      qvl_delta d{choice, p.content.data(), p.content.size(), nullptr,
                  p.reasoning.empty() ? nullptr : p.reasoning.data(), p.reasoning.size()};
      if (logprob) {
        lp_.assign({logprob, 1}, tok_);
        d.logprob = lp_.tokens.data();
      }
      go = c_.on_delta(&d, c_.user_data) == 0;
    }
    if (choice == 0 && c_.on_text && !p.content.empty())
      go = c_.on_text(p.content.data(), p.content.size(), c_.user_data) == 0 && go;
    return go;
  }

  CCallbacks c_;
  bool thinking_;
  const qvl::Tokenizer& tok_;
  std::vector<qvl::ReasoningSplitter> splitters_;
  qvl::capi::LogprobArrays lp_;  // one token's, rebuilt for each delta that has one
};

// The request's decoded images and videos counted in the model's budget for
// as long as it is answered; refused (MediaRefusal) when they cannot fit
// beside the KV caches. Never waits: the model answers one request at a time.
std::optional<qvl::MemoryAdmission::Reservation> held_media(qvl::MemoryAdmission& memory, const qvl::GenerateRequest& r) {
  uint64_t bytes = 0;
  for (const qvl::Message& m : r.messages)
    for (const qvl::MessagePart& p : m.parts) {
      if (p.image) bytes += qvl::held_bytes(*p.image);
      if (p.video) bytes += qvl::held_bytes(*p.video);
    }
  if (bytes == 0) return std::nullopt;
  if (const uint64_t room = memory.media_budget(); bytes > room)
    fail_with(QVL_ERR_OUT_OF_MEMORY,
              qvl::cat("the request's images and videos take ", bytes, " bytes decoded, over the ", room, " bytes (",
                       qvl::mebibytes(room), ") the memory budget leaves beside the KV caches; send smaller or "
                       "fewer, or raise qvl_model_params.memory_budget"));
  return memory.reserve(bytes, 0, qvl::MemoryAdmission::Clock::now(), "the request's images and videos");
}

// qvl_generate and qvl_generate_deltas: one request answered, the result
// copied into C memory.
qvl_status generate(qvl_model* model, qvl_request* request, const CCallbacks& callbacks, qvl_result* out) {
  if (out) std::memset(out, 0, sizeof *out);
  return guarded(QVL_ERR_MODEL, [&] {
    require(model != nullptr && model->engine, "model is NULL");
    require(request != nullptr, "request is NULL");
    require(out != nullptr, "qvl_generate: out is NULL");
    require(!request->request.messages.empty(), "messages: the request has no message");
    std::lock_guard<std::mutex> lock(model->mutex);
    qvl::Engine& engine = *model->engine;
    const std::optional<qvl::MemoryAdmission::Reservation> media = held_media(*model->memory, request->request);
    engine.validate(request->request);
    CStream stream(callbacks, engine.info().thinking, engine.tokenizer());
    qvl::GenerateResult r = engine.generate(request->request, stream.callbacks());
    stream.finish();
    qvl_result res;
    std::memset(&res, 0, sizeof res);
    try {
      res.text = copy_string(r.text);
      res.text_len = r.text.size();
      res.finish_reason = copy_string(reason_name(r));
      res.tool_calls_json = copy_string(tool_calls_json(r.tool_calls));
      res.n_token_ids = r.token_ids.size();
      res.token_ids = static_cast<int32_t*>(std::malloc(sizeof(int32_t) * (r.token_ids.size() + 1)));
      if (!res.token_ids) throw std::bad_alloc();
      if (!r.token_ids.empty()) std::memcpy(res.token_ids, r.token_ids.data(), sizeof(int32_t) * r.token_ids.size());
      res.choices = copy_choices(r, engine.tokenizer());
      res.n_choices = r.choices();
      if (r.reasoning) {
        res.reasoning = copy_string(*r.reasoning);
        res.reasoning_len = r.reasoning->size();
      }
      res.reasoning_tokens = r.reasoning_tokens;
    } catch (...) {
      qvl_result_free(&res);
      throw;
    }
    res.prompt_tokens = r.prompt_tokens;
    res.cached_tokens = r.cached_tokens;
    res.completion_tokens = r.completion_tokens;
    res.prefill_ms = r.timings.prefill_ms;
    res.decode_ms = r.timings.decode_ms;
    *out = res;
    if (request->cancel.load() && r.finish_reason == qvl::FinishReason::Cancelled)
      fail_with(QVL_ERR_CANCELLED, "cancelled (qvl_request_cancel)");
  });
}

}  // namespace

extern "C" {

const char* qvl_version(void) { return QVL_VERSION; }

const char* qvl_last_error(void) { return last_error.c_str(); }

const char* qvl_status_name(qvl_status status) {
  switch (status) {
    case QVL_OK: return "QVL_OK";
    case QVL_ERR_INVALID_ARGUMENT: return "QVL_ERR_INVALID_ARGUMENT";
    case QVL_ERR_IO: return "QVL_ERR_IO";
    case QVL_ERR_MODEL: return "QVL_ERR_MODEL";
    case QVL_ERR_UNSUPPORTED: return "QVL_ERR_UNSUPPORTED";
    case QVL_ERR_CANCELLED: return "QVL_ERR_CANCELLED";
    case QVL_ERR_OUT_OF_MEMORY: return "QVL_ERR_OUT_OF_MEMORY";
    case QVL_ERR_INTERNAL: return "QVL_ERR_INTERNAL";
  }
  return "QVL_ERR_UNKNOWN";
}

qvl_model_params qvl_model_default_params(void) {
  qvl_model_params p;
  std::memset(&p, 0, sizeof p);
  p.weights = QVL_WEIGHTS_AUTO;
  p.threads = 0;
  p.ctx_size = 8192;
  p.image_cache_bytes = int64_t{256} << 20;
  p.revision = nullptr;
  p.offline = 0;
  p.progress = 1;
  return p;
}

qvl_status qvl_model_load(const char* path_or_repo, const qvl_model_params* params, qvl_model** out) {
  if (out) *out = nullptr;
  return guarded(QVL_ERR_MODEL, [&] {
    require(out != nullptr, "qvl_model_load: out is NULL");
    require(path_or_repo != nullptr && *path_or_repo, "qvl_model_load: the model path is empty");
    const qvl_model_params p = params ? *params : qvl_model_default_params();
    qvl::EngineParams ep;
    switch (p.weights) {
      case QVL_WEIGHTS_BF16: ep.weights = qvl::WeightFormat::BF16; break;
      case QVL_WEIGHTS_F32: ep.weights = qvl::WeightFormat::F32; break;
      case QVL_WEIGHTS_Q8: ep.weights = qvl::WeightFormat::Q8; break;
      case QVL_WEIGHTS_Q4: ep.weights = qvl::WeightFormat::Q4; break;
      case QVL_WEIGHTS_AUTO: break;  // Engine::create applies default_weight_format
      default: fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("weights: unknown qvl_weights value ", p.weights));
    }
    require(p.threads >= 0 && p.threads <= 1024, "threads: must be in [0, 1024]");
    require(p.ctx_size >= 16, "ctx_size: must be at least 16");
    require(p.min_pixels >= 0 && p.max_pixels >= 0, "min_pixels, max_pixels: must not be negative");
    require(p.image_cache_bytes >= 0, "image_cache_bytes: must not be negative");
    ep.threads = p.threads;
    ep.ctx_size = p.ctx_size;
    ep.min_pixels = p.min_pixels;
    ep.max_pixels = p.max_pixels;
    ep.image_cache_bytes = static_cast<size_t>(p.image_cache_bytes);
    require(p.memory_budget == 0 || p.memory_budget >= (int64_t{1} << 20),
            "memory_budget: must be 0 (the KV caches plus 1 GiB) or at least 1 MiB (1048576)");

    qvl::ModelSourceOptions source;
    if (p.revision && *p.revision) source.revision = p.revision;
    source.offline = p.offline != 0;
    source.progress = p.progress != 0;
    try {
      ep.model_dir = qvl::resolve_model(path_or_repo, source);
    } catch (const qvl::Error& e) {  // no such folder, or the download failed
      std::string msg = e.what();
      if (msg.rfind("--model ", 0) == 0) msg = "model " + msg.substr(8);  // the resolver speaks to the CLI
      fail_with(QVL_ERR_IO, msg);
    }
    std::unique_ptr<qvl_model> m(new qvl_model);
    qvl::MemoryAdmissionOptions budget;
    if (p.memory_budget > 0) budget.memory_budget_bytes = static_cast<uint64_t>(p.memory_budget);
    budget.time_limit_s = 0;  // nothing waits: one request at a time
    m->memory = std::make_unique<qvl::MemoryAdmission>(budget);
    ep.memory = m->memory.get();
    try {
      m->engine = qvl::Engine::create(ep);
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const qvl::MemoryBudgetExceeded&) {
      throw;
    } catch (const std::exception& e) {
      fail_with(QVL_ERR_MODEL, qvl::cat("model ", ep.model_dir, ": ", e.what()));
    }
    *out = m.release();
  });
}

void qvl_model_free(qvl_model* model) { delete model; }

qvl_weights qvl_model_weights(const qvl_model* model) {
  if (!model) return QVL_WEIGHTS_AUTO;
  switch (model->engine->info().weights) {
    case qvl::WeightFormat::BF16: return QVL_WEIGHTS_BF16;
    case qvl::WeightFormat::F32: return QVL_WEIGHTS_F32;
    case qvl::WeightFormat::Q8: return QVL_WEIGHTS_Q8;
    case qvl::WeightFormat::Q4: return QVL_WEIGHTS_Q4;
  }
  return QVL_WEIGHTS_AUTO;
}

int qvl_model_thinking(const qvl_model* model) { return model && model->engine->info().thinking ? 1 : 0; }

qvl_request_params qvl_request_default_params(void) {
  qvl_request_params p;
  std::memset(&p, 0, sizeof p);
  p.temperature = NAN;
  p.top_p = NAN;
  p.min_p = NAN;
  p.top_k = -1;
  p.repetition_penalty = NAN;
  p.presence_penalty = NAN;
  p.frequency_penalty = NAN;
  p.seed = -1;
  p.max_tokens = 0;
  p.response_format = QVL_FORMAT_TEXT;
  p.tool_choice = QVL_TOOL_CHOICE_AUTO;
  p.parallel_tool_calls = 1;
  p.n = 1;
  p.top_logprobs = -1;
  p.repetition_guard = -1;
  p.repetition_guard_repeats = -1;
  p.reasoning_budget = -1;
  return p;
}

qvl_status qvl_request_init(const qvl_request_params* params, qvl_request** out) {
  if (out) *out = nullptr;
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    require(out != nullptr, "qvl_request_init: out is NULL");
    const qvl_request_params p = params ? *params : qvl_request_default_params();
    std::unique_ptr<qvl_request> r(new qvl_request);
    qvl::GenerateRequest& g = r->request;
    qvl::SamplingParams& s = g.sampling;
    require(std::isnan(p.temperature) || (p.temperature >= 0 && p.temperature <= 100), "temperature: must be in [0, 100]");
    require(std::isnan(p.top_p) || (p.top_p > 0 && p.top_p <= 1), "top_p: must be in (0, 1]");
    require(std::isnan(p.min_p) || (p.min_p >= 0 && p.min_p <= 1), "min_p: must be in [0, 1]");
    require(p.top_k >= -1, "top_k: must be -1 (unset), 0 (off) or a count");
    require(std::isnan(p.repetition_penalty) || p.repetition_penalty > 0, "repetition_penalty: must be positive");
    require(p.seed >= -1, "seed: must be -1 (random) or not negative");
    require(p.max_tokens >= 0, "max_tokens: must not be negative");
    require(p.n >= 1, "n: must be at least 1 (the answers to the prompt)");
    require(p.top_logprobs >= -1, "top_logprobs: must be -1 (no logprobs) or a count");
    require(p.repetition_guard >= -1, "repetition_guard: must be -1 (the default), 0 (off) or a token count");
    require(p.repetition_guard_repeats == -1 || (p.repetition_guard_repeats >= 2 && p.repetition_guard_repeats <= 1000),
            "repetition_guard_repeats: must be -1 (the default) or in [2, 1000]");
    require(p.reasoning_budget >= -1, "reasoning_budget: must be -1 (no limit) or a token count");
    // Whether the model reasons is the engine's to check (Engine::validate).
    if (p.reasoning_budget >= 0) g.reasoning_budget = p.reasoning_budget;
    s.temperature = opt(p.temperature);
    s.top_p = opt(p.top_p);
    s.min_p = opt(p.min_p);
    if (p.top_k >= 0) s.top_k = p.top_k;
    s.repetition_penalty = opt(p.repetition_penalty);
    s.presence_penalty = opt(p.presence_penalty);
    s.frequency_penalty = opt(p.frequency_penalty);
    if (p.seed >= 0) s.seed = static_cast<uint64_t>(p.seed);
    g.max_tokens = p.max_tokens;
    g.ignore_eos = p.ignore_eos != 0;
    g.cancel = &r->cancel;
    g.n = p.n;  // its upper bound, like top_logprobs', is the engine's (Engine::validate)
    g.top_logprobs = p.top_logprobs;
    if (p.repetition_guard >= 0) g.repetition_guard.window = p.repetition_guard;
    if (p.repetition_guard_repeats >= 0) g.repetition_guard.min_repeats = p.repetition_guard_repeats;
    require(p.min_pixels >= 0 && p.max_pixels >= 0, "min_pixels/max_pixels: must be 0 (the model's) or positive");
    g.min_pixels = p.min_pixels;
    g.max_pixels = p.max_pixels;
    switch (p.response_format) {
      case QVL_FORMAT_TEXT: break;
      case QVL_FORMAT_JSON_OBJECT: g.response_format.type = qvl::ResponseFormat::Type::JsonObject; break;
      case QVL_FORMAT_JSON_SCHEMA:
        require(p.json_schema != nullptr && *p.json_schema, "json_schema: QVL_FORMAT_JSON_SCHEMA needs a schema");
        g.response_format = {qvl::ResponseFormat::Type::JsonSchema, p.json_schema};
        break;
      default: fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("response_format: unknown value ", p.response_format));
    }
    if (p.tools_json && *p.tools_json) parse_tools(p.tools_json, g);
    switch (p.tool_choice) {
      case QVL_TOOL_CHOICE_AUTO: g.tool_choice = qvl::ToolChoice::Auto; break;
      case QVL_TOOL_CHOICE_NONE: g.tool_choice = qvl::ToolChoice::None; break;
      case QVL_TOOL_CHOICE_REQUIRED: g.tool_choice = qvl::ToolChoice::Required; break;
      case QVL_TOOL_CHOICE_FUNCTION:
        require(p.tool_choice_name != nullptr && *p.tool_choice_name,
                "tool_choice_name: QVL_TOOL_CHOICE_FUNCTION needs a function name");
        g.tool_choice = qvl::ToolChoice::Function;
        g.tool_choice_name = p.tool_choice_name;
        break;
      default: fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("tool_choice: unknown value ", p.tool_choice));
    }
    g.parallel_tool_calls = p.parallel_tool_calls != 0;
    *out = r.release();
  });
}

void qvl_request_free(qvl_request* request) { delete request; }

qvl_status qvl_request_add_message(qvl_request* request, const char* role, const char* text) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    require(request != nullptr, "request is NULL");
    require(role != nullptr, "role: NULL");
    const std::string r = role;
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      fail_with(QVL_ERR_INVALID_ARGUMENT, "role: '" + r + "' is not system, user, assistant or tool");
    qvl::Message m{r, {}, {}};
    if (text) m.parts.push_back({text, nullptr});
    request->request.messages.push_back(std::move(m));
  });
}

qvl_status qvl_request_add_text(qvl_request* request, const char* text) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    require(text != nullptr, "text: NULL");
    last_message(request).parts.push_back({text, nullptr});
  });
}

qvl_status qvl_request_add_image(qvl_request* request, const uint8_t* bytes, size_t len) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    require(bytes != nullptr && len > 0, "image: no bytes");
    add_medium(request, {bytes, len}, hint_of(qvl::MediaKind::Image), "image");
  });
}

qvl_status qvl_request_add_image_file(qvl_request* request, const char* path) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    const std::vector<uint8_t> bytes = media_file(path, qvl::max_media_bytes(request->media.limits()), "image");
    add_medium(request, bytes, hint_of(qvl::MediaKind::Image), qvl::cat("image ", path));
  });
}

qvl_status qvl_request_add_image_rgb(qvl_request* request, const uint8_t* rgb, int32_t width, int32_t height,
                                     int32_t stride) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    add_image(request, std::make_shared<const qvl::Image>(rgb_image(rgb, width, height, stride, "image")));
  });
}

qvl_video_params qvl_video_default_params(void) {
  qvl_video_params p;
  std::memset(&p, 0, sizeof p);
  return p;
}

qvl_status qvl_request_add_video(qvl_request* request, const uint8_t* bytes, size_t len, const qvl_video_params* params) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    require(bytes != nullptr && len > 0, "video: no bytes");
    const qvl::VideoOptions options = video_options(params, false);
    add_medium(request, {bytes, len}, hint_of(qvl::MediaKind::Video, options), "video");
  });
}

qvl_status qvl_request_add_video_file(qvl_request* request, const char* path, const qvl_video_params* params) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    const qvl::VideoOptions options = video_options(params, false);
    const std::vector<uint8_t> bytes = media_file(path, qvl::max_media_bytes(request->media.limits()), "video");
    add_medium(request, bytes, hint_of(qvl::MediaKind::Video, options), qvl::cat("video ", path));
  });
}

qvl_status qvl_request_add_video_frames(qvl_request* request, const uint8_t* const* frames, const size_t* lens,
                                        size_t n_frames, double fps, const qvl_video_params* params) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    require(lens != nullptr, "video: lens is NULL");
    check_frame_list(frames, n_frames, fps);
    for (size_t k = 0; k < n_frames; ++k)
      if (!frames[k] || lens[k] == 0) fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("video: frame ", k, " has no bytes"));
    const qvl::VideoOptions options = video_options(params, true);
    const auto frame_bytes = [&](size_t k) { return std::vector<uint8_t>(frames[k], frames[k] + lens[k]); };
    add_video(request, decoded("video", [&] { return request->media.frames(n_frames, frame_bytes, fps, options, "video"); }));
  });
}

qvl_status qvl_request_add_video_rgb(qvl_request* request, const uint8_t* const* frames, size_t n_frames, int32_t width,
                                     int32_t height, int32_t stride, double fps, const qvl_video_params* params) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    check_frame_list(frames, n_frames, fps);
    const qvl::VideoOptions options = video_options(params, true);
    std::vector<qvl::Image> rgb;
    rgb.reserve(n_frames);
    for (size_t k = 0; k < n_frames; ++k) rgb.push_back(rgb_image(frames[k], width, height, stride, qvl::cat("video frame ", k)));
    add_video(request, decoded("video", [&] { return request->media.frames(std::move(rgb), fps, options, "video"); }));
  });
}

qvl_status qvl_request_add_pdf(qvl_request* request, const uint8_t* bytes, size_t len, const char* pages, double dpi) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    require(bytes != nullptr && len > 0, "PDF: no bytes");
    add_pdf(request, {bytes, len}, pages, dpi, "PDF");
  });
}

qvl_status qvl_request_add_pdf_file(qvl_request* request, const char* path, const char* pages, double dpi) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    last_message(request);
    const std::vector<uint8_t> bytes = media_file(path, qvl::max_media_bytes(request->media.limits()), "PDF");
    add_pdf(request, bytes, pages, dpi, qvl::cat("PDF ", path));
  });
}

qvl_status qvl_request_add_tool_call(qvl_request* request, const char* id, const char* name, const char* arguments) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    qvl::Message& m = last_message(request);
    require(m.role == "assistant", "tool call: the last message must be an assistant message");
    require(name != nullptr && *name, "tool call: name is empty");
    m.tool_calls.push_back({id ? id : "", name, arguments && *arguments ? arguments : "{}"});
  });
}

qvl_status qvl_request_add_stop(qvl_request* request, const char* stop) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    require(request != nullptr, "request is NULL");
    require(stop != nullptr && *stop, "stop: empty string");
    request->request.stop.emplace_back(stop);
  });
}

qvl_status qvl_request_add_logit_bias(qvl_request* request, int32_t token_id, float bias) {
  return guarded(QVL_ERR_INVALID_ARGUMENT, [&] {
    require(request != nullptr, "request is NULL");
    if (token_id < 0) fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("logit_bias: token id ", token_id, " is negative"));
    if (!(bias >= -100 && bias <= 100))
      fail_with(QVL_ERR_INVALID_ARGUMENT,
                qvl::cat("logit_bias: the bias of token ", token_id, " must be in [-100, 100], got ", bias));
    auto& biases = request->request.logit_bias;
    const auto [at, added] = request->bias_at.try_emplace(token_id, biases.size());
    if (added) biases.emplace_back(token_id, bias);
    else biases[at->second].second = bias;
  });
}

void qvl_request_cancel(qvl_request* request) {
  if (request) request->cancel.store(true);
}

qvl_status qvl_generate(qvl_model* model, qvl_request* request, qvl_text_callback on_text, void* user_data,
                        qvl_result* out) {
  return generate(model, request, {on_text, nullptr, user_data}, out);
}

qvl_status qvl_generate_deltas(qvl_model* model, qvl_request* request, qvl_delta_callback on_delta, void* user_data,
                               qvl_result* out) {
  return generate(model, request, {nullptr, on_delta, user_data}, out);
}

namespace {

// A request used as a retrieval input (qvl.h): its "user" parts, and a
// "system" message's text as its instruction.
qvl::RetrievalInput retrieval_input(const qvl_request* r, const std::string& what) {
  require(r != nullptr, qvl::cat(what, ": NULL").c_str());
  qvl::RetrievalInput in;
  for (const qvl::Message& m : r->request.messages) {
    if (m.role == "system") {
      std::string text;
      for (const qvl::MessagePart& p : m.parts) {
        if (p.image || p.video) fail_with(QVL_ERR_INVALID_ARGUMENT, what + ": an image or video in its system message");
        text += p.text;
      }
      in.instruction = text;
    } else if (m.role == "user") {
      for (const qvl::MessagePart& p : m.parts) {
        if (p.image) in.images.push_back(p.image);
        else if (p.video) in.videos.push_back(p.video);
        else in.texts.push_back(p.text);
      }
    } else {
      fail_with(QVL_ERR_INVALID_ARGUMENT, what + ": a '" + m.role + "' message; an input has a user message and "
                                                 "optionally a system message (its instruction)");
    }
  }
  return in;
}

std::vector<qvl::RetrievalInput> retrieval_inputs(qvl_request* const* requests, size_t n, const char* what) {
  require(requests != nullptr || n == 0, qvl::cat(what, ": NULL").c_str());
  std::vector<qvl::RetrievalInput> out;
  for (size_t i = 0; i < n; ++i) out.push_back(retrieval_input(requests[i], qvl::cat(what, "[", i, "]")));
  return out;
}

}  // namespace

qvl_embed_params qvl_embed_default_params(void) { return qvl_embed_params{nullptr, 0}; }

int64_t qvl_model_hidden_size(const qvl_model* model) { return model ? model->engine->info().hidden_size : 0; }

qvl_status qvl_embed(qvl_model* model, qvl_request* const* inputs, size_t n, const qvl_embed_params* params,
                     float* out, size_t out_len, int64_t* prompt_tokens) {
  return guarded(QVL_ERR_MODEL, [&] {
    require(model != nullptr, "model is NULL");
    const qvl_embed_params p = params ? *params : qvl_embed_default_params();
    qvl::EmbedOptions o;
    if (p.instruction) o.instruction = p.instruction;
    o.dimensions = p.dimensions;
    const int64_t hidden = model->engine->info().hidden_size;
    const size_t dims = static_cast<size_t>(p.dimensions > 0 ? p.dimensions : hidden);
    if (p.dimensions < 0 || p.dimensions > hidden)
      fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("dimensions: must be in [1, ", hidden, "] (or 0), got ", p.dimensions));
    require(out != nullptr || n == 0, "out: NULL");
    if (out_len < n * dims)
      fail_with(QVL_ERR_INVALID_ARGUMENT, qvl::cat("out_len: ", out_len, " floats hold fewer than ", n, " inputs x ",
                                                   dims, " dimensions"));
    std::vector<qvl::RetrievalInput> in = retrieval_inputs(inputs, n, "inputs");
    std::lock_guard lock(model->mutex);
    const qvl::EmbedResult r = qvl::embed(*model->engine, in, o);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(out + i * dims, r.embeddings[i].data(), dims * sizeof(float));
      if (prompt_tokens) prompt_tokens[i] = r.prompt_tokens[i];
    }
  });
}

qvl_status qvl_rerank(qvl_model* model, qvl_request* query, qvl_request* const* documents, size_t n,
                      const char* instruction, double* scores, double* logits) {
  return guarded(QVL_ERR_MODEL, [&] {
    require(model != nullptr, "model is NULL");
    require(scores != nullptr || n == 0, "scores: NULL");
    const qvl::RetrievalInput q = retrieval_input(query, "query");
    std::vector<qvl::RetrievalInput> docs = retrieval_inputs(documents, n, "documents");
    qvl::RerankOptions o;
    if (instruction) o.instruction = instruction;
    std::lock_guard lock(model->mutex);
    const qvl::RerankResult r = qvl::rerank(*model->engine, q, docs, o);
    for (size_t i = 0; i < n; ++i) {
      scores[i] = r.scores[i].score;
      if (logits) logits[i] = r.scores[i].logit;
    }
  });
}

const qvl_choice* qvl_result_choice(const qvl_result* result, size_t i) {
  if (!result || !result->choices || i >= result->choices->choices.size()) return nullptr;
  return &result->choices->choices[i].view;
}

void qvl_result_free(qvl_result* result) {
  if (!result) return;
  std::free(result->text);
  std::free(result->finish_reason);
  std::free(result->token_ids);
  std::free(result->tool_calls_json);
  std::free(result->reasoning);
  delete result->choices;
  std::memset(result, 0, sizeof *result);
}

}  // extern "C"
