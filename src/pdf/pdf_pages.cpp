#include "pdf/pdf_pages.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "pdf/page_selection.h"
#include "util/error.h"

namespace qvl {
namespace {

// Poppler's Splash bitmaps index rows with int arithmetic; no page needs more.
constexpr int64_t kMaxSide = 32768;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string mpx(int64_t pixels) { return fixed(pixels / 1e6, 1) + " Mpx"; }

struct Pixels {
  int64_t width, height;
  int64_t area() const { return width * height; }
};

Pixels at_dpi(const PdfPageSize& s, double dpi) {
  return {page_pixels_across(s.width_pt, dpi), page_pixels_across(s.height_pt, dpi)};
}

bool fits(const Pixels& p, const PdfLimits& limits) {
  return p.area() <= limits.max_page_pixels && p.width <= kMaxSide && p.height <= kMaxSide;
}

}  // namespace

std::vector<int> select_pages(const PdfDocument& doc, std::string_view selection, const PdfLimits& limits) {
  const int count = doc.page_count();
  if (selection.empty()) {
    if (count > limits.max_pages)
      fail("the PDF has ", count, " pages, over the limit of ", limits.max_pages,
           " per request: choose pages (like 1-", limits.max_pages, ")");
    return all_pages(count);
  }
  std::vector<int> pages = parse_page_selection(selection, count);
  if (static_cast<int64_t>(pages.size()) > limits.max_pages)
    fail(pages.size(), " pages selected, over the limit of ", limits.max_pages, " per request");
  return pages;
}

std::vector<PdfPagePlan> plan_pages(const PdfDocument& doc, const std::vector<int>& pages, double dpi,
                                    const PdfLimits& limits) {
  if (!std::isfinite(dpi) || dpi < limits.min_dpi || dpi > limits.max_dpi)
    fail("dpi ", dpi, " is outside the allowed range [", limits.min_dpi, ", ", limits.max_dpi, "]");
  std::vector<PdfPagePlan> plan;
  plan.reserve(pages.size());
  int64_t total = 0;
  for (int index : pages) {
    const PdfPageSize size = doc.page_size(index);
    PdfPagePlan p;
    p.index = index;
    p.dpi = dpi;
    Pixels px = at_dpi(size, dpi);
    if (!fits(px, limits)) {
      // The largest dpi whose page fits the area and side caps, to 0.01 dpi,
      // stepped down while Poppler's rounding would still overshoot.
      const double by_area = 72.0 * std::sqrt(double(limits.max_page_pixels) / (size.width_pt * size.height_pt));
      const double by_side = 72.0 * double(kMaxSide) / std::max(size.width_pt, size.height_pt);
      double fit = std::floor(std::min({dpi, by_area, by_side}) * 100.0) / 100.0;
      while (fit >= limits.min_dpi && !fits(at_dpi(size, fit), limits)) fit -= 0.01;
      if (fit < limits.min_dpi) {
        const Pixels low = at_dpi(size, limits.min_dpi);
        fail("page ", index + 1, " is ", fixed(size.width_pt, 1), " x ", fixed(size.height_pt, 1), " pt (",
             fixed(size.width_pt / 72, 1), " x ", fixed(size.height_pt / 72, 1), " in): even at ", limits.min_dpi,
             " dpi it would be ", low.width, " x ", low.height, " px = ", mpx(low.area()), ", over the limit of ",
             mpx(limits.max_page_pixels), " (and ", kMaxSide, " px a side) per page");
      }
      p.dpi = fit;
      p.dpi_lowered = true;
      px = at_dpi(size, fit);
    }
    if (px.width < 1 || px.height < 1)
      fail("page ", index + 1, " is ", fixed(size.width_pt, 3), " x ", fixed(size.height_pt, 3), " pt: at ", p.dpi,
           " dpi it is less than one pixel across");
    p.width = px.width;
    p.height = px.height;
    total += px.area();
    plan.push_back(p);
  }
  if (total > limits.max_total_pixels)
    fail("the ", plan.size(), " selected page", plan.size() == 1 ? "" : "s", " come to ", mpx(total), " at ", dpi,
         " dpi, over the limit of ", mpx(limits.max_total_pixels), " per request: select fewer pages or a lower dpi");
  return plan;
}

std::vector<PdfPageImage> render_pages(const PdfDocument& doc, const std::vector<PdfPagePlan>& plan,
                                       const PdfLimits& limits,
                                       const std::function<void(const PdfPageImage&)>& on_page) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::vector<PdfPageImage> out;
  out.reserve(plan.size());
  for (const PdfPagePlan& p : plan) {
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (limits.time_budget_s > 0 && !out.empty() && elapsed > limits.time_budget_s)
      fail("rendering stopped before page ", p.index + 1, " (", out.size(), " of ", plan.size(),
           " pages done in ", fixed(elapsed, 1), " s): over the time budget of ", fixed(limits.time_budget_s, 1),
           " s");
    PdfPageImage page{p.index + 1, p.dpi, p.dpi_lowered, doc.render_page(p.index, p.dpi)};
    if (page.image.width != p.width || page.image.height != p.height)
      fail("page ", p.index + 1, ": Poppler rendered ", page.image.width, " x ", page.image.height,
           " px where its page box gives ", p.width, " x ", p.height);
    if (on_page) on_page(page);
    out.push_back(std::move(page));
  }
  return out;
}

std::vector<PdfPageImage> render_pdf(std::span<const uint8_t> bytes, const PdfRenderRequest& request,
                                     const PdfLimits& limits) {
  const PdfDocument doc = PdfDocument::open(bytes, limits);
  const std::vector<int> pages = select_pages(doc, request.pages, limits);
  return render_pages(doc, plan_pages(doc, pages, request.dpi, limits), limits);
}

}  // namespace qvl
