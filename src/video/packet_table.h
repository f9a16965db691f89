// Every packet of a clip's video stream, read once before decoding: its
// timestamps, where it lies in the file and whether decoding can start
// there. It gives the frame count (and rate) when the headers do not, and is
// what decode_plan.h plans the decoding of the sampled frames from.
#pragma once

extern "C" {
#include <libavformat/avformat.h>
}

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "video/memory_input.h"

namespace qvl::video_detail {

struct PacketEntry {
  int64_t pts = 0, dts = 0;  // stream time base; dts AV_NOPTS_VALUE when the container has none
  int64_t pos = -1;          // byte offset in the file (-1: unknown)
  bool clean_start = false;  // a fresh decoder can start here (nal_units.h starts_clean)
};

struct PacketTable {
  std::vector<PacketEntry> packets;  // the video stream's, in decode order
  int64_t duration_ticks = 0;        // sum of the packets' durations, stream time base
  int read_error = 0;                // the AVERROR that ended reading early (0: read to the end)
  bool over_limit = false;           // more packets than the limit: reading stopped there
  // Every packet has a pts and none is flagged damaged or to be discarded
  // (an edit list's): the packets are the frames, and their pts order is
  // the order in which frames are shown.
  bool one_frame_per_packet = true;
};

// Reads the rest of the container from where `fc` stands. `clean_start`
// classifies a packet's data (nullptr: none is); at most `max_packets` are
// listed. Throws qvl::Error only when the deadline passes ("reading the video
// took over ...").
PacketTable read_packet_table(AVFormatContext* fc, int stream, int64_t max_packets, const Deadline& deadline,
                              const std::function<bool(std::span<const uint8_t>)>& clean_start);

}  // namespace qvl::video_detail
