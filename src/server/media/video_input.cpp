#include "server/media/video_input.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <string_view>

#include "server/requests/api_error.h"
#include "server/requests/request_fields.h"
#include "util/error.h"

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

// One sampling key into `o`, its type checked (its range is
// check_video_options'); false when `key` is not one.
bool sampling_key(const std::string& key, const RequestField& v, VideoOptions& o) {
  constexpr double kAnyDouble = std::numeric_limits<double>::max();
  constexpr int64_t kAnyInteger = std::numeric_limits<int64_t>::max();
  if (v.value().is_null()) return std::find(kSamplingKeys.begin(), kSamplingKeys.end(), key) != kSamplingKeys.end();
  if (key == "fps") o.fps = v.number(-kAnyDouble, kAnyDouble);
  else if (key == "min_frames") o.min_frames = v.integer(-kAnyInteger, kAnyInteger);
  else if (key == "max_frames") o.max_frames = v.integer(-kAnyInteger, kAnyInteger);
  else if (key == "min_pixels") o.min_pixels = v.integer(-kAnyInteger, kAnyInteger);
  else if (key == "max_pixels") o.max_pixels = v.integer(-kAnyInteger, kAnyInteger);
  else if (key == "total_pixels") o.total_pixels = v.integer(-kAnyInteger, kAnyInteger);
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

// A URL, noted with the path that names it.
void add_url(PendingVideo& v, const RequestField& url) {
  v.url_params.push_back(url.path());
  v.urls.push_back(url.string());
}

}  // namespace

VideoOptions parse_mm_processor_kwargs(const RequestField& kwargs) {
  VideoOptions o;
  for (auto it = kwargs.object().value().begin(); it != kwargs.value().end(); ++it)
    if (!sampling_key(it.key(), RequestField(*it, kwargs.path_of(it.key())), o))
      bad_request(kwargs.path_of(it.key()),
                  cat("unknown or unsupported key '", it.key().substr(0, 80),
                      "' in 'mm_processor_kwargs' (fps, min_frames, max_frames, min_pixels, max_pixels and "
                      "total_pixels are supported)"),
                  "unsupported_parameter");
  check_options(o, false, kwargs.path());
  return o;
}

PendingVideo parse_video_part(const RequestField& part, const VideoOptions& defaults) {
  PendingVideo v;
  v.param = part.path();
  const std::string& type = part.string("type");
  VideoOptions own;  // the part's keys, which win over mm_processor_kwargs
  for (auto it = part.value().begin(); it != part.value().end(); ++it) {
    const std::string& key = it.key();
    const RequestField value(*it, part.path_of(key));
    if (key == "type" || (type == "video_url" && key == "video_url") || (type == "video" && key == "video")) continue;
    if (type == "video" && key == "sample_fps") {
      if (!it->is_null()) v.sample_fps = value.number(-1e308, 1e308);  // its range is check_frame_list's
      continue;
    }
    if (!sampling_key(key, value, own))
      value.unsupported(cat("unknown field '", key.substr(0, 80), "' in a ", type, " part"));
  }
  const RequestField src = part.at(type == "video_url" ? "video_url" : "video");
  if (type == "video_url") {
    if (src.value().is_object()) {
      src.only_keys({"url"});
      add_url(v, src.at("url"));
    } else {
      add_url(v, src);
    }
  } else if (src.value().is_array()) {
    try {
      check_frame_list(src.size(), v.sample_fps);
    } catch (const VideoOptionError& e) {
      const std::string key = e.key() == "fps" ? part.path_of("sample_fps") : src.path();
      bad_request(key, cat("'", key, "' ", e.what()));
    }
    v.frame_list = true;
    for (size_t k = 0; k < src.size(); ++k) add_url(v, src[k]);
  } else {
    add_url(v, src);
  }
  if (auto f = part.find("sample_fps"); f && !v.frame_list)
    f->unsupported("'sample_fps' gives the rate of a list of frames; a video file has its own");
  check_options(own, v.frame_list, v.param);
  v.options = defaults;
  if (own.fps) v.options.fps = own.fps;
  if (own.min_frames) v.options.min_frames = own.min_frames;
  if (own.max_frames) v.options.max_frames = own.max_frames;
  if (own.min_pixels) v.options.min_pixels = own.min_pixels;
  if (own.max_pixels) v.options.max_pixels = own.max_pixels;
  if (own.total_pixels) v.options.total_pixels = own.total_pixels;
  check_options(v.options, false, v.param);  // the part's keys beside mm_processor_kwargs'
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
