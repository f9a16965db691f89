// The pure parts of decode_video's skipping: which packets are clean starts
// (from NAL unit headers), and the runs of packets a set of sampled frames
// needs (decode_plan.h), on packet tables written out by hand.
#include <gtest/gtest.h>

#include "video/decode_plan.h"
#include "video/nal_units.h"

namespace {

using qvl::video_detail::DecodeRun;
using qvl::video_detail::NalCodec;
using qvl::video_detail::PacketEntry;
using qvl::video_detail::PacketTable;
using Bytes = std::vector<uint8_t>;

// ------------------------------------------------------------ NAL units

// Length-prefixed (4-byte) units, as MP4 carries them.
Bytes units(std::initializer_list<Bytes> nals) {
  Bytes out;
  for (const Bytes& n : nals) {
    const auto len = static_cast<uint32_t>(n.size());
    out.insert(out.end(), {uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8), uint8_t(len)});
    out.insert(out.end(), n.begin(), n.end());
  }
  return out;
}

TEST(NalUnits, H264IdrIsACleanStartAndOtherSlicesAreNot) {
  const Bytes aud = {0x09, 0xF0}, sei = {0x06, 0x05, 0x01}, idr = {0x65, 0x88, 0x84}, non_idr = {0x41, 0x9A, 0x02},
              non_ref = {0x01, 0x9E, 0x02};
  EXPECT_TRUE(qvl::video_detail::starts_clean(NalCodec::H264, 4, units({aud, sei, idr})));
  EXPECT_TRUE(qvl::video_detail::starts_clean(NalCodec::H264, 4, units({idr})));
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::H264, 4, units({aud, non_idr})));
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::H264, 4, units({non_ref})));
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::H264, 4, units({sei})));
  // The first slice decides: an IDR unit after a non-IDR slice is damage, not a start.
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::H264, 4, units({non_idr, idr})));
  // A length running past the packet ends the walk, as a damaged packet.
  Bytes cut = units({idr});
  cut[3] = 0x40;
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::H264, 4, cut));
}

TEST(NalUnits, H264AnnexB) {
  const Bytes sps_then_idr = {0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1F, 0, 0, 1, 0x68, 0xEE, 0, 0, 1, 0x65, 0x88};
  EXPECT_TRUE(qvl::video_detail::starts_clean(NalCodec::H264, 0, sps_then_idr));
  const Bytes p_slice = {0, 0, 1, 0x41, 0x9A, 0x00, 0x00, 0x03};
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::H264, 0, p_slice));
}

TEST(NalUnits, HevcIrapPicturesAreCleanStarts) {
  auto nal = [](int type) { return Bytes{uint8_t(type << 1), 0x01, 0xAF}; };
  const Bytes vps = nal(32), sps = nal(33), pps = nal(34), prefix_sei = nal(39);
  EXPECT_TRUE(qvl::video_detail::starts_clean(NalCodec::Hevc, 4, units({vps, sps, pps, nal(19)})));  // IDR_W_RADL
  EXPECT_TRUE(qvl::video_detail::starts_clean(NalCodec::Hevc, 4, units({nal(20)})));                 // IDR_N_LP
  EXPECT_TRUE(qvl::video_detail::starts_clean(NalCodec::Hevc, 4, units({prefix_sei, nal(21)})));     // CRA
  EXPECT_TRUE(qvl::video_detail::starts_clean(NalCodec::Hevc, 4, units({nal(16)})));                 // BLA_W_LP
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::Hevc, 4, units({nal(1)})));                 // TRAIL_R
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::Hevc, 4, units({nal(0)})));                 // TRAIL_N
  EXPECT_FALSE(qvl::video_detail::starts_clean(NalCodec::Hevc, 4, units({nal(9)})));                 // RASL_R
}

TEST(NalUnits, LengthSizeAndTemporalLayersFromTheConfigurationRecord) {
  // avcC: version 1, profile, compat, level, 0xFF = 6 reserved bits + lengthSizeMinusOne 3.
  const Bytes avcc = {0x01, 0x64, 0x00, 0x1F, 0xFF, 0xE1, 0x00, 0x04, 0x67, 0x64, 0x00, 0x1F};
  EXPECT_EQ(qvl::video_detail::nal_length_size(NalCodec::H264, avcc), 4);
  Bytes avcc2 = avcc;
  avcc2[4] = 0xFD;  // lengthSizeMinusOne 1
  EXPECT_EQ(qvl::video_detail::nal_length_size(NalCodec::H264, avcc2), 2);
  EXPECT_EQ(qvl::video_detail::nal_length_size(NalCodec::H264, Bytes{0, 0, 0, 1, 0x67}), 0);  // Annex B
  EXPECT_EQ(qvl::video_detail::nal_length_size(NalCodec::H264, Bytes{}), 0);

  Bytes hvcc(23, 0);
  hvcc[0] = 1;
  hvcc[21] = 0x0F;  // constantFrameRate 0, numTemporalLayers 1, temporalIdNested 1, lengthSizeMinusOne 3
  EXPECT_EQ(qvl::video_detail::nal_length_size(NalCodec::Hevc, hvcc), 4);
  EXPECT_EQ(qvl::video_detail::hevc_temporal_layers(hvcc), 1);
  hvcc[21] = 0x1F;  // numTemporalLayers 3
  EXPECT_EQ(qvl::video_detail::hevc_temporal_layers(hvcc), 3);
  hvcc[21] = 0x13;  // numTemporalLayers 2
  EXPECT_EQ(qvl::video_detail::hevc_temporal_layers(hvcc), 2);
  EXPECT_EQ(qvl::video_detail::hevc_temporal_layers(Bytes{0, 0, 0, 1, 0x40, 0x01}), 0);  // Annex B: unknown
}

// ------------------------------------------------------------ plans

// `n` packets shown in decode order (no reordering), a clean start every `gop`.
PacketTable closed_gops(int n, int gop) {
  PacketTable t;
  for (int i = 0; i < n; ++i) t.packets.push_back({i * 10, i * 10, 1000 + i * 100, i % gop == 0});
  return t;
}

std::vector<std::pair<int64_t, int64_t>> spans(const qvl::video_detail::DecodePlan& p) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const DecodeRun& r : p.runs) out.emplace_back(r.first, r.last);
  return out;
}

TEST(DecodePlan, EachSampleFromTheCleanStartBeforeIt) {
  const PacketTable t = closed_gops(30, 10);
  const auto plan = qvl::video_detail::plan_sampled_decode(t, std::vector<int64_t>{2, 25}, 30);
  ASSERT_TRUE(plan);
  EXPECT_EQ(spans(*plan), (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {20, 25}}));
  EXPECT_FALSE(plan->runs[0].seek);  // nothing before it
  EXPECT_TRUE(plan->runs[1].seek);   // 3..19 holds the group starting at 10
  EXPECT_EQ(plan->sample_pts, (std::vector<int64_t>{20, 250}));
  for (int i = 0; i < 30; ++i) EXPECT_EQ(plan->sampled[i], i == 2 || i == 25) << i;
  ASSERT_EQ(plan->shown_pts.size(), 30u);
  EXPECT_EQ(plan->shown_pts[7], 70);
}

TEST(DecodePlan, AShortGapIsReadThroughAndRunsThatMeetAreOne) {
  const PacketTable t = closed_gops(30, 10);
  // 3..9 holds no whole group: read through to 10, not a seek.
  auto plan = qvl::video_detail::plan_sampled_decode(t, std::vector<int64_t>{2, 12}, 30);
  ASSERT_TRUE(plan);
  EXPECT_EQ(spans(*plan), (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {10, 12}}));
  EXPECT_FALSE(plan->runs[1].seek);
  // 9 then 10: the second run would start where the first ends; one run.
  plan = qvl::video_detail::plan_sampled_decode(t, std::vector<int64_t>{9, 10, 15}, 30);
  ASSERT_TRUE(plan);
  EXPECT_EQ(spans(*plan), (std::vector<std::pair<int64_t, int64_t>>{{0, 15}}));
  // The first sample far from the start: the first run is sought too.
  plan = qvl::video_detail::plan_sampled_decode(t, std::vector<int64_t>{29}, 30);
  ASSERT_TRUE(plan);
  EXPECT_EQ(spans(*plan), (std::vector<std::pair<int64_t, int64_t>>{{20, 29}}));
  EXPECT_TRUE(plan->runs[0].seek);
}

TEST(DecodePlan, ReorderedFramesAndOpenGopLeadingPictures) {
  // Decode order with shown pts: I0 P3 B1 B2 | CRA6 B4 B5 P9 B7 B8. The CRA's
  // leading pictures (pts 4, 5) need the group before it.
  PacketTable t;
  const int64_t pts[] = {0, 3, 1, 2, 6, 4, 5, 9, 7, 8};
  for (int i = 0; i < 10; ++i) t.packets.push_back({pts[i], i - 2, 100 * i, i == 0 || i == 4});
  // Frame 4 (shown 5th) is pts 4, decoded at 5: from 0, not from the CRA at 4.
  auto plan = qvl::video_detail::plan_sampled_decode(t, std::vector<int64_t>{4}, 10);
  ASSERT_TRUE(plan);
  EXPECT_EQ(spans(*plan), (std::vector<std::pair<int64_t, int64_t>>{{0, 5}}));
  // Frame 8 (pts 8, decoded at 9) starts at the CRA; frame 1 (pts 1) is decoded at 2.
  plan = qvl::video_detail::plan_sampled_decode(t, std::vector<int64_t>{1, 8}, 10);
  ASSERT_TRUE(plan);
  EXPECT_EQ(spans(*plan), (std::vector<std::pair<int64_t, int64_t>>{{0, 2}, {4, 9}}));
  EXPECT_FALSE(plan->runs[1].seek);
  EXPECT_EQ(plan->sample_pts, (std::vector<int64_t>{1, 8}));
  EXPECT_TRUE(plan->sampled[2] && plan->sampled[9]);
}

TEST(DecodePlan, NoPlanWhenPacketsAreNotFramesOneToOne) {
  PacketTable t = closed_gops(10, 5);
  const std::vector<int64_t> samples = {0, 9};
  EXPECT_TRUE(qvl::video_detail::plan_sampled_decode(t, samples, 10));
  EXPECT_FALSE(qvl::video_detail::plan_sampled_decode(t, samples, 11));  // the headers count another frame
  PacketTable dup = t;
  dup.packets[4].pts = dup.packets[3].pts;
  EXPECT_FALSE(qvl::video_detail::plan_sampled_decode(dup, samples, 10));
  PacketTable flagged = t;
  flagged.one_frame_per_packet = false;
  EXPECT_FALSE(qvl::video_detail::plan_sampled_decode(flagged, samples, 10));
  PacketTable cut = t;
  cut.read_error = -5;
  EXPECT_FALSE(qvl::video_detail::plan_sampled_decode(cut, samples, 10));
}

}  // namespace
