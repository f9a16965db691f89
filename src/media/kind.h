// What a medium is, decided from its bytes: every front end hands the
// intake bytes with a hint (an image_url part, a --video flag, a C call) and
// the first bytes decide, so a PDF sent as an image, a file:// path or a
// data: URL whose MIME type says something else is taken for what it is.
#pragma once

#include <cstdint>
#include <span>

namespace qvl {

enum class MediaKind { Image, Video, Pdf };

// "image", "video", "PDF": for messages.
const char* media_kind_name(MediaKind kind);

// The kind the magic bytes say: %PDF- a PDF; JPEG, PNG, WebP, BMP (and the
// AVIF/HEIC brands, which the image decoder names) an image; an ISO BMFF
// (MP4/MOV), EBML (WebM/MKV) or RIFF AVI container a video. A GIF is an
// image in an image's place and a clip in a video's; bytes that say none of
// these are `hint`'s, whose decoder says what is wrong with them.
MediaKind media_kind(std::span<const uint8_t> bytes, MediaKind hint);

}  // namespace qvl
