// What one PDF request may cost, checked before anything large is allocated.
// A front end (the CLI, the server) tightens these from its
// own options; the defaults suit one request on a small machine.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qvl {

// Qwen's document-parsing recipes render pages at 144 dpi (2 px per point).
inline constexpr double kDefaultPdfDpi = 144.0;

// Bytes per rendered pixel at the peak of rendering one page: Poppler's
// 4-byte bitmap, its 4-byte copy, our 3-byte RGB. What a memory budget must
// reserve before a page is rendered.
inline constexpr uint64_t kPdfRenderPeakBytesPerPixel = 11;
// Bytes per pixel once a page is rendered and only its RGB is held.
inline constexpr uint64_t kPdfPageBytesPerPixel = 3;

struct PdfLimits {
  size_t max_bytes = 64u << 20;  // the encoded file
  // Objects the file may declare (pdf_structure.h): Poppler allocates ~40
  // bytes for each up front, so 2^20 is ~40 MB.
  int64_t max_objects = int64_t{1} << 20;
  int max_pages = 32;            // pages rendered per request (not pages in the file)
  // Width × height of one rendered page. A page over it at the requested dpi
  // is rendered at the highest dpi that fits (never below min_dpi): a poster
  // or an A0 drawing still comes out, smaller, instead of failing, and a
  // model resizes it to its own pixel budget anyway. 4096² is Qwen3-VL's
  // largest image (16 Mpx); rendering it holds ~11 bytes per pixel at the
  // peak (Poppler's 4-byte bitmap, its 4-byte copy, our 3-byte RGB).
  int64_t max_page_pixels = int64_t{4096} * 4096;
  // All rendered pages of one request together: they are held as RGB
  // (3 bytes per pixel) until the request is done. 64 Mpx (192 MB) is 32
  // US Letter pages at 144 dpi.
  int64_t max_total_pixels = 64'000'000;
  double min_dpi = 36.0;   // a page that does not fit the pixel cap even here is refused
  double max_dpi = 600.0;  // beyond this a page costs more than it tells the model
  // Wall-clock budget for rendering all pages of a request, checked between
  // pages (Poppler cannot be stopped inside one; see render_pages). 0: none.
  double time_budget_s = 60.0;
};

}  // namespace qvl
