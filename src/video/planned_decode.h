// decode_video's fast path: the runs of a DecodePlan decoded on a fresh
// decoder each, non-reference frames that are not sampled discarded, and
// every frame the decoder returns matched to its place by its pts.
#pragma once

#include <cstdint>
#include <span>

#include "video/decode_plan.h"
#include "video/memory_input.h"
#include "video/packet_table.h"
#include "video/video.h"

namespace qvl::video_detail {

struct PlannedDecodeInput {
  std::span<const uint8_t> bytes;
  int stream = 0;  // the video stream's index
  const VideoLimits* limits = nullptr;
  const Deadline* deadline = nullptr;
  int threads = 1;
  bool discard_non_reference = false;  // AVDISCARD_NONREF is safe for this stream (nal_units.h)
};

// Fills out.frames (one per out.frame_indices) and out.decoding. Returns
// false, with out.frames empty, when the stream did not keep to its packet
// table: a frame with a pts the table lacks or shown out of order, a sampled
// frame missing, a packet other than the one expected, an FFmpeg error. The
// caller then decodes everything, which reports a damaged stream as it
// always has. Throws qvl::Error when the deadline passes.
bool decode_planned(const PlannedDecodeInput& in, const PacketTable& table, const DecodePlan& plan, Video& out);

}  // namespace qvl::video_detail
