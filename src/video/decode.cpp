// decode_video: header limits, the packet table, frame sampling, then the
// decoding of only what the sampled frames need (planned_decode.h) or, where
// the stream does not allow that, of every frame in order; either way only
// the sampled frames are converted and kept.
extern "C" {
#include <libavutil/cpu.h>
}

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>

#include "util/error.h"
#include "video/decode_plan.h"
#include "video/decoder.h"
#include "video/memory_input.h"
#include "video/nal_units.h"
#include "video/packet_table.h"
#include "video/planned_decode.h"
#include "video/video.h"

namespace qvl {
namespace {

using video_detail::av_error_text;
using video_detail::AvFree;
using video_detail::Deadline;
using video_detail::FfmpegMessages;
using video_detail::MemoryInput;
using video_detail::NalCodec;
using video_detail::open_decoder;
using video_detail::PacketTable;
using video_detail::RgbConverter;

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
  AVCodecID codec = AV_CODEC_ID_NONE;
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
  f.codec = par->codec_id;
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

std::optional<NalCodec> nal_codec(AVCodecID id) {
  if (id == AV_CODEC_ID_H264) return NalCodec::H264;
  if (id == AV_CODEC_ID_HEVC) return NalCodec::Hevc;
  return std::nullopt;
}

// AVDISCARD_NONREF drops exactly the pictures nothing refers to: H.264's
// nal_ref_idc 0 ones; H.265's sub-layer non-reference pictures, which only
// a single sub-layer makes references of nothing (nal_units.h).
bool non_reference_discardable(const AVCodecParameters* par) {
  if (par->codec_id == AV_CODEC_ID_H264) return true;
  return par->codec_id == AV_CODEC_ID_HEVC &&
         video_detail::hevc_temporal_layers({par->extradata, static_cast<size_t>(par->extradata_size)}) == 1;
}

// The packet table (packet_table.h), read from where the headers left the
// demuxer. Containers without a frame count (Matroska, WebM, GIF, some AVI)
// take theirs from it, and the rate from the time its packets span when the
// headers declare none; for them a read that fails is the clip's error.
PacketTable read_packets(AVFormatContext* fc, StreamFacts& f, const VideoLimits& limits, const Deadline& deadline) {
  const bool counting = f.frames == 0 || f.fps == 0;
  // When the headers gave the count, what FFmpeg says reading the table is
  // not the clip's error: a decode of everything says it again if it is.
  std::optional<FfmpegMessages> aside;
  if (!counting) aside.emplace();
  std::function<bool(std::span<const uint8_t>)> clean_start;
  const AVCodecParameters* par = fc->streams[f.index]->codecpar;
  if (const auto codec = nal_codec(par->codec_id)) {
    const int length_size = video_detail::nal_length_size(*codec, {par->extradata, static_cast<size_t>(par->extradata_size)});
    clean_start = [codec = *codec, length_size](std::span<const uint8_t> packet) {
      return video_detail::starts_clean(codec, length_size, packet);
    };
  }
  PacketTable t = video_detail::read_packet_table(fc, f.index, limits.max_total_frames, deadline, clean_start);
  if (!counting) return t;
  if (t.over_limit) fail("video has over ", limits.max_total_frames, " frames, the limit");
  if (t.read_error != 0)
    fail("cannot read the video (", av_error_text(t.read_error), ")", FfmpegMessages::quoted_current());
  const auto count = static_cast<int64_t>(t.packets.size());
  f.frames = count;
  if (f.fps == 0 && count > 0 && t.duration_ticks > 0) {
    const double seconds = static_cast<double>(t.duration_ticks) * av_q2d(fc->streams[f.index]->time_base);
    if (seconds > 0 && std::isfinite(seconds)) f.fps = static_cast<double>(count) / seconds;
    if (seconds > limits.max_duration_s)
      fail("video lasts ", seconds, " s, over the limit of ", limits.max_duration_s, " s");
  }
  return t;
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
  int64_t packets_sent() const { return packets_sent_; }

  // Sends one packet (nullptr: flush) and takes every frame it releases.
  void feed(AVCodecContext* ctx, const AVPacket* pkt) {
    if (pkt) ++packets_sent_;
    int rc = avcodec_send_packet(ctx, pkt);
    if (rc < 0 && rc != AVERROR_EOF)
      fail("cannot decode the video after frame ", decoded_, " (", av_error_text(rc), ")",
           FfmpegMessages::quoted_current());
    while (!done()) {
      deadline_.check("decoding");
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
  int64_t decoded_ = 0, packets_sent_ = 0;
};

// Every frame in order up to the last sampled one, on a fresh demuxer from
// the first byte.
void decode_every_frame(std::span<const uint8_t> bytes, const StreamFacts& facts, const VideoLimits& limits,
                        const Deadline& deadline, int threads, Video& out) {
  MemoryInput input(bytes, limits.max_streams, deadline);
  AVFormatContext* fc = input.format();
  read_headers(fc, limits);
  auto ctx = open_decoder(fc->streams[facts.index], limits, threads);
  SampledDecoder decoder(out, deadline);
  std::unique_ptr<AVPacket, AvFree> pkt(av_packet_alloc());
  if (!pkt) fail("out of memory reading the video");
  while (!decoder.done()) {
    deadline.check("decoding");
    const int rc = av_read_frame(fc, pkt.get());
    if (rc == AVERROR_EOF) break;
    if (rc < 0) {
      deadline.check("decoding");
      fail("cannot read the video after frame ", decoder.decoded(), " (", av_error_text(rc), ")",
           FfmpegMessages::quoted_current());
    }
    if (pkt->stream_index == facts.index) {
      // The demuxer marks a packet it could not read whole: the file ends
      // inside it. Counted in packets (decode order), which frame threads
      // do not hold back as they do frames.
      if (pkt->flags & AV_PKT_FLAG_CORRUPT)
        fail("video is truncated or damaged: the data of frame ", decoder.packets_sent(), " is cut off");
      decoder.feed(ctx.get(), pkt.get());
    }
    av_packet_unref(pkt.get());
  }
  if (!decoder.done()) decoder.feed(ctx.get(), nullptr);
  if (!decoder.done())
    fail("video is truncated or damaged: decoded ", decoder.decoded(), " of the ", facts.frames,
         " frames its header declares");
  out.decoding = {decoder.packets_sent(), decoder.decoded(), 0, ctx->thread_count, false, false};
}

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

int video_decoder_threads(int decodes_at_once) {
  return std::clamp(av_cpu_count() / std::max(1, decodes_at_once), 1, kMaxDecoderThreads);
}

Video decode_video(std::span<const uint8_t> bytes, const FrameSampling& sampling, const VideoLimits& limits,
                   const VideoDecoding& how) {
  if (bytes.empty()) fail("video is empty (0 bytes)");
  if (bytes.size() > limits.max_encoded_bytes)
    fail("video is ", bytes.size(), " bytes, over the limit of ", limits.max_encoded_bytes, " bytes");
  FfmpegMessages messages;
  const Deadline deadline(limits.max_seconds);

  StreamFacts facts;
  PacketTable table;
  Video out;
  bool discard_non_reference = false;
  {
    MemoryInput probe(bytes, limits.max_streams, deadline);
    facts = read_headers(probe.format(), limits);
    table = read_packets(probe.format(), facts, limits, deadline);
    const AVCodecParameters* par = probe.format()->streams[facts.index]->codecpar;
    out.container = probe.format()->iformat->name;
    out.codec = avcodec_get_name(par->codec_id);
    discard_non_reference = non_reference_discardable(par);
  }
  if (facts.frames == 0) fail("video has no frames");
  if (facts.fps == 0) fail("video declares no frame rate and its packets carry no durations");
  if (static_cast<double>(facts.frames) / facts.fps > limits.max_duration_s)
    fail("video lasts ", static_cast<double>(facts.frames) / facts.fps, " s, over the limit of ",
         limits.max_duration_s, " s");

  out.width = facts.width;
  out.height = facts.height;
  out.fps = facts.fps;
  out.total_frames = facts.frames;
  out.frame_indices =
      sample_frame_indices(facts.frames, facts.fps, within_token_budget(sampling, facts.width, facts.height));
  if (limits.budget) limits.budget->reserve(video_decode_peak_bytes(out.width, out.height, out.frame_indices.size()));
  out.frames.reserve(out.frame_indices.size());

  const int threads = how.threads > 0 ? std::min(how.threads, kMaxDecoderThreads) : video_decoder_threads(1);
  // Only H.264 and H.265 are known here well enough to skip frames: their
  // clean starts and non-reference pictures are read from the NAL headers.
  if (how.skip_unsampled && nal_codec(facts.codec)) {
    if (const auto plan = video_detail::plan_sampled_decode(table, out.frame_indices, facts.frames)) {
      const video_detail::PlannedDecodeInput in{bytes, facts.index, &limits, &deadline, threads, discard_non_reference};
      if (video_detail::decode_planned(in, table, *plan, out)) return out;
    }
  }
  table = {};
  decode_every_frame(bytes, facts, limits, deadline, threads, out);
  return out;
}

Video load_video(const std::string& path, const FrameSampling& sampling, const VideoLimits& limits,
                 const VideoDecoding& how) {
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
    return decode_video(bytes, sampling, limits, how);
  } catch (const Error& e) {
    fail("video ", path, ": ", e.what());
  }
}

}  // namespace qvl
