// The media step of a chat request, after parse_chat_request: each pending
// part fetched (media.h) and handed to one media intake (media/intake.h)
// for the whole request — one deadline, one memory admission, each medium
// reserved beside what the earlier ones hold — which decides from the bytes
// what the part is. In the body's order, image_url and file parts are
// decoded (an image, or a clip sent as an image_url) or, for a PDF, opened
// and planned, its pages counted across the request; then the video parts
// are decoded; then every PDF's pages, checked together against the memory
// budget, are rendered in place of their parts.
#pragma once

#include "server/requests/chat_request.h"

namespace qvl {

class MemoryAdmission;

// Fills `request`'s pending media into its messages. `admission`: where the
// decoding waits for its turn and memory (memory_admission.h); none: decoded
// without accounting (tests, fuzzing). Throws ApiError: 400 naming the part
// for media that cannot be used (invalid_image, invalid_video, invalid_pdf,
// invalid_pages), for more media than limits.max_images once PDFs are
// counted as their pages (too_many_images) and for the spent time limit;
// 413 for a file over its kind's cap and the PDF caps; 403 for a URL the
// media options do not allow; 413 / 429 from the admission.
void take_chat_media(ChatRequest& request, const ChatLimits& limits, MemoryAdmission* admission);

}  // namespace qvl
