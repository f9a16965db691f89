// A stored page rendered again (search/page_source.h) as it was indexed: at
// the width its index entry records, whatever dpi that was, within the dpi
// limits; without one, at the dpi asked for.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../pdf/pdf_writer.h"
#include "media/intake.h"
#include "search/page_source.h"

namespace qvl {
namespace {

std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

TEST(PageSource, APageIsRenderedAtTheWidthItWasIndexedAt) {
  // Two pages of 2 x 1 inches: 288 x 144 px at the default 144 dpi.
  const std::vector<uint8_t> pdf = bytes_of(test::pdf_of_pages({test::box_page(144, 72), test::box_page(144, 72)}));
  MediaIntake intake{MediaLimits{}};
  const auto at_default = page_image(pdf, 2, PdfRenderRequest{}, intake, "doc.pdf");
  EXPECT_EQ(at_default->width, 288);
  EXPECT_EQ(at_default->height, 144);
  const auto at_72 = page_image(pdf, 2, PdfRenderRequest{}, intake, "doc.pdf", 144);  // indexed at 72 dpi
  EXPECT_EQ(at_72->width, 144);
  EXPECT_EQ(at_72->height, 72);
  const auto at_300 = page_image(pdf, 1, PdfRenderRequest{}, intake, "doc.pdf", 600);
  EXPECT_EQ(at_300->width, 600);
  // A width under the lowest dpi (36: 72 px) is rendered at that dpi.
  EXPECT_EQ(page_image(pdf, 1, PdfRenderRequest{}, intake, "doc.pdf", 10)->width, 72);
}

}  // namespace
}  // namespace qvl
