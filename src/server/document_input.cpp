#include "server/document_input.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <optional>
#include <tuple>

#include "server/api_error.h"
#include "media/admission.h"
#include "server/media.h"
#include "util/error.h"

namespace qvl {
namespace {

using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

std::string mpx(int64_t pixels) { return cat(std::round(pixels / 1e5) / 10, " Mpx"); }

}  // namespace

bool is_pdf_data_url(std::string_view url) { return starts_with_ci(url, "data:application/pdf"); }

std::string page_selection(const RequestField& pages) {
  std::string out;
  // A single page may come as a number.
  if (pages.value().is_number_integer()) out = std::to_string(pages.value().get<int64_t>());
  else if (pages.value().is_string()) out = pages.string();
  else pages.wrong_type("a string of pages like \"1-3,7\"");
  if (out.size() > 1024) pages.refuse(cat("'", pages.path(), "' is longer than 1024 characters"));
  return out;
}

DocumentSource parse_file_part(const RequestField& file, const PdfLimits& limits, bool typed_part) {
  const std::string& param = file.path();
  for (auto it = file.object().value().begin(); it != file.value().end(); ++it) {
    const std::string& k = it.key();
    if (k == "file_id")
      bad_request(file.path_of(k),
                  cat("'", file.path_of(k), "' is not supported (qvl has no Files API); send the PDF in 'file_data' as "
                      "data:application/pdf;base64,..."),
                  "unsupported_parameter");
    if (k != "file_data" && k != "filename" && k != "pages" && k != "dpi" && !(typed_part && k == "type"))
      bad_request(file.path_of(k),
                  cat("unknown field '", k.substr(0, 80), "' in '", param, "' (file_data, filename, pages and dpi are)"),
                  "unsupported_parameter");
  }
  DocumentSource d;
  d.param = param;
  d.url_param = file.path_of("file_data");
  const std::optional<RequestField> data = file.find("file_data");
  if (!data) bad_request(d.url_param, cat("'", d.url_param, "' is required (data:application/pdf;base64,...)"),
                         "missing_field");
  d.url = data->string();
  file.optional_string("filename");
  d.pages_param = file.path_of("pages");
  if (const std::optional<RequestField> pages = file.find("pages")) d.pages = page_selection(*pages);
  if (auto dpi = file.number("dpi", limits.min_dpi, limits.max_dpi)) d.dpi = *dpi;
  return d;
}

PdfDocument open_source_pdf(const DocumentSource& source, const ChatLimits& limits) {
  const std::vector<uint8_t> bytes = fetch_image_bytes(source.url, limits.media, source.url_param);
  PdfLimits open_limits = limits.media.pdf;
  open_limits.max_bytes = limits.media.max_image_bytes;  // the file is capped like any image file
  try {
    return PdfDocument::open(bytes, open_limits);  // keeps its own copy of the bytes
  } catch (const Error& e) {
    bad_request(source.url_param, cat("the PDF cannot be used: ", e.what()), "invalid_pdf");
  }
}

std::vector<int> source_pages(const DocumentSource& source, const PdfDocument& doc) {
  try {
    return source.pages.empty() ? all_pages(doc.page_count()) : parse_page_selection(source.pages, doc.page_count());
  } catch (const Error& e) {
    bad_request(source.pages_param, cat("'", source.pages_param, "': ", e.what()), "invalid_pages");
  }
}

struct RequestDocuments::Opened {
  DocumentSource source;
  PdfDocument doc;
  std::vector<PdfPagePlan> plan;
};

RequestDocuments::RequestDocuments(std::vector<DocumentSource> sources, const ChatLimits& limits, int other_images) {
  const PdfLimits& caps = limits.media.pdf;
  int64_t total_pages = 0, pixels = 0;
  for (DocumentSource& s : sources) {
    std::optional<PdfDocument> doc(open_source_pdf(s, limits));
    const std::vector<int> chosen = source_pages(s, *doc);
    total_pages += static_cast<int64_t>(chosen.size());
    if (total_pages > caps.max_pages) {
      const int64_t earlier_pages = total_pages - static_cast<int64_t>(chosen.size());
      const std::string earlier = earlier_pages > 0 ? cat(" (", earlier_pages, " of them from earlier PDFs)") : std::string();
      throw ApiError(413, "too_many_pages",
                     cat("the request's PDFs come to ", total_pages, " pages", earlier, ", over the server's limit of ",
                         caps.max_pages, " per request (--max-pdf-pages); choose pages with '", s.pages_param, "'"),
                     s.pages.empty() ? s.param : s.pages_param);
    }
    if (other_images + total_pages > limits.max_images)
      bad_request("messages",
                  cat("the request has ", other_images + total_pages, " images (", total_pages,
                      " of them PDF pages), over the limit of ",
                      limits.max_images, " per request"),
                  "too_many_images");

    std::vector<PdfPagePlan> plan;
    try {
      plan = plan_pages(*doc, chosen, s.dpi, caps);
    } catch (const Error& e) {
      throw ApiError(413, "pdf_too_large", cat("the PDF's pages cannot be rendered: ", e.what()), s.param);
    }
    for (const PdfPagePlan& p : plan) pixels += p.width * p.height;
    if (pixels > caps.max_total_pixels)
      throw ApiError(413, "pdf_too_large",
                     cat("the request's PDF pages come to ", mpx(pixels), ", over the server's limit of ",
                         mpx(caps.max_total_pixels), " per request (--max-pdf-pixels); select fewer pages or a lower dpi"),
                     s.param);
    opened_.push_back({std::move(s), std::move(*doc), std::move(plan)});
  }
}

RequestDocuments::RequestDocuments(RequestDocuments&&) noexcept = default;
RequestDocuments::~RequestDocuments() = default;

int RequestDocuments::pages() const {
  size_t n = 0;
  for (const Opened& o : opened_) n += o.plan.size();
  return static_cast<int>(n);
}

void RequestDocuments::render_into(ChatRequest& request, MediaIntake& intake) {
  if (opened_.empty()) return;
  const Clock::time_point start = Clock::now();
  if (const MemoryAdmission* admission = intake.admission()) {
    // Every page's pixels and the largest page's rendering peak, checked
    // against the whole budget before the first page: a request that can
    // never fit is 413 at once, not after rendering half of it.
    uint64_t pages_bytes = 0, largest = 0;
    for (const Opened& o : opened_)
      for (const PdfPagePlan& p : o.plan) {
        const uint64_t px = static_cast<uint64_t>(p.width * p.height);
        pages_bytes += px * kPdfPageBytesPerPixel;
        largest = std::max(largest, px);
      }
    const uint64_t need = intake.held_bytes() + pages_bytes + largest * (kPdfRenderPeakBytesPerPixel - kPdfPageBytesPerPixel);
    const uint64_t budget = admission->media_budget();
    if (need > budget)
      throw ApiError(413, "image_too_large",
                     cat("rendering the request's ", pages(), " PDF pages needs ", need, " bytes with its other images, "
                         "over the server's image memory budget of ", budget,
                         " bytes (what --memory-budget leaves beside the KV caches); select fewer pages or a lower dpi"),
                     opened_.front().source.param);
  }

  // Later parts first, so the indices of earlier ones stay where they were.
  std::vector<Opened*> order;
  for (Opened& o : opened_) order.push_back(&o);
  std::sort(order.begin(), order.end(), [](const Opened* a, const Opened* b) {
    return std::tie(a->source.message, a->source.part) > std::tie(b->source.message, b->source.part);
  });
  std::vector<std::vector<MessagePart>> rendered(opened_.size());
  // Render in the order of the request (a deadline cuts the last pages), insert from the end.
  for (size_t d = 0; d < opened_.size(); ++d) {
    Opened& o = opened_[d];
    for (const PdfPagePlan& p : o.plan) {
      std::shared_ptr<const Image> image;
      try {
        image = intake.pdf_page(o.doc, p, o.source.param);
      } catch (const MediaTimeLimit& e) {
        refuse_time_limit(e, o.source.param);
      } catch (const Error& e) {
        bad_request(o.source.param, cat("the PDF cannot be rendered: ", e.what()), "invalid_pdf");
      }
      rendered[d].push_back({"", std::move(image)});
    }
  }
  for (Opened* o : order) {
    const size_t d = static_cast<size_t>(o - opened_.data());
    std::vector<MessagePart>& parts = request.generate.messages.at(o->source.message).parts;
    auto at = parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(o->source.part));
    parts.insert(at, std::make_move_iterator(rendered[d].begin()), std::make_move_iterator(rendered[d].end()));
  }
  request.image_ms += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace qvl
