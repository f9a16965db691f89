#include "server/video_input.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <string_view>

#include "server/api_error.h"
#include "util/error.h"
#include "util/json_number.h"

namespace qvl {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// The sampling keys of qwen-vl-utils' video part, which vLLM's
// mm_processor_kwargs takes too (media/intake.h's VideoOptions).
constexpr std::array<std::string_view, 6> kSamplingKeys = {"fps",        "min_frames", "max_frames",
                                                          "min_pixels", "max_pixels", "total_pixels"};

// A key's path inside the part `param`; a part that is the whole body
// (POST /v1/qvl/videos/frames) has no name of its own.
std::string sub(const std::string& param, const std::string& key) { return param.empty() ? key : param + "." + key; }

[[noreturn]] void unsupported(const std::string& param, const std::string& message) {
  bad_request(param, message, "unsupported_parameter");
}

int64_t integer_key(const json& v, const std::string& param, int64_t lo, int64_t hi) {
  int64_t x = 0;
  switch (json_integer(v, lo, hi, x)) {
    case NumberCheck::ok: return x;
    case NumberCheck::not_a_number:
    case NumberCheck::not_an_integer: bad_request(param, cat("'", param, "' must be an integer"), "invalid_type");
    default: bad_request(param, cat("'", param, "' must be in [", lo, ", ", hi, "], got ", v.dump()));
  }
}

double number_key(const json& v, const std::string& param, double lo, double hi) {
  double x = 0;
  switch (json_double(v, lo, hi, x)) {
    case NumberCheck::ok: return x;
    case NumberCheck::not_a_number: bad_request(param, cat("'", param, "' must be a number"), "invalid_type");
    default: bad_request(param, cat("'", param, "' must be in [", lo, ", ", hi, "], got ", v.dump()));
  }
}

// One sampling key into `o`, its type checked (its range is
// check_video_options'); false when `key` is not one.
bool sampling_key(const std::string& key, const json& v, const std::string& param, VideoOptions& o) {
  constexpr double kAnyDouble = std::numeric_limits<double>::max();
  constexpr int64_t kAnyInteger = std::numeric_limits<int64_t>::max();
  if (v.is_null()) return std::find(kSamplingKeys.begin(), kSamplingKeys.end(), key) != kSamplingKeys.end();
  if (key == "fps") o.fps = number_key(v, param, -kAnyDouble, kAnyDouble);
  else if (key == "min_frames") o.min_frames = integer_key(v, param, -kAnyInteger, kAnyInteger);
  else if (key == "max_frames") o.max_frames = integer_key(v, param, -kAnyInteger, kAnyInteger);
  else if (key == "min_pixels") o.min_pixels = integer_key(v, param, -kAnyInteger, kAnyInteger);
  else if (key == "max_pixels") o.max_pixels = integer_key(v, param, -kAnyInteger, kAnyInteger);
  else if (key == "total_pixels") o.total_pixels = integer_key(v, param, -kAnyInteger, kAnyInteger);
  else return false;
  return true;
}

// check_video_options (media/video_options.h), its refusal naming the key
// inside `param` (the part, or mm_processor_kwargs).
void check_options(const VideoOptions& o, bool frame_list, const std::string& param) {
  try {
    check_video_options(o, frame_list);
  } catch (const VideoOptionError& e) {
    const std::string key = sub(param, e.key());
    bad_request(key, cat("'", key, "' ", e.what()), e.frame_list_key() ? "unsupported_parameter" : "invalid_value");
  }
}

std::string url_of(const json& v, const std::string& param) {
  if (!v.is_string()) bad_request(param, cat("'", param, "' must be a string URL"), "invalid_type");
  return v.get<std::string>();
}

}  // namespace

VideoOptions parse_mm_processor_kwargs(const json& kwargs) {
  if (!kwargs.is_object())
    bad_request("mm_processor_kwargs", "'mm_processor_kwargs' must be an object", "invalid_type");
  VideoOptions o;
  for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
    const std::string param = "mm_processor_kwargs." + it.key();
    if (!sampling_key(it.key(), it.value(), param, o))
      unsupported(param, cat("unknown or unsupported key '", it.key().substr(0, 80),
                             "' in 'mm_processor_kwargs' (fps, min_frames, max_frames, min_pixels, max_pixels and "
                             "total_pixels are supported)"));
  }
  check_options(o, false, "mm_processor_kwargs");
  return o;
}

PendingVideo parse_video_part(const json& part, const std::string& param, const VideoOptions& defaults) {
  PendingVideo v;
  v.param = param;
  const std::string& type = part.at("type").get_ref<const std::string&>();
  VideoOptions own;  // the part's keys, which win over mm_processor_kwargs
  for (auto it = part.begin(); it != part.end(); ++it) {
    const std::string& key = it.key();
    if (key == "type" || (type == "video_url" && key == "video_url") || (type == "video" && key == "video")) continue;
    if (type == "video" && key == "sample_fps") {
      if (!it->is_null()) v.sample_fps = number_key(*it, sub(param, "sample_fps"), -1e308, 1e308);
      continue;
    }
    if (!sampling_key(key, *it, sub(param, key), own))
      unsupported(sub(param, key), cat("unknown field '", key.substr(0, 80), "' in a ", type, " part"));
  }
  const std::string key = type == "video_url" ? "video_url" : "video";
  const auto src = part.find(key);
  if (src == part.end() || src->is_null())
    bad_request(sub(param, key), cat("a ", type, " part needs '", key, "'"), "missing_field");
  if (type == "video_url") {
    if (src->is_object()) {
      for (auto it = src->begin(); it != src->end(); ++it)
        if (it.key() != "url")
          unsupported(sub(param, "video_url." + it.key()), cat("unknown field '", it.key(), "' in 'video_url'"));
      const auto u = src->find("url");
      if (u == src->end()) bad_request(sub(param, "video_url.url"), "'video_url' needs 'url'", "missing_field");
      v.url_params.push_back(sub(param, "video_url.url"));
      v.urls.push_back(url_of(*u, v.url_params.back()));
    } else {
      v.url_params.push_back(sub(param, "video_url"));
      v.urls.push_back(url_of(*src, v.url_params.back()));
    }
  } else if (src->is_array()) {
    try {
      check_frame_list(src->size(), v.sample_fps);
    } catch (const VideoOptionError& e) {
      const std::string key = sub(param, e.key() == "fps" ? "sample_fps" : "video");
      bad_request(key, cat("'", key, "' ", e.what()));
    }
    v.frame_list = true;
    for (size_t k = 0; k < src->size(); ++k) {
      v.url_params.push_back(sub(param, cat("video[", k, "]")));
      v.urls.push_back(url_of((*src)[k], v.url_params.back()));
    }
  } else {
    v.url_params.push_back(sub(param, "video"));
    v.urls.push_back(url_of(*src, v.url_params.back()));
  }
  if (!v.frame_list && part.contains("sample_fps") && !part["sample_fps"].is_null())
    unsupported(sub(param, "sample_fps"), "'sample_fps' gives the rate of a list of frames; a video file has its own");
  check_options(own, v.frame_list, param);
  v.options = defaults;
  if (own.fps) v.options.fps = own.fps;
  if (own.min_frames) v.options.min_frames = own.min_frames;
  if (own.max_frames) v.options.max_frames = own.max_frames;
  if (own.min_pixels) v.options.min_pixels = own.min_pixels;
  if (own.max_pixels) v.options.max_pixels = own.max_pixels;
  if (own.total_pixels) v.options.total_pixels = own.total_pixels;
  check_options(v.options, false, param);  // the part's keys beside mm_processor_kwargs'
  return v;
}

void decode_videos(ChatRequest& out, const std::vector<PendingVideo>& pending, const ChatLimits& limits,
                   MediaIntake& intake) {
  if (pending.empty()) return;
  // A clip is fetched up to the largest file of any kind: its bytes say what it is.
  MediaOptions clip_media = limits.media;
  clip_media.max_image_bytes = max_media_bytes(media_limits(limits));
  for (const PendingVideo& p : pending) {
    std::shared_ptr<const Video> video;
    VideoOptions options = p.options;
    options.budget = limits.video_budget;
    try {
      if (p.frame_list) {
        const auto frame_bytes = [&](size_t k) { return fetch_media_bytes(p.urls[k], limits.media, p.url_params[k]); };
        video = intake.frames(p.urls.size(), frame_bytes, p.sample_fps, options, p.param);
        // A frame list is used whole, so the budget cannot sample it down.
        const int most = within_token_budget(FrameSampling{.max_frames = kMaxVideoFrames, .budget = limits.video_budget},
                                             video->width, video->height)
                             .max_frames;
        if (static_cast<int64_t>(video->frames.size()) > most)
          bad_request(sub(p.param, "video"),
                      cat("a list of ", video->frames.size(), " frames of ", video->width, "x", video->height,
                          " is over the server's video-token budget of ", limits.video_budget.max_tokens,
                          " tokens (--max-video-tokens), which allows at most ", most, " such frames"));
      } else {
        const std::vector<uint8_t> bytes = fetch_media_bytes(p.urls[0], clip_media, p.url_params[0]);
        if (const MediaKind kind = media_kind(bytes, MediaKind::Video); kind != MediaKind::Video)
          fail("the bytes are a ", media_kind_name(kind), ", not a video (send it in an image_url or a file part)");
        MediaHint hint;
        hint.kind = MediaKind::Video;
        hint.video = options;
        video = intake.take(bytes, hint, p.param).video;
      }
    } catch (const MediaTimeLimit& e) {
      refuse_time_limit(e, p.param);
    } catch (const MediaTooLarge& e) {
      refuse_too_large(e, p.param);
    } catch (const Error& e) {
      bad_request(p.param, cat("the video cannot be used: ", e.what()), "invalid_video");
    }
    out.generate.messages[p.message].parts[p.part].video = std::move(video);
  }
}

}  // namespace qvl
