// libFuzzer target: demux + decode + sampling + the video processor over any
// bytes. Every outcome other than success or qvl::Error (a crash, a
// sanitizer report, an out-of-memory, a timeout) is a bug. Limits are
// tightened so that a fuzzed header cannot make one run legitimately decode
// for long or allocate much.
#include <cstddef>
#include <cstdint>
#include <span>

#include "image/video_preprocess.h"
#include "util/error.h"
#include "video/video.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qvl::VideoLimits limits;
  limits.max_encoded_bytes = 1u << 20;
  limits.max_frame_pixels = 512 * 512;
  limits.max_total_frames = 2000;
  limits.max_duration_s = 600;
  limits.max_seconds = 5;
  qvl::FrameSampling sampling;
  sampling.max_frames = 16;
  qvl::PreprocessorConfig config;  // Qwen3-VL: patch 16, merge 2, temporal 2
  config.min_pixels = 4096;
  config.max_pixels = 16 * 128 * 128;
  try {
    const qvl::Video v = qvl::decode_video(std::span<const uint8_t>(data, size), sampling, limits);
    if (v.frames.size() != v.frame_indices.size() || v.frames.empty()) __builtin_trap();
    for (const qvl::Image& f : v.frames)
      if (f.width != v.width || f.height != v.height || f.rgb.size() != size_t(f.width) * f.height * 3) __builtin_trap();
    const qvl::PixelValues pv = qvl::preprocess_video(v.frames, config);
    if (pv.data.size() != static_cast<size_t>(pv.num_patches) * pv.patch_dim) __builtin_trap();
    if (qvl::temporal_group_timestamps(v.frame_indices, v.fps).size() != static_cast<size_t>(pv.grid_t)) __builtin_trap();
  } catch (const qvl::Error&) {
  }
  return 0;
}
