// check_pdf_object_counts: every count Poppler sizes a table by is bounded
// before Poppler sees the file, and ordinary files pass.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "pdf/pdf_document.h"
#include "pdf/pdf_structure.h"
#include "pdf_writer.h"
#include "util/error.h"

namespace qvl {
namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The message of check_pdf_object_counts on `pdf` with a limit of 1000, or "".
std::string refusal(const std::string& pdf) {
  try {
    check_pdf_object_counts(bytes_of(pdf), 1000);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(PdfStructure, OrdinaryFilesPass) {
  const std::string pdf = test::pdf_of_pages({test::text_page(), test::table_page(), test::text_page()});
  EXPECT_EQ(refusal(pdf), "");
  // Numbers that are not counts: coordinates, references, stream data.
  EXPECT_EQ(refusal("%PDF-1.7\n5 0 obj << /Rect [0 0 999999 999999] /P 7 0 R /N 3 >> endobj\n"
                    "6 0 obj << /Length 20 >> stream\n1000000 2000000 m\nendstream endobj\n"),
            "");
}

TEST(PdfStructure, EachDeclaredCountIsBounded) {
  struct Case {
    const char* what;
    std::string pdf;
    const char* says;
  };
  const Case cases[] = {
      {"object header", "%PDF-1.7\n7000000 0 obj\n<< >>\nendobj\n", "object number 7000000 at byte 9"},
      {"object header, no space before", "%PDF-1.7\nendobj7000000 0 obj<<>>", ""},  // 'endobj7000000' is one token
      {"trailer /Size", "%PDF-1.7\ntrailer\n<< /Size 2000000 /Root 1 0 R >>\n", "/Size 2000000"},
      {"xref stream /Size after another name", "%PDF-1.7\n3 0 obj<</Type/XRef/Size 5000>>", "/Size 5000"},
      {"xref section", "%PDF-1.7\nxref\n0 2\n0000000000 65535 f \n0000000015 00000 n \n999990 20\n",
       "xref section ending at 1000010"},
      {"/Index pair", "%PDF-1.7\n3 0 obj<</Type/XRef/Size 10/Index [0 3 900 200]>>", "/Index section ending at 1100"},
      {"object stream /N", "%PDF-1.7\n4 0 obj<</Type/ObjStm/N 4000/First 9>>", "object stream /N of 4000"},
  };
  for (const Case& c : cases) {
    const std::string got = refusal(c.pdf);
    if (*c.says == 0) {
      EXPECT_EQ(got, "") << c.what;
      continue;
    }
    EXPECT_NE(got.find(c.says), std::string::npos) << c.what << ": " << got;
    EXPECT_NE(got.find("over the limit of 1000 objects"), std::string::npos) << c.what << ": " << got;
  }
}

// The file fuzz_pdf found: a damaged 1.3 KB document whose reconstruction
// numbered an object in the millions, and Poppler allocated 282 MB for the
// table. Now it is refused by the scan, at once.
TEST(PdfStructure, AHugeObjectNumberIsRefusedBeforePopplerAllocates) {
  std::string pdf = test::pdf_of_pages({test::text_page()});
  pdf.insert(pdf.find("1 0 obj"), "7000000 0 obj\n<< >>\nendobj\n");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    PdfDocument::open(bytes_of(pdf));
    FAIL() << "opened a PDF declaring object 7000000";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("object number 7000000"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  // Within the limit the same document opens.
  PdfLimits roomy;
  roomy.max_objects = 8'000'000;
  EXPECT_NO_THROW(check_pdf_object_counts(bytes_of(pdf), roomy.max_objects));
}

}  // namespace
}  // namespace qvl
