// PDF input of the chat parser: a `file` part (OpenAI's {"type": "file",
// "file": {"file_data": "data:application/pdf;base64,…"}}) or a PDF in an
// image_url part (a data: URL, a file, a remote URL: the bytes say it is
// one, media/kind.h) becomes the document's pages, rendered and put into the
// prompt as image parts, in order, in place of the part.
//
// The part is only read while the body is parsed; the media step
// (chat_media.h) opens it and plans its pages through the request's media
// intake (media/intake.h), which counts and sizes the pages of every PDF of
// the request, and renders them last. This file holds the part's reading and
// how the intake's refusals of a PDF reach the client.
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "media/intake.h"
#include "server/requests/chat_request.h"
#include "server/requests/media_source.h"
#include "server/requests/request_fields.h"

namespace qvl {

// A page selection as sent ("1-3,7", or one page as a number), at most 1024
// characters; the intake reads it against the document.
std::string page_selection(const RequestField& pages);

// A file part's "file" object: file_data (required), filename (ignored),
// and qvl's "pages" and "dpi"; file_id and any other key are refused naming
// them, by paths below the object's ("messages[0].content[1].file.dpi").
// typed_part: the object is a Responses input_file part, whose "type" is its
// own. The message and part indices are the caller's. Throws ApiError (400).
MediaSource parse_file_part(const RequestField& file, const PdfLimits& limits, bool typed_part = false);

// The source's bytes, fetched as the media options allow, up to the largest
// file of any kind (max_media_bytes): what they are is decided after.
std::vector<uint8_t> fetch_source_bytes(const MediaSource& source, const ChatLimits& limits);

// The intake's refusal of the source's PDF as the client sees it: 400
// invalid_pdf naming source.url_param (no PDF, truncated, corrupt,
// encrypted), 400 invalid_pages naming source.pages_param, 413
// too_many_pages (--max-pdf-pages), 413 pdf_too_large (a page over the pixel
// cap even at the lowest dpi, or --max-pdf-pixels), 413 image_too_large
// (the pages cannot fit the memory budget).
[[noreturn]] void refuse_pdf(const PdfRefusal& refusal, const MediaSource& source);

}  // namespace qvl
