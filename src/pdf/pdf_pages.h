// From a PDF to the page images a prompt takes, in three steps a front end
// can separate — every refusal happens in the first two, before any page is
// rendered, so a server answers a bad upload with a 4xx having allocated
// nothing large:
//
//   PdfDocument doc = PdfDocument::open(bytes, limits);           // bad file
//   std::vector<int> pages = select_pages(doc, "1-3,7", limits);  // bad selection, too many
//   std::vector<PdfPagePlan> plan = plan_pages(doc, pages, dpi, limits);  // too large
//   std::vector<PdfPageImage> images = render_pages(doc, plan, limits);   // time budget
//
// or render_pdf(bytes, request, limits) for all of it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "image/image.h"
#include "pdf/pdf_document.h"
#include "pdf/page_selection.h"
#include "pdf/pdf_limits.h"

namespace qvl {

// Pages of `doc` chosen by `selection` (parse_page_selection's syntax; empty:
// every page), refused when more than limits.max_pages.
std::vector<int> select_pages(const PdfDocument& doc, std::string_view selection, const PdfLimits& limits);

// One page as it will be rendered.
struct PdfPagePlan {
  int index = 0;       // 0-based
  double dpi = 0;      // the dpi it is rendered at
  bool dpi_lowered = false;  // the requested dpi would exceed limits.max_page_pixels
  int64_t width = 0;   // pixels, as displayed (after /Rotate)
  int64_t height = 0;
};

// Sizes every page at `dpi` from its page box alone. A page over
// limits.max_page_pixels (or 32768 px on a side) is planned at the highest
// dpi that fits, and refused when even limits.min_dpi does not. Refuses a dpi
// outside [min_dpi, max_dpi] and pages whose total is over
// limits.max_total_pixels. Messages name the page (from 1), its size in
// points and inches, and the pixels it would take.
std::vector<PdfPagePlan> plan_pages(const PdfDocument& doc, const std::vector<int>& pages, double dpi,
                                    const PdfLimits& limits);

struct PdfPageImage {
  int page = 0;  // 1-based, as people number pages
  double dpi = 0;
  bool dpi_lowered = false;
  Image image;  // RGB, width × height as planned
};

// Renders the planned pages in order. Bounded time: Poppler renders a page
// in one call that cannot be interrupted (its core has an abort callback,
// but the C++ binding, the only stable API, does not expose it), so a
// request's time is bounded by the page count and pixel caps of the plan and
// by limits.time_budget_s, checked before each page after the first: once it
// is spent the remaining pages are refused. One pathological page can still
// take longer than the budget; a deployment that must bound that renders in
// a separate process with a CPU limit. `on_page`, when set, sees each page
// as it is done (progress, or handing pages on one at a time).
std::vector<PdfPageImage> render_pages(const PdfDocument& doc, const std::vector<PdfPagePlan>& plan,
                                       const PdfLimits& limits,
                                       const std::function<void(const PdfPageImage&)>& on_page = {});

struct PdfRenderRequest {
  std::string pages;           // "1-3,7"; empty: every page
  double dpi = kDefaultPdfDpi;
};

// open, select_pages, plan_pages and render_pages in one call.
std::vector<PdfPageImage> render_pdf(std::span<const uint8_t> bytes, const PdfRenderRequest& request,
                                     const PdfLimits& limits = {});

}  // namespace qvl
