// Test PDFs written by the tests themselves: minimal, valid files (header,
// numbered objects, a cross-reference table with the true byte offsets,
// trailer, startxref, %%EOF) built from a few page recipes, so every test
// says exactly what its input holds and no binary fixture is needed. Shared
// by tests/pdf, tests/cli, fuzz seeds and bench/pdf_render_bench.cpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace qvl::test {

// Objects are numbered from 1 in the order reserved; finish() lays them out
// and writes the xref table from where each one landed.
class PdfWriter {
 public:
  int reserve() {
    bodies_.emplace_back();
    return static_cast<int>(bodies_.size());
  }
  void set(int number, std::string body) { bodies_[number - 1] = std::move(body); }
  int add(std::string body) {
    const int n = reserve();
    set(n, std::move(body));
    return n;
  }
  // A stream object: `dict` holds the entries besides /Length.
  int add_stream(const std::string& dict, const std::string& data) {
    return add("<< " + dict + " /Length " + std::to_string(data.size()) + " >>\nstream\n" + data + "\nendstream");
  }

  // `trailer_extra`: more trailer entries (/Encrypt, /ID).
  std::string finish(int root, const std::string& trailer_extra = "") const {
    std::string out = "%PDF-1.7\n%\xE2\xE3\xCF\xD3\n";  // binary comment: "this file is binary" for tools
    std::vector<size_t> offsets;
    for (size_t i = 0; i < bodies_.size(); ++i) {
      offsets.push_back(out.size());
      out += std::to_string(i + 1) + " 0 obj\n" + bodies_[i] + "\nendobj\n";
    }
    const size_t xref = out.size();
    out += "xref\n0 " + std::to_string(bodies_.size() + 1) + "\n0000000000 65535 f \n";
    char entry[32];
    for (size_t off : offsets) {
      std::snprintf(entry, sizeof entry, "%010zu 00000 n \n", off);  // 20 bytes each, as the format requires
      out += entry;
    }
    out += "trailer\n<< /Size " + std::to_string(bodies_.size() + 1) + " /Root " + std::to_string(root) + " 0 R " +
           trailer_extra + " >>\nstartxref\n" + std::to_string(xref) + "\n%%EOF\n";
    return out;
  }

 private:
  std::vector<std::string> bodies_;
};

// One page: its size in points, /Rotate, content stream and resources.
struct PdfPageSpec {
  double width = 612, height = 792;  // US Letter
  int rotate = 0;
  std::string content;               // the page's content stream
  bool helvetica = false;            // resources: /F1 = Helvetica (base-14, not embedded)
  // resources: /Im1 = a DeviceGray 8-bit image of this size with these pixels (row-major)
  int image_width = 0, image_height = 0;
  std::string image_pixels;
};

inline std::string pdf_of_pages(const std::vector<PdfPageSpec>& specs, const std::string& trailer_extra = "",
                                PdfWriter* writer_out = nullptr) {
  PdfWriter w;
  const int catalog = w.reserve(), pages = w.reserve();
  const int font = w.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  std::string kids;
  for (const PdfPageSpec& s : specs) {
    std::string resources = "<< ";
    if (s.helvetica) resources += "/Font << /F1 " + std::to_string(font) + " 0 R >> ";
    if (s.image_width > 0) {
      const int im = w.add_stream("/Type /XObject /Subtype /Image /Width " + std::to_string(s.image_width) +
                                      " /Height " + std::to_string(s.image_height) +
                                      " /ColorSpace /DeviceGray /BitsPerComponent 8",
                                  s.image_pixels);
      resources += "/XObject << /Im1 " + std::to_string(im) + " 0 R >> ";
    }
    resources += ">>";
    const int content = w.add_stream("", s.content);
    char box[96];
    std::snprintf(box, sizeof box, "[0 0 %g %g]", s.width, s.height);
    const int page = w.add("<< /Type /Page /Parent " + std::to_string(pages) + " 0 R /MediaBox " + box +
                           (s.rotate ? " /Rotate " + std::to_string(s.rotate) : std::string()) + " /Resources " +
                           resources + " /Contents " + std::to_string(content) + " 0 R >>");
    kids += std::to_string(page) + " 0 R ";
  }
  w.set(catalog, "<< /Type /Catalog /Pages " + std::to_string(pages) + " 0 R >>");
  w.set(pages, "<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(specs.size()) + " >>");
  if (writer_out) *writer_out = w;
  return w.finish(catalog, trailer_extra);
}

// ---- the recipes the tests, the fuzz seeds and the benchmark share

// Black Helvetica text, 24 pt, from (72, 700) down: an invoice's header.
inline PdfPageSpec text_page(double width = 612, double height = 792) {
  PdfPageSpec s;
  s.width = width, s.height = height, s.helvetica = true;
  s.content =
      "BT /F1 24 Tf 72 700 Td (INVOICE 2026-0042) Tj 0 -36 Td (Date: 2 December 2026) Tj "
      "0 -36 Td (Total due: 1,234.50 EUR) Tj ET";
  return s;
}

// A 4 × 5 grid of 1-pt black lines from (72, 400) to (540, 700), a word in
// each cell: a price list.
inline PdfPageSpec table_page() {
  PdfPageSpec s;
  s.helvetica = true;
  std::string c = "1 w 0 G ";
  for (int r = 0; r <= 5; ++r) c += "72 " + std::to_string(400 + r * 60) + " m 540 " + std::to_string(400 + r * 60) + " l S ";
  for (int k = 0; k <= 4; ++k) c += std::to_string(72 + k * 117) + " 400 m " + std::to_string(72 + k * 117) + " 700 l S ";
  c += "BT /F1 14 Tf ";
  for (int r = 0; r < 5; ++r)
    for (int k = 0; k < 4; ++k)
      c += "1 0 0 1 " + std::to_string(80 + k * 117) + " " + std::to_string(420 + r * 60) + " Tm (Item " +
           std::to_string(r * 4 + k + 1) + ") Tj ";
  s.content = c + "ET";
  return s;
}

// A page that is one greyscale image, as a scanner makes them: light paper
// noise with dark horizontal bars where lines of text would be. The image
// covers the page; bars are dark in rows [40, 60) and [100, 120) of 200.
inline PdfPageSpec scanned_page(int image_width = 150, int image_height = 200) {
  PdfPageSpec s;
  s.image_width = image_width, s.image_height = image_height;
  s.image_pixels.resize(static_cast<size_t>(image_width) * image_height);
  uint32_t noise = 12345;
  for (int y = 0; y < image_height; ++y)
    for (int x = 0; x < image_width; ++x) {
      noise = noise * 1664525u + 1013904223u;
      const int row = y * 200 / image_height;
      const bool bar = ((row >= 40 && row < 60) || (row >= 100 && row < 120)) && x > image_width / 10 &&
                       x < image_width * 9 / 10;
      s.image_pixels[static_cast<size_t>(y) * image_width + x] =
          static_cast<char>(bar ? 20 + (noise >> 28) : 225 + (noise >> 28));
    }
  // The image's first row is its top: drawn into the page's unit square scaled to the page.
  s.content = "q 612 0 0 792 0 0 cm /Im1 Do Q";
  return s;
}

// A filled black rectangle, for exact pixel checks.
inline PdfPageSpec box_page(double width, double height, const std::string& rect = "72 72 144 72") {
  PdfPageSpec s;
  s.width = width, s.height = height;
  s.content = "0 g " + rect + " re f";
  return s;
}

inline std::string text_pdf() { return pdf_of_pages({text_page()}); }

// Encrypted with the Standard security handler whose user password is not
// empty: /O and /U are not derived from the empty password, so a reader
// that tries it (as Poppler does) finds the file locked.
inline std::string encrypted_pdf() {
  const std::string o(64, 'A'), u(64, 'B');  // 32 bytes each, in hex
  PdfWriter w;
  pdf_of_pages({text_page()}, "", &w);
  const int encrypt = w.add("<< /Filter /Standard /V 1 /R 2 /O <" + o + "> /U <" + u + "> /P -3904 >>");
  return w.finish(1, "/Encrypt " + std::to_string(encrypt) + " 0 R /ID [<0123456789ABCDEF0123456789ABCDEF> "
                     "<0123456789ABCDEF0123456789ABCDEF>]");
}

inline std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace qvl::test
