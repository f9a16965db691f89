// PdfDocument and the page pipeline on PDFs the tests write (pdf_writer.h):
// page counts, rendered sizes at 144 dpi, /Rotate, ink where the page has
// text, lines or a scanned image, and the exact message for each bad file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pdf/pdf_document.h"
#include "pdf/pdf_pages.h"
#include "pdf_writer.h"
#include "util/error.h"

namespace {

using qvl::PdfDocument;
using qvl::PdfLimits;
using namespace qvl::test;

PdfDocument open(const std::string& pdf, const PdfLimits& limits = {}) {
  const std::vector<uint8_t> b = bytes_of(pdf);
  return PdfDocument::open(b, limits);
}

std::string open_error(const std::string& pdf, const PdfLimits& limits = {}) {
  try {
    open(pdf, limits);
  } catch (const qvl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string render_error(const std::string& pdf, const qvl::PdfRenderRequest& req, const PdfLimits& limits = {}) {
  try {
    qvl::render_pdf(bytes_of(pdf), req, limits);
  } catch (const qvl::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Pixels darker than mid-grey in the rectangle [x0, x1) × [y0, y1).
int64_t dark_pixels(const qvl::Image& im, int x0, int y0, int x1, int y1) {
  int64_t n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      const uint8_t* p = &im.rgb[(size_t(y) * im.width + x) * 3];
      n += (p[0] + p[1] + p[2]) < 3 * 128;
    }
  return n;
}

qvl::Image render_one(const std::string& pdf, double dpi = qvl::kDefaultPdfDpi) {
  std::vector<qvl::PdfPageImage> pages = qvl::render_pdf(bytes_of(pdf), {"", dpi});
  EXPECT_EQ(pages.size(), 1u);
  return std::move(pages.at(0).image);
}

TEST(PdfDocument, SniffsTheMagicBytes) {
  EXPECT_TRUE(qvl::is_pdf(bytes_of("%PDF-1.4\n")));
  EXPECT_FALSE(qvl::is_pdf(bytes_of("%PDF")));
  EXPECT_FALSE(qvl::is_pdf(bytes_of(" %PDF-1.4")));
}

TEST(PdfDocument, TextPageIsLetterSizeWithInkWhereTheTextIs) {
  const PdfDocument doc = open(text_pdf());
  EXPECT_EQ(doc.page_count(), 1);
  const qvl::PdfPageSize s = doc.page_size(0);
  EXPECT_EQ(s.width_pt, 612);
  EXPECT_EQ(s.height_pt, 792);
  EXPECT_EQ(s.rotation, 0);

  const qvl::Image im = render_one(text_pdf());
  EXPECT_EQ(im.width, 1224);  // 8.5 in × 144
  EXPECT_EQ(im.height, 1584);  // 11 in × 144
  ASSERT_EQ(im.rgb.size(), size_t(1224) * 1584 * 3);
  // The first line's baseline is 700 pt up, 24 pt text: pixel rows 1584 - 2 × (700 + 24) .. 1584 - 2 × 700.
  EXPECT_GT(dark_pixels(im, 144, 1584 - 2 * 724, 800, 1584 - 2 * 700 + 8), 2000);
  // Paper everywhere else: the bottom half of the page is white.
  EXPECT_EQ(dark_pixels(im, 0, 800, 1224, 1584), 0);
  EXPECT_EQ(im.rgb[0], 255);
}

TEST(PdfDocument, TableHasItsLinesAndItsText) {
  const qvl::Image im = render_one(pdf_of_pages({table_page()}));
  ASSERT_EQ(im.width, 1224);
  // A horizontal rule at y = 400 pt (pixel row 1584 - 800) spans the table: dark along x in [144, 1080].
  int64_t rule = 0;
  for (int y = 1584 - 800 - 2; y <= 1584 - 800 + 2; ++y) rule += dark_pixels(im, 150, y, 1070, y + 1);
  EXPECT_GT(rule, 900);
  // A vertical rule at x = 72 pt (pixel column 144) between the rows.
  EXPECT_GT(dark_pixels(im, 142, 1584 - 1400, 147, 1584 - 800), 1000);
  // Text inside the first cell (x 80..189 pt, y 420..434 pt).
  EXPECT_GT(dark_pixels(im, 160, 1584 - 870, 378, 1584 - 838), 200);
  // Outside the table: white.
  EXPECT_EQ(dark_pixels(im, 0, 0, 1224, 1584 - 1410), 0);
}

TEST(PdfDocument, ScannedPageShowsTheImagesDarkBars) {
  const qvl::Image im = render_one(pdf_of_pages({scanned_page()}));
  ASSERT_EQ(im.height, 1584);
  // The image's rows [40, 60) of 200 are dark bars: page rows 1584 × 40/200 .. 1584 × 60/200.
  const int bar0 = 1584 * 40 / 200 + 10, bar1 = 1584 * 60 / 200 - 10;
  const int64_t bar_area = int64_t(1000 - 224) * (bar1 - bar0);
  EXPECT_GT(dark_pixels(im, 224, bar0, 1000, bar1), bar_area * 95 / 100);
  // Between the bars: light paper noise, no dark pixels.
  EXPECT_EQ(dark_pixels(im, 224, 1584 * 70 / 200, 1000, 1584 * 90 / 200), 0);
}

TEST(PdfDocument, Rotate90SwapsTheDimensionsAndTurnsTheContent) {
  // A box at the page's bottom-left corner (x 72..216, y 72..144 pt).
  PdfPageSpec spec = box_page(612, 792);
  spec.rotate = 90;
  const PdfDocument doc = open(pdf_of_pages({spec}));
  const qvl::PdfPageSize s = doc.page_size(0);
  EXPECT_EQ(s.rotation, 90);
  EXPECT_EQ(s.width_pt, 792);
  EXPECT_EQ(s.height_pt, 612);
  const qvl::Image im = render_one(pdf_of_pages({spec}));
  EXPECT_EQ(im.width, 1584);
  EXPECT_EQ(im.height, 1224);
  // Turned 90° clockwise, the bottom-left corner is the top-left: the box is
  // 144 px down (its x) and 144 px across (its y), 288 × 144 px.
  EXPECT_EQ(dark_pixels(im, 144 + 4, 144 + 4, 288 - 4, 432 - 4), (288 - 8 - 144) * (432 - 8 - 144 - 4 + 4));
  EXPECT_EQ(dark_pixels(im, 0, 500, 1584, 1224), 0);
}

TEST(PdfDocument, UnrotatedBoxLandsWherePdfCoordinatesSay) {
  // PDF y grows upwards: the box 72..144 pt up is at pixel rows 1584 - 288 .. 1584 - 144.
  const qvl::Image im = render_one(pdf_of_pages({box_page(612, 792)}));
  EXPECT_EQ(dark_pixels(im, 144 + 2, 1584 - 288 + 2, 432 - 2, 1584 - 144 - 2), (288 - 4) * (144 - 4));
  EXPECT_EQ(dark_pixels(im, 0, 0, 1224, 1584 - 300), 0);
}

TEST(PdfDocument, PagesComeInTheSelectedOrderAtTheRequestedDpi) {
  std::vector<PdfPageSpec> specs;
  for (int i = 0; i < 5; ++i) specs.push_back(box_page(72 * (i + 1), 72));  // page i is i+1 inches wide
  const std::vector<qvl::PdfPageImage> pages = qvl::render_pdf(bytes_of(pdf_of_pages(specs)), {"4,1-2", 72});
  ASSERT_EQ(pages.size(), 3u);
  EXPECT_EQ(pages[0].page, 4);
  EXPECT_EQ(pages[0].image.width, 4 * 72);
  EXPECT_EQ(pages[1].page, 1);
  EXPECT_EQ(pages[1].image.width, 72);
  EXPECT_EQ(pages[2].page, 2);
  EXPECT_EQ(pages[2].image.height, 72);
  EXPECT_EQ(pages[2].dpi, 72);
  EXPECT_FALSE(pages[2].dpi_lowered);
}

TEST(PdfDocument, ManyPagesNeedASelection) {
  std::vector<PdfPageSpec> specs(40, box_page(144, 144));
  const std::string pdf = pdf_of_pages(specs);
  EXPECT_EQ(open(pdf).page_count(), 40);
  EXPECT_EQ(render_error(pdf, {}), "the PDF has 40 pages, over the limit of 32 per request: choose pages (like 1-32)");
  EXPECT_EQ(render_error(pdf, {"1-33"}), "33 pages selected, over the limit of 32 per request");
  EXPECT_EQ(qvl::render_pdf(bytes_of(pdf), {"38-"}).size(), 3u);
  EXPECT_EQ(render_error(pdf, {"39-41"}),
            "page selection '39-41': page 41 in '39-41' is past the end (the document has 40 pages)");
}

TEST(PdfDocument, TotalPixelsAreCappedBeforeRendering) {
  std::vector<PdfPageSpec> specs(3, box_page(612, 792));  // 1.94 Mpx each at 144 dpi
  PdfLimits limits;
  limits.max_total_pixels = 5'000'000;
  EXPECT_EQ(render_error(pdf_of_pages(specs), {}, limits),
            "the 3 selected pages come to 5.8 Mpx at 144 dpi, over the limit of 5 Mpx per request: select fewer "
            "pages or a lower dpi");
  EXPECT_EQ(qvl::render_pdf(bytes_of(pdf_of_pages(specs)), {"", 72}, limits).size(), 3u);
}

TEST(PdfDocument, APageOverThePixelCapIsRenderedAtALowerDpi) {
  // A0 (841 × 1189 mm): 6740 × 4768 px = 32 Mpx at 144 dpi, twice the cap.
  const std::vector<qvl::PdfPageImage> pages = qvl::render_pdf(bytes_of(pdf_of_pages({box_page(2384, 3370)})), {});
  ASSERT_EQ(pages.size(), 1u);
  EXPECT_TRUE(pages[0].dpi_lowered);
  EXPECT_LT(pages[0].dpi, 144);
  EXPECT_GT(pages[0].dpi, 100);
  const int64_t area = int64_t(pages[0].image.width) * pages[0].image.height;
  EXPECT_LE(area, PdfLimits{}.max_page_pixels);
  EXPECT_GT(area, PdfLimits{}.max_page_pixels * 99 / 100);
}

TEST(PdfDocument, AHugePageIsRefusedFromItsBoxBeforeRendering) {
  // 200 × 200 inches: 829 Mpx at 144 dpi; at the lowest dpi (36) still 52 Mpx.
  const std::string pdf = pdf_of_pages({box_page(14400, 14400)});
  EXPECT_EQ(open(pdf).page_count(), 1);
  EXPECT_EQ(render_error(pdf, {}),
            "page 1 is 14400 x 14400 pt (200 x 200 in): even at 36 dpi it would be 7200 x 7200 px = 51.8 Mpx, over "
            "the limit of 16.8 Mpx (and 32768 px a side) per page");
}

TEST(PdfDocument, DpiOutsideTheRangeIsRefused) {
  EXPECT_EQ(render_error(text_pdf(), {"", 1000}), "dpi 1000 is outside the allowed range [36, 600]");
  EXPECT_EQ(render_error(text_pdf(), {"", 10}), "dpi 10 is outside the allowed range [36, 600]");
}

TEST(PdfDocument, BadFilesAreRefusedWithOneClearLine) {
  EXPECT_EQ(open_error(""), "PDF is empty (0 bytes)");
  EXPECT_EQ(open_error("GIF89a not a pdf"), "not a PDF: the file does not start with %PDF-");
  PdfLimits small;
  small.max_bytes = 100;
  EXPECT_EQ(open_error(text_pdf(), small),
            "PDF is " + std::to_string(text_pdf().size()) + " bytes, over the limit of 100 bytes");
  EXPECT_EQ(open_error(encrypted_pdf()),
            "the PDF is encrypted with a password; qvl takes no PDF passwords: remove the password and send it again");
  EXPECT_EQ(open_error(pdf_of_pages({})), "the PDF has no pages (Poppler: Invalid page count 0)");
}

TEST(PdfDocument, TruncatedFilesSaySo) {
  const std::string pdf = text_pdf();
  const std::string cut = pdf.substr(0, pdf.size() / 2);
  EXPECT_EQ(open_error(cut), "truncated PDF: the file ends at byte " + std::to_string(cut.size()) +
                                 " without the %%EOF marker (Poppler: Couldn't find trailer dictionary; Couldn't "
                                 "read xref table)");
  for (size_t n : {size_t(5), size_t(9), size_t(100), pdf.size() - 40})
    EXPECT_NE(open_error(pdf.substr(0, n)), "(no error)") << n;
}

TEST(PdfDocument, AFileCutInItsTrailerIsRebuiltByPoppler) {
  // Only "startxref ... %%EOF" lost: Poppler finds the objects by scanning
  // and the page renders, as it would in a viewer.
  const std::string pdf = text_pdf();
  const qvl::Image im = render_one(pdf.substr(0, pdf.size() - 7));
  EXPECT_EQ(im.width, 1224);
  EXPECT_GT(dark_pixels(im, 144, 1584 - 2 * 724, 800, 1584 - 2 * 700 + 8), 2000);
}

TEST(PdfDocument, CorruptStructureWithAnEndMarker) {
  EXPECT_EQ(open_error("%PDF-1.7\nnothing here\n%%EOF\n"),
            "corrupt PDF: Poppler cannot read its structure (Poppler: Couldn't find trailer dictionary; Couldn't "
            "read xref table)");
}

TEST(PdfDocument, TheTimeBudgetStopsBetweenPages) {
  std::vector<PdfPageSpec> specs(3, text_page());
  const PdfDocument doc = open(pdf_of_pages(specs));
  PdfLimits limits;
  limits.time_budget_s = 1e-9;  // spent by the first page
  const auto plan = qvl::plan_pages(doc, qvl::all_pages(3), 72, limits);
  try {
    qvl::render_pages(doc, plan, limits);
    FAIL() << "no error";
  } catch (const qvl::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("rendering stopped before page 2 (1 of 3 pages done in ", 0), 0u) << e.what();
  }
}

TEST(PdfDocument, OnPageSeesEachPageAsItIsDone) {
  std::vector<PdfPageSpec> specs(2, box_page(72, 72));
  const PdfDocument doc = open(pdf_of_pages(specs));
  const PdfLimits limits;
  std::vector<int> seen;
  qvl::render_pages(doc, qvl::plan_pages(doc, {1, 0}, 72, limits), limits,
                    [&](const qvl::PdfPageImage& p) { seen.push_back(p.page); });
  EXPECT_EQ(seen, std::vector<int>({2, 1}));
}

}  // namespace
