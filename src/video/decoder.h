// The FFmpeg decoder and the RGB conversion both of decode_video's paths use
// (every frame in order, decode.cpp; only what sampled frames need,
// planned_decode.h), so a kept frame is converted the same way whichever
// path decoded it.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <cstdint>
#include <memory>

#include "image/image.h"
#include "video/memory_input.h"
#include "video/video.h"

struct SwsContext;

namespace qvl::video_detail {

// A decoder for `st` on `threads` threads (frame threads where the codec has
// them, else slice threads; both give the frames one thread does, bit for
// bit), refusing frames over limits.max_frame_pixels before allocating them.
std::unique_ptr<AVCodecContext, AvFree> open_decoder(const AVStream* st, const VideoLimits& limits, int threads);

// FFmpeg's default conversion to packed RGB (what `ffmpeg -pix_fmt rgb24`
// does: swscale, bicubic), to the stream's declared size.
class RgbConverter {
 public:
  RgbConverter(int width, int height) : width_(width), height_(height) {}
  ~RgbConverter();
  RgbConverter(const RgbConverter&) = delete;
  RgbConverter& operator=(const RgbConverter&) = delete;

  // `index` names the frame in an error.
  Image convert(const AVFrame* frame, int64_t index);

 private:
  int width_, height_;
  SwsContext* sws_ = nullptr;
};

}  // namespace qvl::video_detail
