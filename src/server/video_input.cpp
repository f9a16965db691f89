#include "server/video_input.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <string_view>

#include "server/api_error.h"
#include "server/request_fields.h"
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

// One sampling key into `o`; false when `key` is not one.
bool sampling_key(const std::string& key, const RequestField& v, VideoOptions& o) {
  if (v.value().is_null()) return std::find(kSamplingKeys.begin(), kSamplingKeys.end(), key) != kSamplingKeys.end();
  if (key == "fps") o.fps = v.number(kMinVideoFps, kMaxVideoFps);
  else if (key == "min_frames") o.min_frames = v.integer(1, kMaxVideoFrames);
  else if (key == "max_frames") o.max_frames = v.integer(1, kMaxVideoFrames);
  else if (key == "min_pixels") o.min_pixels = v.integer(1, kMaxVideoPixels);
  else if (key == "max_pixels") o.max_pixels = v.integer(1, kMaxVideoPixels);
  else if (key == "total_pixels") o.total_pixels = v.integer(1, kMaxVideoPixels);
  else return false;
  return true;
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
      if (!it->is_null()) v.sample_fps = value.number(kMinVideoFps, kMaxFrameListFps);
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
    if (src.size() == 0) src.refuse("a frame list needs at least one frame");
    if (static_cast<int64_t>(src.size()) > kMaxVideoFrames)
      src.refuse(cat("a frame list has at most ", kMaxVideoFrames, " frames, got ", src.size()));
    v.frame_list = true;
    for (size_t k = 0; k < src.size(); ++k) add_url(v, src[k]);
  } else {
    add_url(v, src);
  }
  if (auto f = part.find("sample_fps"); f && !v.frame_list)
    f->unsupported("'sample_fps' gives the rate of a list of frames; a video file has its own");
  if (v.frame_list)
    for (const char* k : {"fps", "min_frames", "max_frames"})
      if (auto f = part.find(k))
        f->unsupported(cat("'", k, "' samples a video file; a list of frames is used whole ('sample_fps' gives its rate)"));
  v.options = defaults;
  if (own.fps) v.options.fps = own.fps;
  if (own.min_frames) v.options.min_frames = own.min_frames;
  if (own.max_frames) v.options.max_frames = own.max_frames;
  if (own.min_pixels) v.options.min_pixels = own.min_pixels;
  if (own.max_pixels) v.options.max_pixels = own.max_pixels;
  if (own.total_pixels) v.options.total_pixels = own.total_pixels;
  if (v.options.min_frames && v.options.max_frames && *v.options.min_frames > *v.options.max_frames)
    bad_request(part.path_of("min_frames"), cat("'min_frames' (", *v.options.min_frames, ") exceeds 'max_frames' (",
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
