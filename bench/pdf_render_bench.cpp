// Rendering PDF pages at 144 dpi (Qwen's document recipe; US Letter = 1224 ×
// 1584 px) for the pages the tests write: text, a ruled table, and a scan (a
// 1275 × 1650 greyscale image, 150 dpi, covering the page). Per case: time
// per page, Mpx/s, and memory: peak_MB is the process's peak RSS during the
// case (VmHWM, reset before it through /proc/self/clear_refs), extra_MB that
// peak above the RSS before it — what one page in flight costs.
//
// The machine limit beside it, measured in the same run: BM_MemoryFloor
// writes 11 fresh bytes per pixel of the same page (Poppler's 4-byte bitmap,
// its 4-byte copy, qvl's 3-byte RGB), the memory traffic no renderer of this
// design can avoid. Run: build/bench/bench_pdf --benchmark_format=json
#include <benchmark/benchmark.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "../tests/pdf/pdf_writer.h"
#include "pdf/pdf_document.h"

namespace {

using namespace qvl::test;

// kB from /proc/self/status ("VmHWM:", "VmRSS:").
double status_mb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(std::strlen(key))) / 1024.0;
  return 0;
}

// Sets the peak RSS to the present RSS (Linux >= 4.0); false where not allowed.
bool reset_peak_rss() { return bool(std::ofstream("/proc/self/clear_refs") << "5"); }

std::string page_pdf(int kind) {
  switch (kind) {
    case 0: return pdf_of_pages({text_page()});
    case 1: return pdf_of_pages({table_page()});
    default: return pdf_of_pages({scanned_page(1275, 1650)});
  }
}
const char* kKinds[] = {"text", "table", "scanned"};

void BM_RenderPage(benchmark::State& state) {
  const int kind = static_cast<int>(state.range(0));
  const double dpi = static_cast<double>(state.range(1));
  const std::vector<uint8_t> bytes = bytes_of(page_pdf(kind));
  const qvl::PdfDocument doc = qvl::PdfDocument::open(bytes);
  const bool reset = reset_peak_rss();
  const double rss_before = status_mb("VmRSS:");
  int64_t pixels = 0;
  for (auto _ : state) {
    qvl::Image im = doc.render_page(0, dpi);
    pixels = int64_t(im.width) * im.height;
    benchmark::DoNotOptimize(im.rgb.data());
  }
  state.SetLabel(std::string(kKinds[kind]) + (reset ? "" : " (peak RSS not resettable: process peak)"));
  state.counters["Mpx"] = double(pixels) / 1e6;
  state.counters["Mpx/s"] = benchmark::Counter(double(pixels) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_MB"] = status_mb("VmHWM:");
  state.counters["extra_MB"] = status_mb("VmHWM:") - rss_before;
}
BENCHMARK(BM_RenderPage)
    ->ArgsProduct({{0, 1, 2}, {144}})
    ->Args({0, 300})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Open + read the page box: what a server pays to refuse or plan a request.
void BM_OpenAndSize(benchmark::State& state) {
  const std::vector<uint8_t> bytes = bytes_of(page_pdf(static_cast<int>(state.range(0))));
  for (auto _ : state) {
    const qvl::PdfDocument doc = qvl::PdfDocument::open(bytes);
    benchmark::DoNotOptimize(doc.page_size(0).width_pt);
  }
  state.SetLabel(kKinds[state.range(0)]);
}
BENCHMARK(BM_OpenAndSize)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

void BM_MemoryFloor(benchmark::State& state) {
  const int64_t pixels = int64_t(1224) * 1584;  // US Letter at 144 dpi
  for (auto _ : state) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[pixels * 11]);
    std::memset(buf.get(), 0xFF, pixels * 11);
    benchmark::DoNotOptimize(buf.get());
  }
  state.SetLabel("letter at 144 dpi");
  state.counters["Mpx/s"] = benchmark::Counter(double(pixels) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GB/s"] = benchmark::Counter(double(pixels) * 11 / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MemoryFloor)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
