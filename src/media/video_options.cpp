#include "media/video_options.h"

namespace qvl {
namespace {

template <typename T>
void in_range(const std::optional<T>& v, const char* key, T lo, T hi, const char* hi_text = nullptr) {
  if (!v || (*v >= lo && *v <= hi)) return;  // NaN is caught: no comparison holds
  if (hi_text) throw VideoOptionError(key, cat("must be in [", lo, ", ", hi_text, "], got ", *v));
  throw VideoOptionError(key, cat("must be in [", lo, ", ", hi, "], got ", *v));
}

}  // namespace

void check_video_options(const VideoOptions& o, bool frame_list) {
  if (frame_list)
    for (const auto& [set, key] : {std::pair{o.fps.has_value(), "fps"}, std::pair{o.min_frames.has_value(), "min_frames"},
                                   std::pair{o.max_frames.has_value(), "max_frames"}})
      if (set)
        throw VideoOptionError(key, "samples a video file; a list of frames is used whole (its own rate, sample_fps, "
                                    "gives its timing)", true);
  in_range(o.fps, "fps", kMinVideoFps, kMaxVideoFps);
  in_range(o.min_frames, "min_frames", int64_t{1}, kMaxVideoFrames);
  in_range(o.max_frames, "max_frames", int64_t{1}, kMaxVideoFrames);
  in_range(o.min_pixels, "min_pixels", int64_t{1}, kMaxVideoPixels, "2^40");
  in_range(o.max_pixels, "max_pixels", int64_t{1}, kMaxVideoPixels, "2^40");
  in_range(o.total_pixels, "total_pixels", int64_t{1}, kMaxVideoPixels, "2^40");
  if (o.min_frames && o.max_frames && *o.min_frames > *o.max_frames)
    throw VideoOptionError("min_frames", cat("(", *o.min_frames, ") exceeds max_frames (", *o.max_frames, ")"));
}

void check_frame_list(size_t frames, double fps) {
  if (frames == 0) throw VideoOptionError("frames", "must be at least one frame");
  if (frames > static_cast<size_t>(kMaxVideoFrames))
    throw VideoOptionError("frames", cat("must be at most ", kMaxVideoFrames, " frames, got ", frames));
  in_range(std::optional<double>(fps), "fps", kMinVideoFps, kMaxFrameListFps);
}

FrameSampling frame_sampling(const VideoOptions& o) {
  FrameSampling s;
  if (o.fps) s.fps = *o.fps;
  if (o.min_frames) s.min_frames = static_cast<int>(*o.min_frames);
  if (o.max_frames) s.max_frames = static_cast<int>(*o.max_frames);
  s.budget = o.budget;
  return s;
}

}  // namespace qvl
