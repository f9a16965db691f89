// Hostile JPEGs built in the test from a real tiny one (encoders.h), so no
// binary is committed: a dimension bomb (a few hundred bytes declaring a huge
// image that libjpeg fills with grey) and a scan bomb (a progressive JPEG
// whose one AC scan is repeated hundreds of times, each re-walking the whole
// coefficient buffer).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "encoders.h"

namespace qvl_test {

struct JpegSegment {
  uint8_t marker;
  std::vector<uint8_t> bytes;  // the whole segment: FF, marker, length, payload (and a scan's entropy data)
};

// SOI ... EOI cut into segments; a scan keeps its entropy-coded data.
inline std::vector<JpegSegment> jpeg_segments(const std::vector<uint8_t>& j) {
  std::vector<JpegSegment> out;
  size_t at = 2;
  while (at + 4 <= j.size()) {
    if (j[at] != 0xFF) throw std::runtime_error("jpeg_segments: lost sync");
    const uint8_t marker = j[at + 1];
    if (marker == 0xD9) break;
    size_t end = at + 2 + (size_t(j[at + 2]) << 8 | j[at + 3]);
    if (marker == 0xDA)  // entropy data runs to the next marker that is not a stuffed 00 or a restart
      while (end + 1 < j.size() && !(j[end] == 0xFF && j[end + 1] != 0 && (j[end + 1] < 0xD0 || j[end + 1] > 0xD7)))
        ++end;
    out.push_back({marker, std::vector<uint8_t>(j.begin() + at, j.begin() + end)});
    at = end;
  }
  return out;
}

inline void set_frame_size(JpegSegment& sof, uint16_t width, uint16_t height) {
  sof.bytes[5] = uint8_t(height >> 8), sof.bytes[6] = uint8_t(height);
  sof.bytes[7] = uint8_t(width >> 8), sof.bytes[8] = uint8_t(width);
}

inline std::vector<uint8_t> tiny_grey_jpeg(bool progressive) {
  std::vector<uint8_t> grey(16 * 16);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = uint8_t(i * 7);
  return encode_jpeg(grey, 16, 16, JCS_GRAYSCALE, 1, 50, progressive);
}

// A baseline JPEG declaring width x height whose entropy data stops at once
// (EOI follows the scan header): libjpeg warns and decodes a whole grey
// picture of that size.
inline std::vector<uint8_t> jpeg_dimension_bomb(uint16_t width, uint16_t height) {
  std::vector<uint8_t> out = {0xFF, 0xD8};
  for (JpegSegment& s : jpeg_segments(tiny_grey_jpeg(false))) {
    if (s.marker == 0xC0) set_frame_size(s, width, height);
    if (s.marker == 0xDA) s.bytes.resize(2 + (size_t(s.bytes[2]) << 8 | s.bytes[3]));  // header only
    out.insert(out.end(), s.bytes.begin(), s.bytes.end());
  }
  out.insert(out.end(), {0xFF, 0xD9});
  return out;
}

// A progressive JPEG declaring width x height: its DC scan, then its first
// AC scan's header (with the tables before it) `scans` times, no data.
inline std::vector<uint8_t> jpeg_scan_bomb(uint16_t width, uint16_t height, int scans) {
  const std::vector<JpegSegment> segs = jpeg_segments(tiny_grey_jpeg(true));
  std::vector<uint8_t> out = {0xFF, 0xD8};
  size_t i = 0;
  int seen_scans = 0;
  for (; i < segs.size() && seen_scans < 1; ++i) {  // up to and with the DC scan
    JpegSegment s = segs[i];
    if (s.marker == 0xC2) set_frame_size(s, width, height);
    if (s.marker == 0xDA) ++seen_scans;
    out.insert(out.end(), s.bytes.begin(), s.bytes.end());
  }
  std::vector<uint8_t> ac;  // the tables before the next scan, and its header
  for (; i < segs.size(); ++i) {
    const JpegSegment& s = segs[i];
    if (s.marker == 0xDA) {
      ac.insert(ac.end(), s.bytes.begin(), s.bytes.begin() + 2 + (size_t(s.bytes[2]) << 8 | s.bytes[3]));
      break;
    }
    ac.insert(ac.end(), s.bytes.begin(), s.bytes.end());
  }
  for (int k = 0; k < scans; ++k) out.insert(out.end(), ac.begin(), ac.end());
  out.insert(out.end(), {0xFF, 0xD9});
  return out;
}

}  // namespace qvl_test
