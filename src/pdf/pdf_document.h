// A PDF opened from bytes, and its pages rendered to RGB images.
//
// Why Poppler (libpoppler-cpp-dev): it is Debian's PDF renderer (evince,
// pdftoppm), kept up with Debian security updates as a shared library, and
// its C++ binding is a small stable API (open from memory, page boxes,
// render to a bitmap). Its licence is GPL-2-or-later: whoever is given a qvl
// binary may ask for its source. MuPDF (libmupdf-dev) renders as well and has
// an abort cookie, but it is AGPL-3 — a network service linking it owes its
// source to everyone who uses the service — and Debian ships it as a static
// library only, so each MuPDF security fix would need a qvl rebuild.
//
// Fonts: a PDF's base-14 fonts (Helvetica, Times, Courier) are usually not
// embedded; Poppler substitutes them through fontconfig, so a machine needs
// at least one outline font (Debian: fonts-dejavu-core, which fontconfig
// pulls in). Without one, text of such files would render blank.
//
// Threads: documents are independent; different threads may open and render
// different documents at once. One PdfDocument is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "image/image.h"
#include "pdf/pdf_limits.h"

namespace qvl {

// From the magic bytes ("%PDF-" at byte 0), never the file name.
bool is_pdf(std::span<const uint8_t> bytes);

// A page as it is displayed: the crop box in points (1/72 inch), with width
// and height swapped when /Rotate is 90 or 270.
struct PdfPageSize {
  double width_pt = 0;
  double height_pt = 0;
  int rotation = 0;  // /Rotate: 0, 90, 180 or 270
};

class PdfDocument {
 public:
  // Copies `bytes` (Poppler reads the file lazily, page by page). Throws
  // qvl::Error with one line: empty, over limits.max_bytes, not a PDF,
  // truncated (no %%EOF at the end) or corrupt (Poppler's reason quoted),
  // encrypted with a password, no pages.
  static PdfDocument open(std::span<const uint8_t> bytes, const PdfLimits& limits = {});

  PdfDocument(PdfDocument&&) noexcept;
  PdfDocument& operator=(PdfDocument&&) noexcept;
  ~PdfDocument();

  int page_count() const;
  // index is 0-based. Throws qvl::Error when the page cannot be read or its
  // box is empty or not finite ("page 3: ...", numbered from 1).
  PdfPageSize page_size(int index) const;
  // Renders the page at `dpi` (both axes) with /Rotate applied, anti-aliased,
  // on white paper. Checks nothing about cost: plan the pages first
  // (plan_pages in pdf_pages.h), which sizes them against the limits.
  Image render_page(int index, double dpi) const;

 private:
  struct Impl;
  explicit PdfDocument(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The rendered size of a page at `dpi`, rounded as Poppler rounds it.
int64_t page_pixels_across(double points, double dpi);

}  // namespace qvl
