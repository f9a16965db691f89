// `qvl run --image doc.pdf` on the fixture model: a PDF (known by its bytes,
// whatever its name) becomes its pages as images, --pages picks them, and a
// bad PDF or a stray --pages exits non-zero with one line. `qvl chat` takes
// a PDF the same way, from --image or an /image line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
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

std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// --per-page: each page asked alone, one JSON line per page in the order
// --pages gives, each page's prompt that of the same page run on its own,
// and (with --progress) a line per page on stderr.
TEST(RunPdfCli, PerPageAnswersEachPageAloneWithProgressOnStderr) {
  const TempFile pdf(three_pages());
  const QvlResult r = run({"--image", pdf.path, "--per-page", "--pages", "3,1", "--progress"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<nlohmann::json> pages = json_lines(r.out);
  ASSERT_EQ(pages.size(), 2u) << r.out;
  const std::vector<int> order = {3, 1};
  for (size_t i = 0; i < pages.size(); ++i) {
    SCOPED_TRACE(order[i]);
    EXPECT_EQ(pages[i]["page"], order[i]);
    EXPECT_EQ(pages[i]["usage"]["completion_tokens"], 2);  // --max-tokens 2 --ignore-eos
    EXPECT_EQ(pages[i]["finish_reason"], "length");
    EXPECT_EQ(pages[i]["token_ids"].size(), 2u);
    const QvlResult alone = run({"--image", pdf.path, "--pages", std::to_string(order[i])});
    ASSERT_EQ(alone.code, 0) << alone.err;
    EXPECT_EQ(pages[i]["usage"]["prompt_tokens"], prompt_tokens(alone));
    EXPECT_EQ(pages[i]["token_ids"], nlohmann::json::parse(alone.out)["token_ids"]);
    EXPECT_GE(pages[i]["timings"]["started_ms"].get<double>(), pages[i]["timings"]["load_ms"].get<double>());
  }
  EXPECT_LT(pages[0]["timings"]["started_ms"].get<double>(), pages[1]["timings"]["started_ms"].get<double>());
  EXPECT_NE(r.err.find("page 1/2: 2 tokens, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("page 2/2: 2 tokens, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" s (first token "), std::string::npos) << r.err;
  EXPECT_LT(r.err.find("page 1/2"), r.err.find("page 2/2"));
}

// Text: each answer after its page's comment line, in order; stderr is not a
// terminal here, so no progress without --progress.
TEST(RunPdfCli, PerPageTextHeadsEachAnswerWithItsPage) {
  const TempFile pdf(three_pages());
  const QvlResult r = run_qvl({"run", "--model", kFixtures + "/tiny-qwen3vl", "--threads", "2", "--prompt",
                              "Read the document.", "--temperature", "0", "--max-tokens", "2", "--ignore-eos",
                              "--image", pdf.path, "--per-page"});
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t one = r.out.find("<!-- page 1 -->\n\n"), two = r.out.find("\n\n<!-- page 2 -->\n\n"),
               three = r.out.find("\n\n<!-- page 3 -->\n\n");
  ASSERT_EQ(one, 0u) << r.out;
  ASSERT_NE(two, std::string::npos) << r.out;
  ASSERT_NE(three, std::string::npos) << r.out;
  EXPECT_LT(two, three);
  EXPECT_EQ(r.err.find("page 1/3"), std::string::npos) << r.err;
}

// stderr a terminal (a pseudo-terminal here), stdout a file: the progress
// lines are on without --progress, with a line counting the running page's
// tokens that each page's final line overwrites.
TEST(RunPdfCli, PerPageProgressIsOnWhenStderrIsATerminal) {
  const TempFile pdf(three_pages());
  const TempFile out("", ".json");
  const std::vector<std::string> args = {QVL_BINARY, "run", "--model", kFixtures + "/tiny-qwen3vl", "--threads", "2",
                                         "--prompt", "Read the document.", "--output-format", "json",
                                         "--temperature", "0", "--max-tokens", "2", "--ignore-eos",
                                         "--image", pdf.path, "--per-page"};
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = open(out.path.c_str(), O_WRONLY | O_TRUNC);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(126);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  std::string terminal;
  char buf[4096];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) terminal.append(buf, static_cast<size_t>(n));  // EIO at the end
  close(master);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0) << terminal;
  for (const char* line : {"page 1/3: 2 tokens, ", "page 2/3: 2 tokens, ", "page 3/3: 2 tokens, "})
    EXPECT_NE(terminal.find(line), std::string::npos) << line << "\n" << terminal;
  // The live count first, then the page's final line over it.
  const size_t live = terminal.find("\rpage 1/3: ");
  ASSERT_NE(live, std::string::npos) << terminal;
  EXPECT_NE(terminal.find("\rpage 1/3: 2 tokens, ", live + 1), std::string::npos) << terminal;
  EXPECT_NE(terminal.find("\033[K"), std::string::npos) << terminal;
  std::ifstream in(out.path);
  std::ostringstream text;
  text << in.rdbuf();
  EXPECT_EQ(json_lines(text.str()).size(), 3u) << text.str();
}

// --parallel N: N pages asked at once, their answers decoded together,
// and written just as one page at a time writes them: the same pages in
// the same order, each with the tokens it has alone (batching changes
// speed, never answers), text and JSON alike.
TEST(RunPdfCli, PerPageParallelWritesWhatOneAtATimeWrites) {
  const TempFile pdf(three_pages());
  auto per_page = [&](const std::string& format, const std::string& parallel) {
    const QvlResult r = run_qvl({"run", "--model", kFixtures + "/tiny-qwen3vl", "--threads", "2", "--prompt",
                                 "Read the document.", "--temperature", "0", "--max-tokens", "24", "--ignore-eos",
                                 "--repetition-guard", "0", "--output-format", format, "--image", pdf.path,
                                 "--per-page", "--pages", "2,3,1", "--parallel", parallel});
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  };
  for (const std::string format : {"text", "json"}) {
    SCOPED_TRACE(format);
    const std::string one = per_page(format, "1"), three = per_page(format, "3");
    if (format == "text") {
      EXPECT_EQ(three, one);
      EXPECT_LT(three.find("<!-- page 2 -->"), three.find("<!-- page 3 -->"));
      EXPECT_LT(three.find("<!-- page 3 -->"), three.find("<!-- page 1 -->"));
      continue;
    }
    const std::vector<nlohmann::json> a = json_lines(one), b = json_lines(three);
    ASSERT_EQ(a.size(), 3u) << one;
    ASSERT_EQ(b.size(), 3u) << three;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(b[i]["page"], a[i]["page"]);
      EXPECT_EQ(b[i]["token_ids"], a[i]["token_ids"]);
      EXPECT_EQ(b[i]["text"], a[i]["text"]);
      EXPECT_EQ(b[i]["token_ids"].size(), 24u);
    }
  }
  const QvlResult r = run({"--image", pdf.path, "--parallel", "2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("run: --parallel applies to --per-page, which is not given"), std::string::npos) << r.err;
}

TEST(RunPdfCli, PerPageAndProgressNeedAPdfAndEachOther) {
  QvlResult r = run({"--image", kFixtures + "/golden/images/gradient_320x240.png", "--per-page"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("run: --per-page needs a PDF among the --image files, and none is one"), std::string::npos)
      << r.err;
  const TempFile pdf(three_pages());
  r = run({"--image", pdf.path, "--progress"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("run: --progress reports the pages of --per-page, which is not given"), std::string::npos)
      << r.err;
  r = run({"--image", pdf.path, "--image", pdf.path, "--per-page"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("run: --per-page takes one PDF, and two --image files are PDFs"), std::string::npos) << r.err;
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
