// `qvl run --image doc.pdf` on the fixture model: a PDF (known by its bytes,
// whatever its name) becomes its pages as images, --pages picks them, and a
// bad PDF or a stray --pages exits non-zero with one line. `qvl chat` takes
// a PDF the same way, from --image or an /image line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../pdf/pdf_writer.h"
#include "run_qvl.h"

namespace {

using namespace qvl::test;

const std::string kFixtures = QVL_FIXTURES_DIR;

// A file of its own per test (CTest runs tests in parallel processes), removed at the end.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& bytes, const char* suffix = ".pdf") {
    char tmpl[] = "/tmp/qvl_run_pdf_XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    std::remove(tmpl);
    path = std::string(tmpl) + suffix;
    std::ofstream(path, std::ios::binary) << bytes;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

QvlResult run(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"run",           "--model",  kFixtures + "/tiny-qwen3vl", "--threads", "2",
                                   "--prompt",      "Read the document.", "--output-format", "json",
                                   "--temperature", "0",        "--max-tokens", "2", "--ignore-eos"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_qvl(args);
}

// Three 2 × 2 inch pages: 288 × 288 px each at 144 dpi.
std::string three_pages() {
  return pdf_of_pages({box_page(144, 144), box_page(144, 144, "10 10 50 50"), box_page(144, 144, "20 20 90 30")});
}

int prompt_tokens(const QvlResult& r) { return nlohmann::json::parse(r.out)["usage"]["prompt_tokens"].get<int>(); }

TEST(RunPdfCli, EveryPageBecomesAnImage) {
  const TempFile pdf(three_pages(), ".bin");  // the name does not matter
  const QvlResult all = run({"--image", pdf.path});
  ASSERT_EQ(all.code, 0) << all.err;
  const QvlResult one = run({"--image", pdf.path, "--pages", "2"});
  ASSERT_EQ(one.code, 0) << one.err;
  const QvlResult two = run({"--image", pdf.path, "--pages", "3,1"});
  ASSERT_EQ(two.code, 0) << two.err;
  // Each page is the same size, so each adds the same number of image tokens.
  const int per_page = prompt_tokens(two) - prompt_tokens(one);
  EXPECT_GT(per_page, 0);
  EXPECT_EQ(prompt_tokens(all) - prompt_tokens(two), per_page);
}

TEST(RunPdfCli, VerboseSaysHowEachPageWasRendered) {
  const TempFile pdf(three_pages());
  const QvlResult r = run({"--image", pdf.path, "--pages", "1", "--dpi", "72", "--verbose"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find(pdf.path + ": page 1 rendered at 72 dpi (144x144 px)"), std::string::npos) << r.err;
}

TEST(RunPdfCli, AnEncryptedPdfIsOneLineNamingTheFile) {
  const TempFile pdf(encrypted_pdf());
  const QvlResult r = run({"--image", pdf.path});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("PDF " + pdf.path + ": the PDF is encrypted with a password"), std::string::npos) << r.err;
}

TEST(RunPdfCli, APageOutOfRangeNamesThePage) {
  const TempFile pdf(three_pages());
  const QvlResult r = run({"--image", pdf.path, "--pages", "2-4"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("page 4 in '2-4' is past the end (the document has 3 pages)"), std::string::npos) << r.err;
}

TEST(RunPdfCli, PagesWithoutAPdfIsAUsageError) {
  const QvlResult r = run({"--image", kFixtures + "/golden/images/gradient_320x240.png", "--pages", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--pages applies to PDF files"), std::string::npos) << r.err;
}

TEST(RunPdfCli, DpiOutOfRangeIsAUsageError) {
  const TempFile pdf(three_pages());
  const QvlResult r = run({"--image", pdf.path, "--dpi", "5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--dpi"), std::string::npos) << r.err;
}

// qvl chat with `lines` as its input, on the fixture model.
QvlResult chat(const std::vector<std::string>& extra, const std::string& lines) {
  const TempFile input(lines, ".txt");
  std::vector<std::string> args = {"chat", "--model", kFixtures + "/tiny-qwen3vl", "--threads", "2", "--temperature",
                                   "0", "--max-tokens", "2", "--ignore-eos"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_qvl(args, {}, input.path);
}

TEST(ChatPdfCli, APdfIsItsPagesAsInRun) {
  const TempFile pdf(three_pages(), ".bin");
  // From --image, its pages chosen with --pages, and from an /image line.
  QvlResult r = chat({"--image", pdf.path, "--pages", "1,3"}, "Read the document.\n/image " + pdf.path + "\nAnd this one?\n");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("cannot use"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // two answers
  // Read as a PDF, not an image: its own refusals, one line naming the file.
  r = chat({"--image", pdf.path, "--pages", "2-4"}, "Read it.\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err.find("cannot use PDF " + pdf.path + ": "), 0u) << r.err;
  EXPECT_NE(r.err.find("page 4 in '2-4' is past the end (the document has 3 pages)"), std::string::npos) << r.err;
  const TempFile locked(encrypted_pdf());
  r = chat({}, "/image " + locked.path + "\nHi\n");
  EXPECT_EQ(r.code, 0) << r.err;  // the conversation goes on without it
  EXPECT_NE(r.err.find("cannot use PDF " + locked.path + ": the PDF is encrypted with a password"), std::string::npos)
      << r.err;
}

}  // namespace
