// What decode_video needs to know of an H.264 or H.265 packet before
// decoding it: whether a fresh decoder can start there, and whether the
// stream's non-reference pictures are safe to discard. Read from the NAL unit
// headers and the avcC / hvcC record, never from the container's keyframe
// flag alone (an MP4 'stss' may list open-GOP I-frames that are not clean
// starts).
#pragma once

#include <cstdint>
#include <span>

namespace qvl::video_detail {

enum class NalCodec { H264, Hevc };

// How the stream's NAL units are framed: the size of each unit's big-endian
// length prefix (1, 2 or 4 bytes: avcC / hvcC, as MP4 and Matroska carry
// them), or 0 for Annex B start codes (00 00 01). From the codec's
// extradata; an empty one or one that starts with a start code means Annex B.
int nal_length_size(NalCodec codec, std::span<const uint8_t> extradata);

// True when the packet holds a picture a decoder can start from with nothing
// before it: an IDR picture (H.264); an IDR, CRA or BLA picture (H.265, whose
// CRA leading pictures are skipped by a decoder that starts there).
bool starts_clean(NalCodec codec, int length_size, std::span<const uint8_t> packet);

// hvcC's numTemporalLayers: 1 when every picture is in one temporal
// sub-layer, so a sub-layer non-reference picture (TRAIL_N, RASL_N, ...) is
// a reference of nothing; 0 when unknown (no hvcC). FFmpeg's
// AVDISCARD_NONREF drops those pictures whatever their sub-layer, which is
// safe only then.
int hevc_temporal_layers(std::span<const uint8_t> extradata);

}  // namespace qvl::video_detail
