// Encoding a clip into memory with FFmpeg's libraries: what `qvl bench` and
// the tests make their clips with (any container and encoder this build of
// FFmpeg has), so neither depends on the ffmpeg program or on files. Frames
// come from a callback one at a time: a long clip is never held whole.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "image/image.h"

namespace qvl {

struct VideoEncoding {
  std::string container;  // FFmpeg muxer: "mp4", "mov", "webm", "matroska", "avi", "gif", "webp"
  std::string encoder;    // FFmpeg encoder: "libx264", "libx265", "libaom-av1", "libvpx", "libvpx-vp9", "mpeg4", "gif", ...
  int width = 0, height = 0;
  int fps = 0;  // constant rate; frame k has pts k / fps
  int64_t frames = 0;
  int keyframe_interval = 12;  // frames from one keyframe to the next (the encoder's GOP size)
  int b_frames = -1;           // B-frames between references at most (-1: the preset's)
  std::string preset;          // x264 / x265 preset ("": the fastest, "ultrafast")
  std::string params;          // x264-params / x265-params ("open-gop=1", "temporal-layers=1"); "": none
  int threads = 1;             // encoder threads (0: FFmpeg's choice)
};

// True when this build of FFmpeg has the encoder and the muxer.
bool can_encode(const VideoEncoding& e);

// The encoded file's bytes. `frame(k)` gives frame k (RGB, width × height),
// converted to the encoder's first pixel format. Encoders run at their
// fastest settings unless `preset` says otherwise. Throws qvl::Error naming
// what FFmpeg refused.
std::vector<uint8_t> encode_video(const VideoEncoding& e, const std::function<Image(int64_t)>& frame);

}  // namespace qvl
