// libFuzzer target: open any bytes as a PDF and render every page (up to 4)
// at a low dpi. Every outcome other than success or qvl::Error (a crash, a
// sanitizer report, an out-of-memory, a timeout) is a bug — in qvl's checks,
// or in Poppler, which then needs a guard in front of it. Caps are small so a
// fuzzed page box cannot make one run allocate much legitimately; min_dpi is
// low so oversized pages take the dpi-lowering path instead of being refused.
#include <cstddef>
#include <cstdint>
#include <span>

#include "pdf/pdf_pages.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  qvl::PdfLimits limits;
  limits.max_bytes = 1u << 20;
  limits.max_pages = 4;
  limits.max_page_pixels = 200'000;
  limits.max_total_pixels = 800'000;
  limits.min_dpi = 1;
  limits.max_dpi = 36;
  limits.time_budget_s = 10;
  try {
    const qvl::PdfDocument doc = qvl::PdfDocument::open(std::span<const uint8_t>(data, size), limits);
    const int pages = doc.page_count() < limits.max_pages ? doc.page_count() : limits.max_pages;
    const std::vector<int> chosen = qvl::parse_page_selection("1-" + std::to_string(pages), doc.page_count());
    for (const qvl::PdfPageImage& p : qvl::render_pages(doc, qvl::plan_pages(doc, chosen, 36, limits), limits))
      if (p.image.rgb.size() != static_cast<size_t>(p.image.width) * p.image.height * 3) __builtin_trap();
  } catch (const qvl::Error&) {
  }
  return 0;
}
