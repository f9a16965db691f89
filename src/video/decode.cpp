// decode_video: header limits, frame sampling, then one pass of decoding
// that converts and keeps only the sampled frames.
extern "C" {
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "util/error.h"
#include "video/memory_input.h"
#include "video/video.h"

namespace qvl {
namespace {

using video_detail::av_error_text;
using video_detail::AvFree;
using video_detail::Deadline;
using video_detail::FfmpegMessages;
using video_detail::MemoryInput;

// Codecs qvl decodes: what the containers above carry for video today.
// Anything else (images sequences, legacy or exotic codecs) is refused by
// name before a decoder is opened.
bool supported_codec(AVCodecID id) {
  switch (id) {
    case AV_CODEC_ID_H264:
    case AV_CODEC_ID_HEVC:
    case AV_CODEC_ID_AV1:
    case AV_CODEC_ID_VP8:
    case AV_CODEC_ID_VP9:
    case AV_CODEC_ID_MPEG4:
    case AV_CODEC_ID_GIF: return true;
    default: return false;
  }
}
constexpr const char* kSupportedCodecs = "H.264, H.265, AV1, VP8, VP9, MPEG-4 Part 2, GIF";

double rate(AVRational r) { return r.num > 0 && r.den > 0 ? av_q2d(r) : 0.0; }

int find_video_stream(AVFormatContext* fc) {
  for (unsigned i = 0; i < fc->nb_streams; ++i) {
    const AVStream* st = fc->streams[i];
    if (st->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && !(st->disposition & AV_DISPOSITION_ATTACHED_PIC))
      return static_cast<int>(i);
  }
  fail("the file has no video stream");
}

// What the headers say about the stream; frames and duration may be unknown (0).
struct StreamFacts {
  int index = 0;
  int width = 0, height = 0;
  double fps = 0;
  int64_t frames = 0;
  double duration_s = 0;
};

StreamFacts read_headers(AVFormatContext* fc, const VideoLimits& limits) {
  if (static_cast<int>(fc->nb_streams) > limits.max_streams)
    fail("video has ", fc->nb_streams, " streams, over the limit of ", limits.max_streams);
  StreamFacts f;
  f.index = find_video_stream(fc);
  const AVStream* st = fc->streams[f.index];
  const AVCodecParameters* par = st->codecpar;
  if (!supported_codec(par->codec_id))
    fail("unsupported video codec ", avcodec_get_name(par->codec_id), " (supported: ", kSupportedCodecs, ")");
  f.width = par->width;
  f.height = par->height;
  if (f.width <= 0 || f.height <= 0) fail("video stream declares no frame size (", f.width, "x", f.height, ")");
  const int64_t pixels = int64_t{f.width} * f.height;
  if (pixels > limits.max_frame_pixels)
    fail("video frames are ", f.width, "x", f.height, " = ", pixels, " pixels, over the limit of ",
         limits.max_frame_pixels);
  f.fps = rate(st->avg_frame_rate);
  if (f.fps == 0) f.fps = rate(st->r_frame_rate);
  if (!std::isfinite(f.fps) || f.fps > limits.max_fps)
    fail("video declares ", f.fps, " frames per second, over the limit of ", limits.max_fps);
  f.frames = st->nb_frames > 0 ? st->nb_frames : 0;
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
    f.duration_s = static_cast<double>(st->duration) * av_q2d(st->time_base);
  else if (fc->duration != AV_NOPTS_VALUE && fc->duration > 0)
    f.duration_s = static_cast<double>(fc->duration) / AV_TIME_BASE;
  if (!std::isfinite(f.duration_s) || f.duration_s < 0) f.duration_s = 0;
  if (f.duration_s > limits.max_duration_s)
    fail("video lasts ", f.duration_s, " s, over the limit of ", limits.max_duration_s, " s");
  if (f.frames > limits.max_total_frames)
    fail("video declares ", f.frames, " frames, over the limit of ", limits.max_total_frames);
  return f;
}

void check_deadline(const Deadline& deadline, const char* doing) {
  if (deadline.passed()) fail(doing, " the video took over the limit of ", deadline.seconds(), " s");
}

// Containers without a frame count (Matroska, WebM, GIF, some AVI): count the
// stream's packets without decoding them, and the time they span, which
// gives the rate when the headers declare none.
void count_packets(AVFormatContext* fc, StreamFacts& f, const VideoLimits& limits, const Deadline& deadline) {
  std::unique_ptr<AVPacket, AvFree> pkt(av_packet_alloc());
  if (!pkt) fail("out of memory reading the video");
  int64_t count = 0, span = 0;
  for (;;) {
    check_deadline(deadline, "reading");
    const int rc = av_read_frame(fc, pkt.get());
    if (rc == AVERROR_EOF) break;
    if (rc < 0) fail("cannot read the video (", av_error_text(rc), ")", FfmpegMessages::quoted_current());
    if (pkt->stream_index == f.index) {
      if (++count > limits.max_total_frames)
        fail("video has over ", limits.max_total_frames, " frames, the limit");
      if (pkt->duration > 0) span += pkt->duration;
    }
    av_packet_unref(pkt.get());
  }
  f.frames = count;
  if (f.fps == 0 && count > 0 && span > 0) {
    const double seconds = static_cast<double>(span) * av_q2d(fc->streams[f.index]->time_base);
    if (seconds > 0 && std::isfinite(seconds)) f.fps = static_cast<double>(count) / seconds;
    if (seconds > limits.max_duration_s)
      fail("video lasts ", seconds, " s, over the limit of ", limits.max_duration_s, " s");
  }
}

// FFmpeg's default conversion to packed RGB (what `ffmpeg -pix_fmt rgb24`
// does: swscale, bicubic), to the stream's declared size.
class RgbConverter {
 public:
  RgbConverter(int width, int height) : width_(width), height_(height) {}
  ~RgbConverter() { sws_freeContext(sws_); }
  RgbConverter(const RgbConverter&) = delete;
  RgbConverter& operator=(const RgbConverter&) = delete;

  Image convert(const AVFrame* frame, int64_t index) {
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

 private:
  int width_, height_;
  SwsContext* sws_ = nullptr;
};

std::unique_ptr<AVCodecContext, AvFree> open_decoder(const AVStream* st, const VideoLimits& limits) {
  const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
  if (!codec)
    fail("this build of FFmpeg cannot decode ", avcodec_get_name(st->codecpar->codec_id), " video");
  std::unique_ptr<AVCodecContext, AvFree> ctx(avcodec_alloc_context3(codec));
  if (!ctx) fail("out of memory opening the video decoder");
  int rc = avcodec_parameters_to_context(ctx.get(), st->codecpar);
  if (rc < 0) fail("cannot set up the ", codec->name, " decoder (", av_error_text(rc), ")");
  ctx->thread_count = 1;  // one request, one core: the engine's pool owns the others
  // The decoder refuses a frame size (from the bitstream, which may differ
  // from the container's header) over the limit before allocating it.
  ctx->max_pixels = limits.max_frame_pixels;
  rc = avcodec_open2(ctx.get(), codec, nullptr);
  if (rc < 0)
    fail("cannot open the ", codec->name, " decoder (", av_error_text(rc), ")", FfmpegMessages::quoted_current());
  return ctx;
}

// Decodes frames in order, keeping those whose index is sampled; stops as
// soon as the last sampled frame is kept.
class SampledDecoder {
 public:
  SampledDecoder(Video& out, const Deadline& deadline) : out_(out), deadline_(deadline), rgb_(out.width, out.height) {
    frame_.reset(av_frame_alloc());
    if (!frame_) fail("out of memory decoding the video");
  }
  bool done() const { return out_.frames.size() == out_.frame_indices.size(); }
  int64_t decoded() const { return decoded_; }

  // Sends one packet (nullptr: flush) and takes every frame it releases.
  void feed(AVCodecContext* ctx, const AVPacket* pkt) {
    int rc = avcodec_send_packet(ctx, pkt);
    if (rc < 0 && rc != AVERROR_EOF)
      fail("cannot decode the video after frame ", decoded_, " (", av_error_text(rc), ")",
           FfmpegMessages::quoted_current());
    while (!done()) {
      check_deadline(deadline_, "decoding");
      rc = avcodec_receive_frame(ctx, frame_.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      if (rc < 0)
        fail("cannot decode video frame ", decoded_, " (", av_error_text(rc), ")", FfmpegMessages::quoted_current());
      const int64_t index = decoded_++;
      while (!done() && out_.frame_indices[out_.frames.size()] == index) out_.frames.push_back(rgb_.convert(frame_.get(), index));
      av_frame_unref(frame_.get());
    }
  }

 private:
  Video& out_;
  const Deadline& deadline_;
  RgbConverter rgb_;
  std::unique_ptr<AVFrame, AvFree> frame_;
  int64_t decoded_ = 0;
};

}  // namespace

bool looks_like_video(std::span<const uint8_t> b) {
  auto at = [&](size_t off, const char* magic, size_t n) {
    return b.size() >= off + n && std::memcmp(b.data() + off, magic, n) == 0;
  };
  if (at(4, "ftyp", 4)) {  // ISO base media; HEIF/AVIF stills share the box and are images
    return !(at(8, "heic", 4) || at(8, "heix", 4) || at(8, "mif1", 4) || at(8, "avif", 4) || at(8, "msf1", 4));
  }
  if (at(0, "\x1A\x45\xDF\xA3", 4)) return true;                 // EBML: Matroska, WebM
  if (at(0, "RIFF", 4) && at(8, "AVI ", 4)) return true;         // AVI
  return at(4, "moov", 4) || at(4, "mdat", 4) || at(4, "wide", 4);  // QuickTime without 'ftyp'
}

Video decode_video(std::span<const uint8_t> bytes, const FrameSampling& sampling, const VideoLimits& limits) {
  if (bytes.empty()) fail("video is empty (0 bytes)");
  if (bytes.size() > limits.max_encoded_bytes)
    fail("video is ", bytes.size(), " bytes, over the limit of ", limits.max_encoded_bytes, " bytes");
  FfmpegMessages messages;
  const Deadline deadline(limits.max_seconds);

  StreamFacts facts;
  {
    MemoryInput probe(bytes, limits.max_streams, deadline);
    facts = read_headers(probe.format(), limits);
    if (facts.frames == 0 || facts.fps == 0) count_packets(probe.format(), facts, limits, deadline);
  }
  if (facts.frames == 0) fail("video has no frames");
  if (facts.fps == 0) fail("video declares no frame rate and its packets carry no durations");
  if (static_cast<double>(facts.frames) / facts.fps > limits.max_duration_s)
    fail("video lasts ", static_cast<double>(facts.frames) / facts.fps, " s, over the limit of ",
         limits.max_duration_s, " s");

  Video out;
  out.width = facts.width;
  out.height = facts.height;
  out.fps = facts.fps;
  out.total_frames = facts.frames;
  out.frame_indices =
      sample_frame_indices(facts.frames, facts.fps, within_token_budget(sampling, facts.width, facts.height));
  if (limits.budget) limits.budget->reserve(video_decode_peak_bytes(out.width, out.height, out.frame_indices.size()));
  out.frames.reserve(out.frame_indices.size());

  // A fresh demuxer from the first byte: the packet count above consumed the
  // stream, and reopening is simpler and more dependable than seeking back.
  MemoryInput input(bytes, limits.max_streams, deadline);
  AVFormatContext* fc = input.format();
  read_headers(fc, limits);
  const AVStream* st = fc->streams[facts.index];
  out.container = fc->iformat->name;
  out.codec = avcodec_get_name(st->codecpar->codec_id);
  auto ctx = open_decoder(st, limits);
  SampledDecoder decoder(out, deadline);
  std::unique_ptr<AVPacket, AvFree> pkt(av_packet_alloc());
  if (!pkt) fail("out of memory reading the video");
  while (!decoder.done()) {
    check_deadline(deadline, "decoding");
    const int rc = av_read_frame(fc, pkt.get());
    if (rc == AVERROR_EOF) break;
    if (rc < 0) {
      check_deadline(deadline, "decoding");
      fail("cannot read the video after frame ", decoder.decoded(), " (", av_error_text(rc), ")",
           FfmpegMessages::quoted_current());
    }
    if (pkt->stream_index == facts.index) {
      // The demuxer marks a packet it could not read whole: the file ends
      // inside it.
      if (pkt->flags & AV_PKT_FLAG_CORRUPT)
        fail("video is truncated or damaged: the data of frame ", decoder.decoded(), " is cut off");
      decoder.feed(ctx.get(), pkt.get());
    }
    av_packet_unref(pkt.get());
  }
  if (!decoder.done()) decoder.feed(ctx.get(), nullptr);
  if (!decoder.done())
    fail("video is truncated or damaged: decoded ", decoder.decoded(), " of the ", facts.frames,
         " frames its header declares");
  return out;
}

Video load_video(const std::string& path, const FrameSampling& sampling, const VideoLimits& limits) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail("cannot read video ", path, ": it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open video ", path, ": ", std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) fail("cannot read video ", path);
  if (static_cast<uint64_t>(size) > limits.max_encoded_bytes)
    fail("video ", path, " is ", size, " bytes, over the limit of ", limits.max_encoded_bytes, " bytes");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), size)) fail("cannot read video ", path);
  try {
    return decode_video(bytes, sampling, limits);
  } catch (const Error& e) {
    fail("video ", path, ": ", e.what());
  }
}

}  // namespace qvl
