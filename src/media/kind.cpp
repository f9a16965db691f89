#include "media/kind.h"

#include <cstring>

#include "pdf/pdf_document.h"

namespace qvl {
namespace {

bool at(std::span<const uint8_t> bytes, size_t offset, const char* magic, size_t n) {
  return bytes.size() >= offset + n && std::memcmp(bytes.data() + offset, magic, n) == 0;
}

bool is_image(std::span<const uint8_t> b) {
  if (at(b, 0, "\xFF\xD8\xFF", 3) || at(b, 0, "\x89PNG", 4) || at(b, 0, "BM", 2)) return true;
  if (at(b, 0, "RIFF", 4) && at(b, 8, "WEBP", 4)) return true;
  // ISO BMFF still images: the image decoder refuses them by name.
  return at(b, 4, "ftyp", 4) && (at(b, 8, "avif", 4) || at(b, 8, "avis", 4) || at(b, 8, "heic", 4) ||
                                 at(b, 8, "heix", 4) || at(b, 8, "mif1", 4));
}

bool is_video(std::span<const uint8_t> b) {
  if (at(b, 4, "ftyp", 4)) return true;                    // MP4, MOV, 3GP
  if (at(b, 0, "\x1A\x45\xDF\xA3", 4)) return true;        // EBML: WebM, MKV
  return at(b, 0, "RIFF", 4) && at(b, 8, "AVI ", 4);       // AVI
}

}  // namespace

const char* media_kind_name(MediaKind kind) {
  switch (kind) {
    case MediaKind::Video: return "video";
    case MediaKind::Pdf: return "PDF";
    default: return "image";
  }
}

MediaKind media_kind(std::span<const uint8_t> bytes, MediaKind hint) {
  if (is_pdf(bytes)) return MediaKind::Pdf;
  if (is_image(bytes)) return MediaKind::Image;
  if (is_video(bytes)) return MediaKind::Video;
  if (at(bytes, 0, "GIF8", 4)) return hint == MediaKind::Video ? MediaKind::Video : MediaKind::Image;
  return hint;
}

}  // namespace qvl
