// Where an image_url points: the bytes of a data: URI (always allowed), a
// local file inside --allowed-media-dir (off by default), or an http(s) URL
// with --allow-remote-images (off by default; size cap, timeout, and no
// loopback/private/link-local addresses unless --allow-private-remote-images).
// Every refusal is an ApiError naming the message part, never a server path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pdf/pdf_limits.h"

namespace qvl {

struct MediaOptions {
  size_t max_image_bytes = 20u << 20;
  size_t max_video_bytes = 64u << 20;  // one encoded clip (a frame list's frames are images)
  std::string allowed_media_dir;  // empty: no local files
  bool allow_remote = false;
  bool allow_private_remote = false;
  double remote_timeout_s = 10;
  // PDFs (document_input.h): the file (--max-pdf-bytes, as the CLI and the
  // C API cap one), pages and rendered pixels per request (--max-pdf-pages,
  // --max-pdf-pixels); time by the image time limit.
  PdfLimits pdf;
};

// Any medium's bytes (an image, a clip, a PDF: what they are is decided
// from them after), capped at options.max_image_bytes. `param` names the
// field in errors ("messages[0].content[1].image_url").
std::vector<uint8_t> fetch_media_bytes(const std::string& url, const MediaOptions& options, const std::string& param);

// For the remote fetcher and its tests (media_address.cpp): true for every
// address a fetch must not reach — each block of the IANA IPv4 and IPv6
// special-purpose registries that is not globally reachable, multicast,
// IPv6 outside 2000::/3, and IPv6 forms carrying such an IPv4 address
// (mapped, translated, NAT64, 6to4, Teredo) — and for text that is no address.
bool is_private_address(const std::string& numeric_ip);
bool is_special_ipv4(uint32_t address);        // host byte order
bool is_special_ipv6(const uint8_t* address);  // 16 bytes, network order

}  // namespace qvl
