// One video's sampling and pixel choices, and the one check of them that
// every front end runs (the server's video parts and mm_processor_kwargs,
// the CLI's --video flags, the C API's qvl_video_params).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "util/error.h"
#include "video/video.h"

namespace qvl {

// qwen-vl-utils' keys (which vLLM's mm_processor_kwargs takes too); unset:
// the video processor's defaults.
struct VideoOptions {
  std::optional<double> fps;
  std::optional<int64_t> min_frames, max_frames;
  std::optional<int64_t> min_pixels, max_pixels;  // per frame (qwen-vl-utils)
  std::optional<int64_t> total_pixels;             // all sampled frames together
  VideoTokenBudget budget;  // the front end's --max-video-tokens (none: the model's own limits)
};

// The ranges a front end accepts for them: frames up to the processor's own
// maximum (FrameSampling), rates a clip can be sampled at.
inline constexpr int64_t kMaxVideoFrames = 768;
inline constexpr double kMinVideoFps = 0.01, kMaxVideoFps = 60;
inline constexpr int64_t kMaxVideoPixels = int64_t{1} << 40;
// The rate a list of frames may say it was taken at (qwen-vl-utils' sample_fps).
inline constexpr double kMaxFrameListFps = 240;

// A video option a front end was given that cannot be used: key() names it
// as qwen-vl-utils does ("fps", "min_frames", ...; "frames" for a list's
// length), what() says what is wrong after the name ("must be in [1, 768],
// got 0"), so each front end puts its own name of the key before it.
class VideoOptionError : public Error {
 public:
  VideoOptionError(std::string key, const std::string& message, bool frame_list_key = false)
      : Error(message), key_(std::move(key)), frame_list_key_(frame_list_key) {}
  const std::string& key() const { return key_; }
  // A sampling key given for a list of frames, which is not sampled.
  bool frame_list_key() const { return frame_list_key_; }

 private:
  std::string key_;
  bool frame_list_key_;
};

// Every set key in its range, min_frames not over max_frames, and for a list
// of frames (`frame_list`: used whole, not sampled) no fps, min_frames or
// max_frames. Throws VideoOptionError naming the first key that fails.
void check_video_options(const VideoOptions& options, bool frame_list);

// A list of `frames` frames taken at `fps` (its sample_fps): at most
// kMaxVideoFrames, and a rate in [kMinVideoFps, kMaxFrameListFps]. Throws
// VideoOptionError ("frames" or "fps").
void check_frame_list(size_t frames, double fps);

// The sampling `options` choose (the processor's defaults where unset).
FrameSampling frame_sampling(const VideoOptions& options);

}  // namespace qvl
