// encode_video: an encoder and a muxer writing to a growable, seekable
// buffer (the mp4 muxer seeks back to finish its index).
extern "C" {
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include "video/encode.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "util/error.h"
#include "video/memory_input.h"

namespace qvl {
namespace {

using video_detail::av_error_text;
using video_detail::AvFree;

// The bytes avio hands its write callback: const from FFmpeg 7 (libavformat 61) on.
#if LIBAVFORMAT_VERSION_MAJOR >= 61
using WrittenBytes = const uint8_t*;
#else
using WrittenBytes = uint8_t*;  // FFmpeg 5.1 (Debian 12)
#endif

// The output buffer FFmpeg writes and seeks in.
struct GrowingBuffer {
  std::vector<uint8_t> bytes;
  size_t pos = 0;

  static int write(void* opaque, WrittenBytes buf, int size) {
    auto* b = static_cast<GrowingBuffer*>(opaque);
    if (b->pos + size > b->bytes.size()) b->bytes.resize(b->pos + size);
    std::memcpy(b->bytes.data() + b->pos, buf, static_cast<size_t>(size));
    b->pos += static_cast<size_t>(size);
    return size;
  }
  static int64_t seek(void* opaque, int64_t offset, int whence) {
    auto* b = static_cast<GrowingBuffer*>(opaque);
    if (whence & AVSEEK_SIZE) return static_cast<int64_t>(b->bytes.size());
    whence &= ~AVSEEK_FORCE;
    const int64_t base = whence == SEEK_CUR ? static_cast<int64_t>(b->pos)
                         : whence == SEEK_END ? static_cast<int64_t>(b->bytes.size())
                                              : 0;
    if (base + offset < 0) return AVERROR(EINVAL);
    b->pos = static_cast<size_t>(base + offset);
    return static_cast<int64_t>(b->pos);
  }
};

// The encoder's preferred pixel format: the first it lists, yuv420p when it lists none.
AVPixelFormat first_pixel_format(const AVCodec* codec) {
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(61, 13, 100)  // FFmpeg 7.1 deprecates AVCodec::pix_fmts
  const void* formats = nullptr;
  if (avcodec_get_supported_config(nullptr, codec, AV_CODEC_CONFIG_PIX_FORMAT, 0, &formats, nullptr) >= 0 && formats)
    return static_cast<const AVPixelFormat*>(formats)[0];
  return AV_PIX_FMT_YUV420P;
#else
  return codec->pix_fmts ? codec->pix_fmts[0] : AV_PIX_FMT_YUV420P;
#endif
}

struct OutputFree {
  void operator()(AVFormatContext* f) const {
    if (f->pb) {
      av_freep(&f->pb->buffer);
      avio_context_free(&f->pb);
    }
    avformat_free_context(f);
  }
};

void check(int rc, const char* doing, const VideoEncoding& e) {
  if (rc < 0)
    fail("cannot ", doing, " (", e.encoder, " in ", e.container, "): ", av_error_text(rc),
         video_detail::FfmpegMessages::quoted_current());
}

// Fastest settings of the slow encoders (their private options), or the
// x264 / x265 preset and parameters asked for.
void set_speed_options(AVCodecContext* c, const VideoEncoding& e) {
  const std::string& encoder = e.encoder;
  if (encoder == "libx264" || encoder == "libx264rgb" || encoder == "libx265")
    av_opt_set(c->priv_data, "preset", e.preset.empty() ? "ultrafast" : e.preset.c_str(), 0);
  if (encoder == "libx264" || encoder == "libx264rgb")
    if (!e.params.empty()) av_opt_set(c->priv_data, "x264-params", e.params.c_str(), 0);
  if (encoder == "libx265")
    av_opt_set(c->priv_data, "x265-params", ("log-level=none" + (e.params.empty() ? "" : ":" + e.params)).c_str(), 0);
  if (encoder == "libvpx" || encoder == "libvpx-vp9") av_opt_set(c->priv_data, "deadline", "realtime", 0);
  if (encoder == "libvpx" || encoder == "libvpx-vp9" || encoder == "libaom-av1")
    av_opt_set_int(c->priv_data, "cpu-used", 8, 0);
  if (encoder == "libaom-av1") av_opt_set(c->priv_data, "usage", "realtime", 0);
}

}  // namespace

bool can_encode(const VideoEncoding& e) {
  return avcodec_find_encoder_by_name(e.encoder.c_str()) && av_guess_format(e.container.c_str(), nullptr, nullptr);
}

std::vector<uint8_t> encode_video(const VideoEncoding& e, const std::function<Image(int64_t)>& frame) {
  video_detail::FfmpegMessages messages;  // the encoders' banners stay off stderr
  const AVCodec* codec = avcodec_find_encoder_by_name(e.encoder.c_str());
  if (!codec) fail("this build of FFmpeg has no ", e.encoder, " encoder");
  if (e.width <= 0 || e.height <= 0 || e.fps <= 0 || e.frames <= 0)
    fail("cannot encode a ", e.width, "x", e.height, " clip of ", e.frames, " frames at ", e.fps, " fps");
  AVFormatContext* raw = nullptr;
  check(avformat_alloc_output_context2(&raw, nullptr, e.container.c_str(), nullptr), "open the muxer", e);
  std::unique_ptr<AVFormatContext, OutputFree> fc(raw);
  GrowingBuffer out;
  constexpr int kIoBytes = 1 << 16;
  auto* io_buffer = static_cast<uint8_t*>(av_malloc(kIoBytes));
  if (!io_buffer) fail("out of memory encoding a video");
  fc->pb = avio_alloc_context(io_buffer, kIoBytes, 1, &out, nullptr, &GrowingBuffer::write, &GrowingBuffer::seek);
  if (!fc->pb) {
    av_free(io_buffer);
    fail("out of memory encoding a video");
  }

  std::unique_ptr<AVCodecContext, AvFree> ctx(avcodec_alloc_context3(codec));
  if (!ctx) fail("out of memory encoding a video");
  ctx->width = e.width;
  ctx->height = e.height;
  ctx->time_base = {1, e.fps};
  ctx->framerate = {e.fps, 1};
  ctx->pix_fmt = first_pixel_format(codec);
  ctx->gop_size = e.keyframe_interval;
  if (e.b_frames >= 0) ctx->max_b_frames = e.b_frames;
  ctx->thread_count = e.threads;
  if (fc->oformat->flags & AVFMT_GLOBALHEADER) ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  set_speed_options(ctx.get(), e);
  check(avcodec_open2(ctx.get(), codec, nullptr), "open the encoder", e);
  AVStream* st = avformat_new_stream(fc.get(), nullptr);
  if (!st) fail("out of memory encoding a video");
  st->time_base = ctx->time_base;
  st->avg_frame_rate = ctx->framerate;
  check(avcodec_parameters_from_context(st->codecpar, ctx.get()), "describe the stream", e);
  check(avformat_write_header(fc.get(), nullptr), "write the header", e);

  std::unique_ptr<AVFrame, AvFree> yuv(av_frame_alloc());
  std::unique_ptr<AVPacket, AvFree> pkt(av_packet_alloc());
  if (!yuv || !pkt) fail("out of memory encoding a video");
  yuv->format = ctx->pix_fmt;
  yuv->width = e.width;
  yuv->height = e.height;
  check(av_frame_get_buffer(yuv.get(), 0), "allocate a frame", e);
  SwsContext* sws = sws_getContext(e.width, e.height, AV_PIX_FMT_RGB24, e.width, e.height, ctx->pix_fmt, SWS_BICUBIC,
                                   nullptr, nullptr, nullptr);
  if (!sws) fail("cannot convert RGB to ", av_get_pix_fmt_name(ctx->pix_fmt), " for ", e.encoder);
  std::unique_ptr<SwsContext, void (*)(SwsContext*)> sws_owner(sws, sws_freeContext);

  auto drain = [&](const AVFrame* f) {
    check(avcodec_send_frame(ctx.get(), f), "encode a frame", e);
    for (;;) {
      const int rc = avcodec_receive_packet(ctx.get(), pkt.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      check(rc, "encode a frame", e);
      av_packet_rescale_ts(pkt.get(), ctx->time_base, st->time_base);
      pkt->stream_index = st->index;
      check(av_interleaved_write_frame(fc.get(), pkt.get()), "write a packet", e);
    }
  };
  for (int64_t k = 0; k < e.frames; ++k) {
    const Image rgb = frame(k);
    if (rgb.width != e.width || rgb.height != e.height || rgb.rgb.size() != size_t(e.width) * e.height * 3)
      fail("frame ", k, " is ", rgb.width, "x", rgb.height, ", the clip is ", e.width, "x", e.height);
    check(av_frame_make_writable(yuv.get()), "allocate a frame", e);
    const uint8_t* src[4] = {rgb.rgb.data(), nullptr, nullptr, nullptr};
    const int src_stride[4] = {e.width * 3, 0, 0, 0};
    sws_scale(sws, src, src_stride, 0, e.height, yuv->data, yuv->linesize);
    yuv->pts = k;
    drain(yuv.get());
  }
  drain(nullptr);
  check(av_write_trailer(fc.get()), "finish the file", e);
  avio_flush(fc->pb);
  return std::move(out.bytes);
}

}  // namespace qvl
