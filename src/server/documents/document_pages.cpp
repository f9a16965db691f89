#include "server/documents/document_pages.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include "image/encode.h"
#include "pdf/pdf_pages.h"
#include "server/requests/api_error.h"
#include "server/media/base64.h"
#include "server/documents/document_input.h"
#include "server/media/memory_admission.h"
#include "server/requests/request_fields.h"
#include "util/error.h"

namespace qvl {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// Thumbnails are for eyes, not the model: 80 keeps text legible at 256 px.
constexpr int kThumbnailQuality = 80;

// The thumbnail of one page: rendered at the dpi whose longest side is
// `size` px, held only while it is encoded.
struct Thumbnail {
  double dpi = 0;
  int64_t width = 0, height = 0;
};

Thumbnail thumbnail_of(const PdfPageSize& page, int size) {
  Thumbnail t;
  t.dpi = size * 72.0 / std::max(page.width_pt, page.height_pt);
  t.width = page_pixels_across(page.width_pt, t.dpi);
  t.height = page_pixels_across(page.height_pt, t.dpi);
  return t;
}

std::string render_thumbnail(const PdfDocument& doc, int index, const Thumbnail& t, MediaIntake& intake) {
  const std::shared_ptr<const Image> image = intake.thumbnail(doc, index, t.dpi, t.width, t.height, "file_data");
  const std::vector<uint8_t> jpeg = encode_jpeg(*image, kThumbnailQuality);
  return "data:image/jpeg;base64," + base64_encode(jpeg);
}

}  // namespace

DocumentPagesRequest parse_document_pages_request(const ojson& json_body, const PdfLimits& limits) {
  const RequestField body(json_body);
  for (auto it = body.object().value().begin(); it != json_body.end(); ++it) {
    const std::string& k = it.key();
    if (k != "file_data" && k != "dpi" && k != "thumbnail_size" && k != "pages" && k != "min_pixels" &&
        k != "max_pixels")
      bad_request(k,
                  cat("unknown or unsupported parameter '", k.substr(0, 80),
                      "' (file_data, dpi, thumbnail_size, pages, min_pixels and max_pixels are)"),
                  "unsupported_parameter");
  }
  DocumentPagesRequest r;
  if (!body.has("file_data"))
    bad_request("file_data", "'file_data' is required (data:application/pdf;base64,...)", "missing_field");
  r.file_data = body.string("file_data");
  if (auto dpi = body.number("dpi", limits.min_dpi, limits.max_dpi)) r.dpi = *dpi;
  if (auto size = body.integer("thumbnail_size", kMinThumbnailSize, kMaxThumbnailSize))
    r.thumbnail_size = static_cast<int>(*size);
  if (const std::optional<RequestField> pages = body.find("pages")) r.thumbnail_pages = page_selection(*pages);
  if (auto v = body.integer("min_pixels", 1, INT64_MAX)) r.min_pixels = *v;
  if (auto v = body.integer("max_pixels", 1, INT64_MAX)) r.max_pixels = *v;
  return r;
}

json document_pages_json(const DocumentPagesRequest& request, const ChatLimits& limits, MemoryAdmission* admission,
                         const PageTokenCounter& tokens) {
  // The request's media deadline (--image-time-limit) bounds the listing and the thumbnails alike.
  MediaIntake intake(media_limits(limits), admission);
  const Clock::time_point deadline = intake.deadline();
  const double time_limit = admission ? admission->options().time_limit_s : 0;

  MediaSource source;
  source.hint = MediaKind::Pdf;
  source.url = request.file_data;
  source.url_param = source.param = "file_data";
  source.pages = request.thumbnail_pages;
  source.pages_param = "pages";
  const std::vector<uint8_t> bytes = fetch_source_bytes(source, limits);
  std::optional<PdfDocument> opened;
  try {
    if (bytes.size() > limits.media.pdf.max_bytes)
      throw MediaTooLarge(MediaKind::Pdf, bytes.size(), limits.media.pdf.max_bytes);
    opened.emplace(intake.open_pdf(bytes));
  } catch (const MediaTooLarge& e) {
    refuse_too_large(e, "file_data");
  } catch (const PdfRefusal& e) {
    refuse_pdf(e, source);
  }
  const PdfDocument& doc = *opened;
  const int count = doc.page_count();

  // Which pages get thumbnails: the selection, or the first ones.
  std::vector<bool> with_thumbnail(static_cast<size_t>(count), false);
  if (request.thumbnail_pages.empty()) {
    for (int i = 0; i < std::min(count, kMaxThumbnails); ++i) with_thumbnail[i] = true;
  } else {
    std::vector<int> chosen;
    try {
      chosen = intake.pdf_pages(doc, source.pages);
    } catch (const PdfRefusal& e) {
      refuse_pdf(e, source);
    }
    if (static_cast<int>(chosen.size()) > kMaxThumbnails)
      bad_request("pages",
                  cat("'pages' chooses ", chosen.size(), " pages for thumbnails, over the limit of ", kMaxThumbnails,
                      " per call: ask for them in ranges (like 1-", kMaxThumbnails, ")"),
                  "invalid_pages");
    for (int i : chosen) with_thumbnail[i] = true;
  }

  const PdfLimits& caps = limits.media.pdf;
  std::map<std::pair<int64_t, int64_t>, int64_t> tokens_of_size;  // most documents have one or two page sizes
  json pages = json::array();
  bool thumbnails_stopped = false;
  for (int i = 0; i < count; ++i) {
    // Listing reads only page boxes (a fraction of a millisecond a page), but
    // a file can hold a hundred thousand tiny pages: bounded like image work.
    if (Clock::now() >= deadline)
      throw ApiError(413, "pdf_too_large",
                     cat("listing the PDF's ", count, " pages took over the image time limit of ", time_limit,
                         " s (--image-time-limit); stopped at page ", i + 1),
                     "file_data");
    PdfPagePlan plan;
    try {
      plan = intake.plan_pdf_page(doc, i, request.dpi);
    } catch (const PdfRefusal& e) {
      refuse_pdf(e, source);
    }
    const auto key = std::make_pair(plan.width, plan.height);
    auto cached = tokens_of_size.find(key);
    if (cached == tokens_of_size.end()) cached = tokens_of_size.emplace(key, tokens(plan.width, plan.height)).first;
    json page = {{"page", i + 1},          {"width", plan.width},           {"height", plan.height},
                 {"dpi", plan.dpi},        {"dpi_lowered", plan.dpi_lowered}, {"image_tokens", cached->second}};
    if (with_thumbnail[i] && !thumbnails_stopped) {
      if (Clock::now() >= deadline) {
        thumbnails_stopped = true;  // the rest are listed without one
      } else {
        const Thumbnail t = thumbnail_of(doc.page_size(i), request.thumbnail_size);
        if (t.width >= 1 && t.height >= 1) {
          try {
            page["thumbnail"] = render_thumbnail(doc, i, t, intake);
          } catch (const Error& e) {
            page["thumbnail_error"] = cat("Poppler could not render the page: ", e.what());
          }
        }
      }
    }
    pages.push_back(std::move(page));
  }
  json out = {{"object", "qvl.document"},
              {"pages", count},
              {"dpi", request.dpi},
              {"max_pages", caps.max_pages},
              {"thumbnail_size", request.thumbnail_size},
              {"max_thumbnails", kMaxThumbnails},
              {"page_info", std::move(pages)}};
  if (thumbnails_stopped) out["thumbnails_stopped"] = "the image time limit (--image-time-limit) was reached";
  return out;
}

}  // namespace qvl
