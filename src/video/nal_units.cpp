#include "video/nal_units.h"

#include <algorithm>
#include <functional>

namespace qvl::video_detail {
namespace {

// ISO/IEC 14496-15: avcC's lengthSizeMinusOne is the low 2 bits of byte 4,
// hvcC's of byte 21 (after the 22-byte fixed header starts).
constexpr size_t kAvccLengthByte = 4, kHvccLengthByte = 21, kHvccMinBytes = 23;

bool is_start_code(std::span<const uint8_t> b) {
  return (b.size() >= 3 && b[0] == 0 && b[1] == 0 && b[2] == 1) ||
         (b.size() >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 1);
}

// Calls `unit` with the first header byte(s) of each NAL unit until it
// returns false. Stops quietly at a malformed length: the decoder, not this,
// reports damage.
void for_each_nal(int length_size, std::span<const uint8_t> b,
                  const std::function<bool(std::span<const uint8_t>)>& unit) {
  if (length_size > 0) {
    size_t at = 0;
    const auto n = static_cast<size_t>(length_size);
    while (at + n <= b.size()) {
      size_t len = 0;
      for (size_t i = 0; i < n; ++i) len = (len << 8) | b[at + i];
      at += n;
      if (len == 0 || len > b.size() - at) return;
      if (!unit(b.subspan(at, len))) return;
      at += len;
    }
    return;
  }
  // Annex B: a unit starts after each 00 00 01; only its header is read, so
  // the search stops at the first unit `unit` is done with.
  auto next_start = [&](size_t from) {
    for (size_t k = from; k + 3 <= b.size(); ++k)
      if (b[k] == 0 && b[k + 1] == 0 && b[k + 2] == 1) return k;
    return b.size();
  };
  for (size_t s = next_start(0); s + 3 < b.size(); s = next_start(s + 3))
    if (!unit(b.subspan(s + 3, std::min<size_t>(2, b.size() - (s + 3))))) return;
}

}  // namespace

int nal_length_size(NalCodec codec, std::span<const uint8_t> extradata) {
  if (extradata.empty() || is_start_code(extradata)) return 0;
  // hvcC's configurationVersion is 1 (some writers put 0); avcC's is 1.
  if (codec == NalCodec::H264) {
    if (extradata.size() <= kAvccLengthByte || extradata[0] != 1) return 0;
    return (extradata[kAvccLengthByte] & 3) + 1;
  }
  if (extradata.size() < kHvccMinBytes || extradata[0] > 1) return 0;
  return (extradata[kHvccLengthByte] & 3) + 1;
}

bool starts_clean(NalCodec codec, int length_size, std::span<const uint8_t> packet) {
  bool clean = false;
  for_each_nal(length_size, packet, [&](std::span<const uint8_t> nal) {
    if (codec == NalCodec::H264) {
      const int type = nal[0] & 0x1F;
      if (type == 5) clean = true;         // coded slice of an IDR picture
      return !(type >= 1 && type <= 5);  // the first slice decides
    }
    const int type = (nal[0] >> 1) & 0x3F;
    if (type >= 32) return true;   // parameter sets, SEI, AUD: not a picture
    clean = type >= 16 && type <= 21;  // BLA_W_LP .. CRA_NUT
    return false;
  });
  return clean;
}

int hevc_temporal_layers(std::span<const uint8_t> extradata) {
  if (extradata.size() < kHvccMinBytes || is_start_code(extradata) || extradata[0] > 1) return 0;
  return (extradata[kHvccLengthByte] >> 3) & 7;
}

}  // namespace qvl::video_detail
