// Which packets decoding the sampled frames of a clip needs, from its packet
// table: for each sampled frame, the last clean start at or before it in
// decode order that is not shown after it; the runs from those starts to the
// sampled frames' packets, merged where they meet. Between runs nothing is
// decoded: the demuxer seeks over a gap that holds a whole group of pictures
// and reads through (without decoding) a shorter one. The pure part of
// decode_video's fast path, tested on its own (tests/video/decode_plan_test.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "video/packet_table.h"

namespace qvl::video_detail {

struct DecodeRun {
  // Decode-order positions in the packet table: `first` a clean start (or
  // the stream's first packet, where a fresh decoder is what decoding
  // everything starts with), `last` the last packet a sampled frame needs.
  int64_t first = 0, last = 0;
  bool seek = false;  // the gap before `first` holds a whole group of pictures
};

struct DecodePlan {
  std::vector<DecodeRun> runs;      // increasing and disjoint
  std::vector<int64_t> sample_pts;  // [sampled frames] the pts of each, in frame_indices order
  std::vector<bool> sampled;        // [packets] the packet at this decode position is a sampled frame
  std::vector<int64_t> shown_pts;   // [packets] every pts in showing order: frame k's is shown_pts[k]
};

// The plan for `frame_indices` (increasing indices into the frames in showing
// order), or nothing when the table cannot say which packet is which frame:
// a packet without a pts or flagged damaged or discarded, two with one pts,
// a read that ended early, or a count other than `total_frames` (the count
// the indices were sampled from).
std::optional<DecodePlan> plan_sampled_decode(const PacketTable& table, std::span<const int64_t> frame_indices,
                                              int64_t total_frames);

}  // namespace qvl::video_detail
