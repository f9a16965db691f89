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

const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void wrong_type(const std::string& param, const char* want) {
  bad_request(param, cat("'", param, "' must be ", want), "invalid_type");
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

std::string mpx(int64_t pixels) { return cat(std::round(pixels / 1e5) / 10, " Mpx"); }

}  // namespace

bool is_pdf_data_url(std::string_view url) { return starts_with_ci(url, "data:application/pdf"); }

DocumentSource parse_file_part(const json& file, const std::string& param, const PdfLimits& limits) {
  if (!file.is_object()) wrong_type(param, "an object");
  for (auto it = file.begin(); it != file.end(); ++it) {
    const std::string& k = it.key();
    if (k == "file_id")
      bad_request(param + ".file_id",
                  cat("'", param, ".file_id' is not supported (qvl has no Files API); send the PDF in 'file_data' as "
                      "data:application/pdf;base64,..."),
                  "unsupported_parameter");
    if (k != "file_data" && k != "filename" && k != "pages" && k != "dpi")
      bad_request(param + "." + k,
                  cat("unknown field '", k.substr(0, 80), "' in '", param, "' (file_data, filename, pages and dpi are)"),
                  "unsupported_parameter");
  }
  DocumentSource d;
  d.param = param;
  d.url_param = param + ".file_data";
  const json* data = field(file, "file_data");
  if (!data) bad_request(d.url_param, cat("a file part needs '", d.url_param, "' (data:application/pdf;base64,...)"),
                         "missing_field");
  if (!data->is_string()) wrong_type(d.url_param, "a string");
  d.url = data->get<std::string>();
  if (const json* name = field(file, "filename"); name && !name->is_string()) wrong_type(param + ".filename", "a string");
  d.pages_param = param + ".pages";
  if (const json* pages = field(file, "pages")) {
    // A single page may come as a number.
    if (pages->is_number_integer()) d.pages = std::to_string(pages->get<int64_t>());
    else if (pages->is_string()) d.pages = pages->get<std::string>();
    else wrong_type(d.pages_param, "a string of pages like \"1-3,7\"");
    if (d.pages.size() > 1024) bad_request(d.pages_param, cat("'", d.pages_param, "' is longer than 1024 characters"));
  }
  if (const json* dpi = field(file, "dpi")) {
    const std::string p = param + ".dpi";
    if (!dpi->is_number()) wrong_type(p, "a number");
    d.dpi = dpi->get<double>();
    if (!std::isfinite(d.dpi) || d.dpi < limits.min_dpi || d.dpi > limits.max_dpi)
      bad_request(p, cat("'", p, "' must be in [", limits.min_dpi, ", ", limits.max_dpi, "], got ", dpi->dump()));
  }
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
