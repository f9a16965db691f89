#include "server/document_pages.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include "image/encode.h"
#include "pdf/pdf_pages.h"
#include "server/api_error.h"
#include "server/base64.h"
#include "server/document_input.h"
#include "server/memory_admission.h"
#include "util/error.h"
#include "util/json_number.h"

namespace qvl {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

// Thumbnails are for eyes, not the model: 80 keeps text legible at 256 px.
constexpr int kThumbnailQuality = 80;

const ojson* field(const ojson& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrong_type(const std::string& param, const char* want) {
  bad_request(param, cat("'", param, "' must be ", want), "invalid_type");
}

std::optional<int64_t> integer(const ojson& body, const char* name, int64_t lo, int64_t hi) {
  const ojson* v = field(body, name);
  if (!v) return std::nullopt;
  int64_t x = 0;
  switch (json_integer(*v, lo, hi, x)) {
    case NumberCheck::ok: return x;
    case NumberCheck::not_a_number:
    case NumberCheck::not_an_integer: wrong_type(name, "an integer");
    default: bad_request(name, cat("'", name, "' must be in [", lo, ", ", hi, "], got ", v->dump()));
  }
}

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

DocumentPagesRequest parse_document_pages_request(const ojson& body, const PdfLimits& limits) {
  if (!body.is_object()) bad_request("", "the request body must be a JSON object", "invalid_type");
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& k = it.key();
    if (k != "file_data" && k != "dpi" && k != "thumbnail_size" && k != "pages" && k != "min_pixels" &&
        k != "max_pixels")
      bad_request(k,
                  cat("unknown or unsupported parameter '", k.substr(0, 80),
                      "' (file_data, dpi, thumbnail_size, pages, min_pixels and max_pixels are)"),
                  "unsupported_parameter");
  }
  DocumentPagesRequest r;
  const ojson* data = field(body, "file_data");
  if (!data) bad_request("file_data", "'file_data' is required (data:application/pdf;base64,...)", "missing_field");
  if (!data->is_string()) wrong_type("file_data", "a string");
  r.file_data = data->get<std::string>();
  if (const ojson* dpi = field(body, "dpi")) {
    if (json_double(*dpi, limits.min_dpi, limits.max_dpi, r.dpi) == NumberCheck::not_a_number)
      wrong_type("dpi", "a number");
    if (!std::isfinite(r.dpi) || r.dpi < limits.min_dpi || r.dpi > limits.max_dpi)
      bad_request("dpi", cat("'dpi' must be in [", limits.min_dpi, ", ", limits.max_dpi, "], got ", dpi->dump()));
  }
  if (auto size = integer(body, "thumbnail_size", kMinThumbnailSize, kMaxThumbnailSize))
    r.thumbnail_size = static_cast<int>(*size);
  if (const ojson* pages = field(body, "pages")) {
    if (pages->is_number_integer()) r.thumbnail_pages = std::to_string(pages->get<int64_t>());
    else if (pages->is_string()) r.thumbnail_pages = pages->get<std::string>();
    else wrong_type("pages", "a string of pages like \"1-3,7\"");
    if (r.thumbnail_pages.size() > 1024) bad_request("pages", "'pages' is longer than 1024 characters");
  }
  if (auto v = integer(body, "min_pixels", 1, INT64_MAX)) r.min_pixels = *v;
  if (auto v = integer(body, "max_pixels", 1, INT64_MAX)) r.max_pixels = *v;
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
