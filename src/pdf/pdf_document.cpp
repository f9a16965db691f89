#include "pdf/pdf_document.h"

#include <poppler-document.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <string_view>

#include "pdf/pdf_structure.h"
#include "pdf/poppler_messages.h"
#include "util/error.h"

namespace qvl {

using pdf_detail::PopplerMessages;

struct PdfDocument::Impl {
  std::unique_ptr<poppler::document> doc;  // owns the file's bytes (load_from_data swaps them in)
  int pages = 0;

  std::unique_ptr<poppler::page> page(int index) const {
    if (index < 0 || index >= pages) fail("page ", index + 1, " does not exist (the document has ", pages, " pages)");
    PopplerMessages said;
    std::unique_ptr<poppler::page> p(doc->create_page(index));
    if (!p) fail("page ", index + 1, ": Poppler cannot read the page object", said.quoted());
    return p;
  }
};

bool is_pdf(std::span<const uint8_t> bytes) {
  return bytes.size() >= 5 && std::memcmp(bytes.data(), "%PDF-", 5) == 0;
}

namespace {

// PDF readers look for the end marker in the last 1024 bytes (ISO 32000 7.5.5
// allows trailing junk after it); a file cut short in transfer has none.
bool has_eof_marker(std::span<const uint8_t> bytes) {
  const size_t tail = std::min<size_t>(bytes.size(), 1024);
  const std::string_view end(reinterpret_cast<const char*>(bytes.data() + bytes.size() - tail), tail);
  return end.find("%%EOF") != std::string_view::npos;
}

}  // namespace

PdfDocument PdfDocument::open(std::span<const uint8_t> bytes, const PdfLimits& limits) {
  if (bytes.empty()) fail("PDF is empty (0 bytes)");
  if (bytes.size() > limits.max_bytes)
    fail("PDF is ", bytes.size(), " bytes, over the limit of ", limits.max_bytes, " bytes");
  if (!is_pdf(bytes)) fail("not a PDF: the file does not start with %PDF-");
  if (bytes.size() > static_cast<size_t>(INT_MAX)) fail("PDF is ", bytes.size(), " bytes, more than Poppler reads");
  check_pdf_object_counts(bytes, limits.max_objects);

  PopplerMessages said;
  poppler::byte_array data(bytes.begin(), bytes.end());
  std::unique_ptr<poppler::document> doc(poppler::document::load_from_data(&data));
  if (!doc) {
    if (!has_eof_marker(bytes))
      fail("truncated PDF: the file ends at byte ", bytes.size(), " without the %%EOF marker", said.quoted());
    fail("corrupt PDF: Poppler cannot read its structure", said.quoted());
  }
  // Checked before anything else: Poppler has no page tree for a locked
  // document, and asking it for pages() then crashes (22.12).
  if (doc->is_locked())
    fail("the PDF is encrypted with a password; qvl takes no PDF passwords: remove the password and send it again");
  const int pages = doc->pages();
  if (pages <= 0) {
    if (!has_eof_marker(bytes))
      fail("truncated PDF: no pages, and the file ends at byte ", bytes.size(), " without the %%EOF marker",
           said.quoted());
    fail("the PDF has no pages", said.quoted());
  }
  auto impl = std::make_unique<Impl>();
  impl->doc = std::move(doc);
  impl->pages = pages;
  return PdfDocument(std::move(impl));
}

PdfDocument::PdfDocument(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PdfDocument::PdfDocument(PdfDocument&&) noexcept = default;
PdfDocument& PdfDocument::operator=(PdfDocument&&) noexcept = default;
PdfDocument::~PdfDocument() = default;

int PdfDocument::page_count() const { return impl_->pages; }

PdfPageSize PdfDocument::page_size(int index) const {
  const std::unique_ptr<poppler::page> page = impl_->page(index);
  // The crop box (clipped to the media box by Poppler) is what a viewer
  // shows and what page_renderer renders.
  const poppler::rectf box = page->page_rect(poppler::crop_box);
  const double w = box.width(), h = box.height();
  if (!std::isfinite(w) || !std::isfinite(h) || w <= 0 || h <= 0)
    fail("page ", index + 1, " has an empty or invalid page box (", w, " x ", h, " pt)");
  PdfPageSize size;
  switch (page->orientation()) {
    case poppler::page::landscape: size.rotation = 90; break;
    case poppler::page::upside_down: size.rotation = 180; break;
    case poppler::page::seascape: size.rotation = 270; break;
    case poppler::page::portrait: size.rotation = 0; break;
  }
  const bool sideways = size.rotation == 90 || size.rotation == 270;
  size.width_pt = sideways ? h : w;
  size.height_pt = sideways ? w : h;
  return size;
}

int64_t page_pixels_across(double points, double dpi) {
  // Poppler's Splash output sizes its bitmap as (int)(points * dpi / 72 + 0.5).
  return static_cast<int64_t>(points * dpi / 72.0 + 0.5);
}

Image PdfDocument::render_page(int index, double dpi) const {
  const std::unique_ptr<poppler::page> page = impl_->page(index);
  PopplerMessages said;
  poppler::page_renderer renderer;
  renderer.set_image_format(poppler::image::format_argb32);
  renderer.set_paper_color(0xFFFFFFFFu);  // opaque white
  renderer.set_render_hints(poppler::page_renderer::antialiasing | poppler::page_renderer::text_antialiasing);
  // The page's own /Rotate is applied by Poppler; this argument would add to it.
  const poppler::image bitmap = renderer.render_page(page.get(), dpi, dpi);
  if (!bitmap.is_valid() || bitmap.width() <= 0 || bitmap.height() <= 0)
    fail("page ", index + 1, ": Poppler could not render it at ", dpi, " dpi", said.quoted());

  Image out;
  out.width = bitmap.width();
  out.height = bitmap.height();
  out.rgb.resize(static_cast<size_t>(out.width) * out.height * 3);
  const char* rows = bitmap.const_data();
  uint8_t* dst = out.rgb.data();
  for (int y = 0; y < out.height; ++y) {
    const char* row = rows + static_cast<size_t>(y) * bitmap.bytes_per_row();
    for (int x = 0; x < out.width; ++x, dst += 3) {
      uint32_t argb;  // one native-endian 0xAARRGGBB word per pixel
      std::memcpy(&argb, row + 4 * static_cast<size_t>(x), 4);
      const uint32_t a = argb >> 24;
      // Over white. With opaque paper every pixel is opaque; the blend keeps
      // a transparent pixel white should Poppler ever leave one.
      for (int c = 0; c < 3; ++c) {
        const uint32_t v = (argb >> (16 - 8 * c)) & 0xFF;
        dst[c] = static_cast<uint8_t>((v * a + 255 * (255 - a) + 127) / 255);
      }
    }
  }
  return out;
}

}  // namespace qvl
