// POST /v1/qvl/documents/pages: what a PDF's pages are and what each costs
// before a client asks about them (the page shows this as thumbnails with
// their token cost, for picking pages).
//
// Every page is listed from its page box alone (cheap: nothing rendered):
// the size it renders at for a chat request at the request's dpi, after the
// per-page pixel cap (plan_pages), and the image tokens that size costs,
// counted by the engine's own rule (the caller's PageTokenCounter). Only
// thumbnails are rendered, at most kMaxThumbnails per call (the request's
// "pages" chooses which; by default the first ones), each at the dpi that
// makes its longest side thumbnail_size, through the image admission (a
// decode place, its rendering peak reserved from the budget, within the
// image time limit: once that is spent the remaining pages come back
// without a thumbnail).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "pdf/pdf_limits.h"
#include "server/requests/chat_request.h"

namespace qvl {

class MemoryAdmission;

// Thumbnails rendered per call. Each is a low-dpi Poppler render plus a
// small JPEG (4-8 KB at 256 px): measured on 2 shared cores, 32 text or table
// pages take 0.13 s, but 32 scanned pages (a 1275 x 1650 px image each, which
// Poppler decodes whole at any dpi) 5 s. 32 covers a typical document and the
// default --max-pdf-pages while bounding that worst case.
inline constexpr int kMaxThumbnails = 32;
inline constexpr int kMinThumbnailSize = 64, kMaxThumbnailSize = 1024, kDefaultThumbnailSize = 256;

struct DocumentPagesRequest {
  std::string file_data;  // data:application/pdf;base64,… (or what the media options allow)
  double dpi = kDefaultPdfDpi;
  int thumbnail_size = kDefaultThumbnailSize;  // a thumbnail's longest side, px
  std::string thumbnail_pages;                 // "pages": which get thumbnails; empty: the first kMaxThumbnails
  int64_t min_pixels = 0, max_pixels = 0;      // as in a chat request; 0: the engine's
};

// Every field checked, 400 naming it; any other field 400
// unsupported_parameter.
DocumentPagesRequest parse_document_pages_request(const nlohmann::ordered_json& body, const PdfLimits& limits);

// The image tokens of a page rendered at width x height px (throws ApiError
// when the engine's processor refuses that size).
using PageTokenCounter = std::function<int64_t(int64_t width, int64_t height)>;

// {"object": "qvl.document", "pages", "dpi", "max_pages", "thumbnail_size",
//  "max_thumbnails", "page_info": [{"page", "width", "height", "dpi",
//  "dpi_lowered", "image_tokens", "thumbnail"?}, ...]}. Refuses as a chat
// request's PDF is refused, naming file_data: 400 invalid_pdf (not a PDF,
// truncated, corrupt, encrypted), 413 for a file over the size limit or a
// page over the pixel cap even at the lowest dpi; 400 invalid_pages naming
// pages for a bad thumbnail selection or more than kMaxThumbnails.
nlohmann::json document_pages_json(const DocumentPagesRequest& request, const ChatLimits& limits,
                                   MemoryAdmission* admission, const PageTokenCounter& tokens);

}  // namespace qvl
