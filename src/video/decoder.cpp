#include "video/decoder.h"

extern "C" {
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <algorithm>

#include "util/error.h"

namespace qvl::video_detail {

std::unique_ptr<AVCodecContext, AvFree> open_decoder(const AVStream* st, const VideoLimits& limits, int threads) {
  const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
  if (!codec)
    fail("this build of FFmpeg cannot decode ", avcodec_get_name(st->codecpar->codec_id), " video");
  std::unique_ptr<AVCodecContext, AvFree> ctx(avcodec_alloc_context3(codec));
  if (!ctx) fail("out of memory opening the video decoder");
  int rc = avcodec_parameters_to_context(ctx.get(), st->codecpar);
  if (rc < 0) fail("cannot set up the ", codec->name, " decoder (", av_error_text(rc), ")");
  ctx->thread_count = std::max(1, threads);
  ctx->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
  // The decoder refuses a frame size (from the bitstream, which may differ
  // from the container's header) over the limit before allocating it.
  ctx->max_pixels = limits.max_frame_pixels;
  rc = avcodec_open2(ctx.get(), codec, nullptr);
  if (rc < 0)
    fail("cannot open the ", codec->name, " decoder (", av_error_text(rc), ")", FfmpegMessages::quoted_current());
  return ctx;
}

RgbConverter::~RgbConverter() { sws_freeContext(sws_); }

Image RgbConverter::convert(const AVFrame* frame, int64_t index) {
  sws_ = sws_getCachedContext(sws_, frame->width, frame->height, static_cast<AVPixelFormat>(frame->format), width_,
                              height_, AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr, nullptr, nullptr);
  if (!sws_)
    fail("cannot convert video frame ", index, " (", frame->width, "x", frame->height, ", ",
         av_get_pix_fmt_name(static_cast<AVPixelFormat>(frame->format)), ") to RGB");
  Image im;
  im.width = width_;
  im.height = height_;
  im.rgb.resize(static_cast<size_t>(width_) * height_ * 3);
  uint8_t* dst[4] = {im.rgb.data(), nullptr, nullptr, nullptr};
  int dst_stride[4] = {width_ * 3, 0, 0, 0};
  const int rows = sws_scale(sws_, frame->data, frame->linesize, 0, frame->height, dst, dst_stride);
  if (rows != height_) fail("cannot convert video frame ", index, " to RGB");
  return im;
}

}  // namespace qvl::video_detail
