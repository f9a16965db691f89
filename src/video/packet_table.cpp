#include "video/packet_table.h"

#include <memory>

#include "util/error.h"

namespace qvl::video_detail {

PacketTable read_packet_table(AVFormatContext* fc, int stream, int64_t max_packets, const Deadline& deadline,
                              const std::function<bool(std::span<const uint8_t>)>& clean_start) {
  // The other tracks' packets are not even read (audio is most of them in
  // number, if not in bytes).
  for (unsigned i = 0; i < fc->nb_streams; ++i)
    if (static_cast<int>(i) != stream) fc->streams[i]->discard = AVDISCARD_ALL;
  std::unique_ptr<AVPacket, AvFree> pkt(av_packet_alloc());
  if (!pkt) fail("out of memory reading the video");
  PacketTable t;
  for (;;) {
    deadline.check("reading");
    const int rc = av_read_frame(fc, pkt.get());
    if (rc == AVERROR_EOF) break;
    if (rc < 0) {
      t.read_error = rc;
      break;
    }
    if (pkt->stream_index == stream) {
      if (static_cast<int64_t>(t.packets.size()) >= max_packets) {
        t.over_limit = true;
        av_packet_unref(pkt.get());
        break;
      }
      PacketEntry e;
      e.pts = pkt->pts;
      e.dts = pkt->dts;
      e.pos = pkt->pos;
      e.clean_start = clean_start && clean_start({pkt->data, static_cast<size_t>(pkt->size)});
      if (pkt->pts == AV_NOPTS_VALUE || (pkt->flags & (AV_PKT_FLAG_CORRUPT | AV_PKT_FLAG_DISCARD)))
        t.one_frame_per_packet = false;
      if (pkt->duration > 0) t.duration_ticks += pkt->duration;
      t.packets.push_back(e);
    }
    av_packet_unref(pkt.get());
  }
  return t;
}

}  // namespace qvl::video_detail
