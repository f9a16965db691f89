// Byte surgery on the fixture MP4s to make hostile files: find a box by its
// path, patch fields in it, duplicate a track.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace qvl_test {

using Bytes = std::vector<uint8_t>;

inline uint32_t be32(const Bytes& b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}
inline void put_be32(Bytes& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}
inline void put_be16(Bytes& b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

// Offset of the box at `path` ("moov/trak/mdia/mdhd"), searching container
// boxes from `begin` to `end`. Throws when absent.
inline size_t find_box(const Bytes& b, const std::string& path, size_t begin = 0, size_t end = 0) {
  if (end == 0) end = b.size();
  const size_t slash = path.find('/');
  const std::string name = path.substr(0, slash);
  for (size_t at = begin; at + 8 <= end;) {
    const uint32_t size = be32(b, at);
    if (size < 8 || at + size > end) break;
    if (std::memcmp(&b[at + 4], name.data(), 4) == 0)
      return slash == std::string::npos ? at : find_box(b, path.substr(slash + 1), at + 8, at + size);
    at += size;
  }
  throw std::runtime_error("no box " + path);
}

// The sample entry (e.g. 'avc1') inside stsd: after stsd's 8-byte header,
// version/flags and entry count.
inline size_t sample_entry(const Bytes& b) { return find_box(b, "moov/trak/mdia/minf/stbl/stsd") + 16; }

// `copies` more copies of the first track in moov (sizes fixed up).
inline Bytes with_extra_tracks(const Bytes& b, int copies) {
  const size_t moov = find_box(b, "moov");
  const size_t trak = find_box(b, "moov/trak");
  const uint32_t trak_size = be32(b, trak);
  Bytes out(b.begin(), b.begin() + static_cast<long>(trak + trak_size));
  for (int i = 0; i < copies; ++i) out.insert(out.end(), b.begin() + static_cast<long>(trak), b.begin() + static_cast<long>(trak + trak_size));
  out.insert(out.end(), b.begin() + static_cast<long>(trak + trak_size), b.end());
  put_be32(out, moov, be32(b, moov) + static_cast<uint32_t>(copies) * trak_size);
  return out;
}

}  // namespace qvl_test
