#include "video/planned_decode.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "util/error.h"
#include "video/decoder.h"

namespace qvl::video_detail {
namespace {

// The stream did not keep to its packet table: decode_planned gives up and
// the caller decodes everything.
struct OffTable {};

// The video stream's packets by decode position, reached by seeking the
// demuxer or by reading through (demuxing without decoding, cheap in
// memory). A seek is trusted only where it lands on a packet the table lists
// at or before the one asked for; after one that does not, this container is
// read through from the start.
class PacketReader {
 public:
  PacketReader(const PlannedDecodeInput& in, const PacketTable& table) : in_(in), table_(table) {
    pkt_.reset(av_packet_alloc());
    if (!pkt_) fail("out of memory reading the video");
    for (size_t i = 0; i < table.packets.size() && can_seek_; ++i)
      can_seek_ = table.packets[i].pos >= 0 && by_pos_.emplace(table.packets[i].pos, i).second;
    open();
  }
  int64_t seeks() const { return seeks_; }
  const AVStream* stream() const { return input_->format()->streams[in_.stream]; }

  // Makes the packet at decode position `to` (at or after the current one)
  // the next one read.
  void go_to(int64_t to, bool seek) {
    if (to < at_) throw OffTable{};
    if (seek && can_seek_ && to > at_) seek_to(to);
    while (at_ < to) {
      load();
      pending_ = false;
      ++at_;
    }
  }

  // The packet at the current position, valid until the next call.
  const AVPacket* next() {
    load();
    pending_ = false;
    ++at_;
    return pkt_.get();
  }

 private:
  void open() {
    input_.reset();
    input_ = std::make_unique<MemoryInput>(in_.bytes, in_.limits->max_streams, *in_.deadline);
    AVFormatContext* fc = input_->format();
    for (unsigned i = 0; i < fc->nb_streams; ++i)
      if (static_cast<int>(i) != in_.stream) fc->streams[i]->discard = AVDISCARD_ALL;
    at_ = 0;
    pending_ = false;
  }

  bool read_video() {
    for (;;) {
      av_packet_unref(pkt_.get());
      const int rc = av_read_frame(input_->format(), pkt_.get());
      if (rc == AVERROR_EOF) return false;
      if (rc < 0) throw OffTable{};
      if (pkt_->stream_index == in_.stream) return true;
    }
  }

  bool is_entry(int64_t at) const {
    const PacketEntry& e = table_.packets[static_cast<size_t>(at)];
    return pkt_->pts == e.pts && (e.pos < 0 || pkt_->pos == e.pos);
  }

  // Reads the packet at at_ unless it is read already.
  void load() {
    if (pending_) return;
    if (at_ >= static_cast<int64_t>(table_.packets.size()) || !read_video() || !is_entry(at_)) throw OffTable{};
    pending_ = true;
  }

  void seek_to(int64_t to) {
    const PacketEntry& e = table_.packets[static_cast<size_t>(to)];
    // The timestamp seeks compare with is the pts (Matroska) or the dts
    // (MP4): backwards from the smaller lands on `to` or before it.
    const int64_t ts = e.dts == AV_NOPTS_VALUE ? e.pts : std::min(e.pts, e.dts);
    pending_ = false;
    if (av_seek_frame(input_->format(), in_.stream, ts, AVSEEK_FLAG_BACKWARD) >= 0 && read_video()) {
      const auto landed = by_pos_.find(pkt_->pos);
      if (landed != by_pos_.end() && static_cast<int64_t>(landed->second) <= to &&
          is_entry(static_cast<int64_t>(landed->second))) {
        at_ = static_cast<int64_t>(landed->second);
        pending_ = true;
        ++seeks_;
        return;
      }
    }
    can_seek_ = false;
    open();
  }

  const PlannedDecodeInput& in_;
  const PacketTable& table_;
  std::unique_ptr<MemoryInput> input_;
  std::unique_ptr<AVPacket, AvFree> pkt_;
  std::unordered_map<int64_t, size_t> by_pos_;  // byte offset -> decode position
  bool can_seek_ = true;
  int64_t at_ = 0;        // decode position of the next packet
  bool pending_ = false;  // pkt_ holds the packet at at_
  int64_t seeks_ = 0;
};

// Sends packets and takes the frames they release, keeping the sampled ones
// in their places by pts.
class PlannedDecoder {
 public:
  PlannedDecoder(const PlannedDecodeInput& in, const AVStream* st, const DecodePlan& plan, Video& out)
      : in_(in), plan_(plan), out_(out), ctx_(open_decoder(st, *in.limits, in.threads)), rgb_(out.width, out.height) {
    frame_.reset(av_frame_alloc());
    if (!frame_) fail("out of memory decoding the video");
    for (size_t j = 0; j < plan.sample_pts.size(); ++j) slot_.emplace_back(plan.sample_pts[j], j);
    std::sort(slot_.begin(), slot_.end());
    out_.frames.assign(plan.sample_pts.size(), Image{});
  }

  // A non-sampled frame's packet goes with non-reference frames discarded
  // (the decoder still reads its headers); a sampled one's is decoded.
  void send(const AVPacket* pkt, bool sampled) {
    ctx_->skip_frame = in_.discard_non_reference && !sampled ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
    ++packets_sent_;
    receive(avcodec_send_packet(ctx_.get(), pkt));
  }

  // Drains the frames still held (reordering, frame threads) and readies the
  // decoder for a run that starts afresh.
  void end_run() {
    receive(avcodec_send_packet(ctx_.get(), nullptr));
    avcodec_flush_buffers(ctx_.get());
    shown_any_ = false;
  }

  bool complete() const { return kept_ == slot_.size(); }
  int64_t packets_sent() const { return packets_sent_; }
  int64_t frames_decoded() const { return frames_decoded_; }
  int threads() const { return ctx_->thread_count; }

 private:
  void receive(int sent) {
    if (sent < 0 && sent != AVERROR_EOF) throw OffTable{};
    for (;;) {
      in_.deadline->check("decoding");
      const int rc = avcodec_receive_frame(ctx_.get(), frame_.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      if (rc < 0) throw OffTable{};
      take(frame_.get());
      av_frame_unref(frame_.get());
    }
  }

  void take(const AVFrame* f) {
    ++frames_decoded_;
    const int64_t pts = f->pts;
    const auto shown = std::lower_bound(plan_.shown_pts.begin(), plan_.shown_pts.end(), pts);
    // Within a run frames come out in the order they are shown, each a
    // frame the table lists.
    if (pts == AV_NOPTS_VALUE || shown == plan_.shown_pts.end() || *shown != pts || (shown_any_ && pts <= last_pts_))
      throw OffTable{};
    shown_any_ = true;
    last_pts_ = pts;
    const auto s = std::lower_bound(slot_.begin(), slot_.end(), std::make_pair(pts, size_t{0}));
    if (s == slot_.end() || s->first != pts) return;
    Image& kept = out_.frames[s->second];
    if (!kept.rgb.empty()) throw OffTable{};
    kept = rgb_.convert(f, shown - plan_.shown_pts.begin());
    ++kept_;
  }

  const PlannedDecodeInput& in_;
  const DecodePlan& plan_;
  Video& out_;
  std::unique_ptr<AVCodecContext, AvFree> ctx_;
  RgbConverter rgb_;
  std::unique_ptr<AVFrame, AvFree> frame_;
  std::vector<std::pair<int64_t, size_t>> slot_;  // (pts, index into out.frames), by pts
  size_t kept_ = 0;
  bool shown_any_ = false;  // in this run
  int64_t last_pts_ = 0;
  int64_t packets_sent_ = 0, frames_decoded_ = 0;
};

}  // namespace

bool decode_planned(const PlannedDecodeInput& in, const PacketTable& table, const DecodePlan& plan, Video& out) {
  FfmpegMessages messages;  // what FFmpeg says here is not quoted by the decode of everything after a give-up
  try {
    PacketReader reader(in, table);
    PlannedDecoder decoder(in, reader.stream(), plan, out);
    for (const DecodeRun& run : plan.runs) {
      reader.go_to(run.first, run.seek);
      for (int64_t at = run.first; at <= run.last; ++at) {
        in.deadline->check("decoding");
        decoder.send(reader.next(), plan.sampled[static_cast<size_t>(at)]);
      }
      decoder.end_run();
    }
    if (!decoder.complete()) throw OffTable{};
    out.decoding = {decoder.packets_sent(), decoder.frames_decoded(), reader.seeks(), decoder.threads(), true,
                    in.discard_non_reference};
    return true;
  } catch (const OffTable&) {
    out.frames.clear();
    return false;
  }
}

}  // namespace qvl::video_detail
