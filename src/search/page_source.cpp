#include "search/page_source.h"

#include <algorithm>

#include "search/page_indexer.h"
#include "util/error.h"

namespace qvl {

std::vector<uint8_t> document_bytes(SearchStore& store, const SearchDocument& doc, size_t max_bytes) {
  if (doc.stored_content) {
    std::optional<std::vector<uint8_t>> kept = store.content(doc.id);
    if (kept) return std::move(*kept);
  }
  std::vector<uint8_t> bytes;
  try {
    bytes = read_media_bytes(doc.path, max_bytes);
  } catch (const Error& e) {
    fail(doc.path, ": ", e.what(), " (indexed in collection '", doc.collection, "'; run qvl index again)");
  }
  if (sha256_hex(bytes) != doc.sha256)
    fail(doc.path, " changed since it was indexed (collection '", doc.collection, "'); run qvl index on it again");
  return bytes;
}

std::shared_ptr<const Image> page_image(std::span<const uint8_t> bytes, int64_t page, const PdfRenderRequest& pdf,
                                        MediaIntake& intake, const std::string& name, int64_t width) {
  if (!is_pdf(bytes)) {
    if (page != 1) fail(name, " is an image: it has page 1 only, not ", page);
    return intake.image(bytes, name);
  }
  PdfRenderRequest one = pdf;
  one.pages = std::to_string(page);
  MediaIntake::PlannedPdf planned = intake.plan_pdf(bytes, one);
  PdfPagePlan at = planned.pages.at(0);
  if (width > 0 && at.width > 0 && width != at.width) {
    // The width scales with the dpi (the page box at dpi/72 in).
    const PdfLimits& limits = intake.limits().pdf;
    const double dpi = std::clamp(at.dpi * static_cast<double>(width) / static_cast<double>(at.width),
                                  limits.min_dpi, limits.max_dpi);
    at = intake.plan_pdf_page(planned.doc, at.index, dpi);
  }
  return intake.pdf_page(planned.doc, at, name);
}

}  // namespace qvl
