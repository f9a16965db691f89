// Frame sampling and timestamps exactly as transformers' Qwen3-VL video
// processor and processor compute them (see video.h).
#include <algorithm>
#include <cmath>

#include "util/error.h"
#include "video/video.h"

namespace qvl {

std::vector<int64_t> sample_frame_indices(int64_t total_frames, double video_fps, const FrameSampling& s) {
  if (total_frames <= 0) fail("video has no frames");
  if (!(video_fps > 0) || !std::isfinite(video_fps)) fail("video frame rate ", video_fps, " is not a positive number");
  if (!(s.fps > 0) || !std::isfinite(s.fps)) fail("sampling fps ", s.fps, " is not a positive number");
  if (s.min_frames < 1 || s.max_frames < s.min_frames)
    fail("sampling frame range [", s.min_frames, ", ", s.max_frames, "] is empty");
  // int(total / video_fps * fps): Python's int() truncates the double.
  const double wanted = static_cast<double>(total_frames) / video_fps * s.fps;
  int64_t n = wanted >= static_cast<double>(s.max_frames) ? s.max_frames : static_cast<int64_t>(wanted);
  n = std::min<int64_t>(std::max<int64_t>(n, s.min_frames), s.max_frames);
  n = std::min(n, total_frames);
  // np.linspace(0, total - 1, n): i * step with step = (total - 1) / (n - 1)
  // in double, the last point exactly total - 1; .round() is half to even,
  // which nearbyint does in the default rounding mode.
  std::vector<int64_t> idx(static_cast<size_t>(n));
  const double last = static_cast<double>(total_frames - 1);
  const double step = n > 1 ? last / static_cast<double>(n - 1) : 0.0;
  for (int64_t i = 0; i < n; ++i) idx[static_cast<size_t>(i)] = static_cast<int64_t>(std::nearbyint(static_cast<double>(i) * step));
  if (n > 1) idx.back() = total_frames - 1;
  return idx;
}

FrameSampling within_token_budget(FrameSampling s, int width, int height) {
  const VideoTokenBudget& b = s.budget;
  if (b.max_tokens <= 0 || b.token_side <= 0 || b.frames_per_group <= 0) return s;
  // The clip's tokens per group before any scaling: smart_resize's sides
  // rounded half to even to multiples of token_side, at least one.
  auto side_tokens = [&](int px) {
    return std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(static_cast<double>(px) / b.token_side)));
  };
  const int64_t own = side_tokens(width) * side_tokens(height);
  const int64_t per_group = std::min(kMinGroupVisionTokens, own) + kMaxGroupTextTokens;
  const int64_t groups = std::max<int64_t>(1, b.max_tokens / per_group);
  const int64_t frames = groups * b.frames_per_group;
  if (frames < s.max_frames) s.max_frames = static_cast<int>(frames);
  s.min_frames = std::min(s.min_frames, s.max_frames);
  return s;
}

std::vector<double> temporal_group_timestamps(std::span<const int64_t> frame_indices, double video_fps,
                                              int temporal_patch_size) {
  if (frame_indices.empty() || temporal_patch_size < 1) return {};
  std::vector<int64_t> idx(frame_indices.begin(), frame_indices.end());
  while (idx.size() % static_cast<size_t>(temporal_patch_size) != 0) idx.push_back(idx.back());
  std::vector<double> out;
  for (size_t i = 0; i < idx.size(); i += static_cast<size_t>(temporal_patch_size)) {
    const double first = static_cast<double>(idx[i]) / video_fps;
    const double last = static_cast<double>(idx[i + static_cast<size_t>(temporal_patch_size) - 1]) / video_fps;
    out.push_back((first + last) / 2);
  }
  return out;
}

Video video_from_frames(std::vector<Image> frames, double fps) {
  if (frames.empty()) fail("video frame list is empty");
  if (!(fps > 0) || !std::isfinite(fps)) fail("video frame list: sample_fps ", fps, " is not a positive number");
  for (size_t i = 1; i < frames.size(); ++i)
    if (frames[i].width != frames[0].width || frames[i].height != frames[0].height)
      fail("video frame ", i, " is ", frames[i].width, "x", frames[i].height, ", frame 0 is ", frames[0].width, "x",
           frames[0].height, ": a video's frames must all have one size");
  Video v;
  v.width = frames[0].width;
  v.height = frames[0].height;
  v.fps = fps;
  v.total_frames = static_cast<int64_t>(frames.size());
  v.container = "frames";
  for (int64_t i = 0; i < v.total_frames; ++i) v.frame_indices.push_back(i);
  v.frames = std::move(frames);
  return v;
}

uint64_t video_decode_peak_bytes(int width, int height, size_t sampled) {
  const uint64_t pixels = static_cast<uint64_t>(width) * static_cast<uint64_t>(height);
  return pixels * 3 * sampled + pixels * 4 * kDecoderFramesHeld;
}

}  // namespace qvl
