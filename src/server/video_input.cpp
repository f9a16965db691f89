#include "server/video_input.h"

#include <algorithm>
#include <array>
#include <chrono>
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

// One sampling key into `o`; false when `key` is not one.
bool sampling_key(const std::string& key, const json& v, const std::string& param, VideoOptions& o) {
  if (v.is_null()) return std::find(kSamplingKeys.begin(), kSamplingKeys.end(), key) != kSamplingKeys.end();
  if (key == "fps") o.fps = number_key(v, param, kMinVideoFps, kMaxVideoFps);
  else if (key == "min_frames") o.min_frames = integer_key(v, param, 1, kMaxVideoFrames);
  else if (key == "max_frames") o.max_frames = integer_key(v, param, 1, kMaxVideoFrames);
  else if (key == "min_pixels") o.min_pixels = integer_key(v, param, 1, kMaxVideoPixels);
  else if (key == "max_pixels") o.max_pixels = integer_key(v, param, 1, kMaxVideoPixels);
  else if (key == "total_pixels") o.total_pixels = integer_key(v, param, 1, kMaxVideoPixels);
  else return false;
  return true;
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
      if (!it->is_null()) v.sample_fps = number_key(*it, sub(param, "sample_fps"), kMinVideoFps, kMaxFrameListFps);
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
    if (src->empty()) bad_request(sub(param, "video"), "a frame list needs at least one frame");
    if (static_cast<int64_t>(src->size()) > kMaxVideoFrames)
      bad_request(sub(param, "video"), cat("a frame list has at most ", kMaxVideoFrames, " frames, got ", src->size()));
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
  if (v.frame_list)
    for (const char* k : {"fps", "min_frames", "max_frames"})
      if (part.contains(k) && !part[k].is_null())
        unsupported(sub(param, k), cat("'", k, "' samples a video file; a list of frames is used whole ('sample_fps' "
                                         "gives its rate)"));
  v.options = defaults;
  if (own.fps) v.options.fps = own.fps;
  if (own.min_frames) v.options.min_frames = own.min_frames;
  if (own.max_frames) v.options.max_frames = own.max_frames;
  if (own.min_pixels) v.options.min_pixels = own.min_pixels;
  if (own.max_pixels) v.options.max_pixels = own.max_pixels;
  if (own.total_pixels) v.options.total_pixels = own.total_pixels;
  if (v.options.min_frames && v.options.max_frames && *v.options.min_frames > *v.options.max_frames)
    bad_request(sub(param, "min_frames"), cat("'min_frames' (", *v.options.min_frames, ") exceeds 'max_frames' (",
                                           *v.options.max_frames, ")"));
  return v;
}

void decode_videos(ChatRequest& out, const std::vector<PendingVideo>& pending, const ChatLimits& limits,
                   MediaIntake& intake) {
  if (pending.empty()) return;
  const Clock::time_point start = Clock::now();
  MediaOptions clip_media = limits.media;
  clip_media.max_image_bytes = std::max(limits.media.max_image_bytes, limits.media.max_video_bytes);
  for (const PendingVideo& p : pending) {
    std::shared_ptr<const Video> video;
    VideoOptions options = p.options;
    options.budget = limits.video_budget;
    try {
      if (p.frame_list) {
        const auto frame_bytes = [&](size_t k) { return fetch_image_bytes(p.urls[k], limits.media, p.url_params[k]); };
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
        video = intake.video(fetch_image_bytes(p.urls[0], clip_media, p.url_params[0]), options, p.param);
      }
    } catch (const MediaTimeLimit& e) {
      refuse_time_limit(e, p.param);
    } catch (const Error& e) {
      bad_request(p.param, cat("the video cannot be used: ", e.what()), "invalid_video");
    }
    out.generate.messages[p.message].parts[p.part].video = std::move(video);
  }
  out.image_ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace qvl
