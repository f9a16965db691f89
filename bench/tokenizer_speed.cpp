// Single-threaded encode speed of qvl's tokenizer on a text file, printed as
// JSON (bench/tokenizer_vs_hf.sh runs it next to Hugging Face's tokenizers on
// the same text).
// Usage: tokenizer_speed --tokenizer tokenizer.json --text FILE [--runs N] [--ids-out FILE] [--lines]
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/tokenizer.h"
#include "util/args.h"
#include "util/error.h"

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) qvl::fail("cannot open ", path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// CPU time of this thread: robust when other processes share the cores.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(int argc, char** argv) {
  qvl::Args args("tokenizer_speed", "--tokenizer FILE --text FILE [--runs N] [--ids-out FILE]",
                 "Encodes a text file several times on one thread and prints the speed as JSON.");
  std::string tokenizer_path, text_path, ids_out;
  long runs = 5;
  bool lines = false;
  args(tokenizer_path, "tokenizer", "FILE", "tokenizer.json");
  args(text_path, "text", "FILE", "the text to encode");
  args(runs, "runs", "N", "timed runs (best and median reported)").range(1, 1000);
  args(ids_out, "ids-out", "FILE", "write the ids of the text as a JSON array");
  args(lines, "lines", "encode each line (with its newline) as its own input");
  if (!args.parse(argc, argv)) return 0;
  if (!args.has("tokenizer") || !args.has("text")) throw qvl::UsageError("tokenizer_speed: --tokenizer and --text are required");

  auto t0 = std::chrono::steady_clock::now();
  qvl::Tokenizer tok = qvl::Tokenizer::load(tokenizer_path);
  double load_s = seconds_since(t0);
  std::string text = read_all(text_path);

  std::vector<std::string_view> inputs;
  if (lines) {
    for (size_t b = 0; b < text.size();) {
      size_t nl = text.find('\n', b);
      size_t e = nl == std::string::npos ? text.size() : nl + 1;
      inputs.push_back(std::string_view(text).substr(b, e - b));
      b = e;
    }
  } else {
    inputs.push_back(text);
  }
  auto encode = [&] {
    std::vector<int32_t> all;
    for (std::string_view in : inputs) {
      std::vector<int32_t> part = tok.encode(in);
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  };
  t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> ids = encode();  // warm-up: fills the word cache; timed as the cold run
  double cold = seconds_since(t0);
  std::vector<double> times, cpus;
  for (long r = 0; r < runs; ++r) {
    double c0 = thread_cpu_seconds();
    t0 = std::chrono::steady_clock::now();
    std::vector<int32_t> out = encode();
    times.push_back(seconds_since(t0));
    cpus.push_back(thread_cpu_seconds() - c0);
    if (out != ids) qvl::fail("encode is not deterministic");
  }
  std::sort(times.begin(), times.end());
  std::sort(cpus.begin(), cpus.end());
  double cpu_median = cpus[cpus.size() / 2];
  if (args.has("ids-out")) {
    std::ofstream out(ids_out, std::ios::binary);
    out << nlohmann::json(ids).dump();
    if (!out) qvl::fail("cannot write ", ids_out);
  }
  double best = times.front(), median = times[times.size() / 2];
  double bytes = static_cast<double>(text.size());
  nlohmann::json j = {{"library", "qvl"},
                      {"mode", lines ? "lines" : "whole"},
                      {"bytes", text.size()},
                      {"tokens", ids.size()},
                      {"runs", runs},
                      {"load_seconds", load_s},
                      {"seconds_best", best},
                      {"seconds_median", median},
                      {"mb_per_s_best", bytes / best / 1e6},
                      {"mb_per_s_median", bytes / median / 1e6},
                      {"cold_seconds", cold},
                      {"mb_per_s_cold", bytes / cold / 1e6},
                      {"cpu_seconds_median", cpu_median},
                      {"mb_per_cpu_s_median", bytes / cpu_median / 1e6}};
  std::cout << j.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const qvl::UsageError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tokenizer_speed: " << e.what() << "\n";
    return 1;
  }
}
