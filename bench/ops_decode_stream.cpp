// Decode's matrix products as decode runs them, over weights much larger than
// the caches, each round (passes over them for at least 0.2 s) followed at
// once by a pass of the read-bandwidth probe: the fraction of the machine's
// read bandwidth the products reach (issue 15 item 4), per round, median over
// rounds. On a shared machine whose bandwidth drifts by 2x within seconds, a
// round and the probe beside it see the same load, so the median ratio is
// steadier than either figure alone. Each
// round's pair is printed too: on a shared machine the ratio depends on the
// neighbours' load (quiet rounds, where the probe reads the most, give the
// highest ratios), and the pairs show it.
// (ops_report's gemv rows use one matrix of a few MB, which a large L3 holds.)
//
//   ops_decode_stream [--threads N] [--format q4|q8|bf16|f32]... [--rounds R] [--target NAME]
//
// --target NAME runs as QVL_SIMD_TARGET=NAME would (the benchmark re-executes
// itself with it set): every kernel and the probe as an older CPU runs them
// (e.g. AVX2 on an AVX-512 machine).
//
// Shapes: Qwen3-VL-2B's decoder layer (hidden 2048, 16 query and 8 kv heads
// of 128, MLP 6144), grouped as the model calls them: matmul_each(q, k, v),
// o, matmul_each(gate, up), down. Layers enough to pass 512 MB of weights.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simd_target_option.h"

#include "ops/machine_limits.h"
#include "ops/matmul.h"
#include "ops/ops.h"
#include "util/error.h"
#include "util/formats.h"
#include "util/huge_pages.h"

namespace {

using qvl::MatmulOutput;
using qvl::ThreadPool;
using qvl::WeightFormat;
using qvl::WeightMatrix;
using Clock = std::chrono::steady_clock;

constexpr int64_t kHidden = 2048, kQ = 16 * 128, kKv = 8 * 128, kMlp = 6144;

struct Layer {
  WeightMatrix q, k, v, o, gate, up, down;
};

// One matrix of `format` with distinct storage (so passes never hit in cache).
// bf16 weights are copied onto 2 MB pages, as the model's are.
WeightMatrix make(const std::vector<uint16_t>& src, int64_t rows, int64_t cols, WeightFormat format,
                  ThreadPool& pool, std::vector<std::shared_ptr<void>>& keep) {
  if (format != WeightFormat::BF16) return WeightMatrix::from_bf16(src.data(), rows, cols, format, &pool);
  const size_t bytes = static_cast<size_t>(rows * cols) * 2;
  keep.push_back(qvl::allocate_huge_pages(bytes, "bf16 weights"));
  std::memcpy(keep.back().get(), src.data(), bytes);
  return WeightMatrix::view_bf16(static_cast<const uint16_t*>(keep.back().get()), rows, cols);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0, rounds = 15;
  std::vector<WeightFormat> formats;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--format" && i + 1 < argc) {
      try {
        formats.push_back(qvl::parse_weight_format(argv[++i]));
      } catch (const qvl::Error& e) {
        std::fprintf(stderr, "ops_decode_stream: %s\n", e.what());
        return 2;
      }
    } else if (a == "--target" && i + 1 < argc)
      return qvl::bench::reexec_under_simd_target(argc, argv, i);
    else {
      std::fprintf(
          stderr, "usage: ops_decode_stream [--threads N] [--format q4|q8|bf16|f32]... [--rounds R] [--target NAME]\n");
      return 2;
    }
  }
  if (formats.empty()) formats = {WeightFormat::Q4, WeightFormat::Q8, WeightFormat::BF16};
  ThreadPool pool(threads);

  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<uint16_t> src(static_cast<size_t>(kMlp * kHidden));
  for (auto& w : src) w = qvl::f32_to_bf16(dist(rng));
  std::vector<float> x(kMlp), y(kMlp), y2(kMlp);
  for (size_t i = 0; i < x.size(); ++i) x[i] = dist(rng) * 50;

  const size_t bw_floats = size_t(512) << 20 >> 2;
  std::shared_ptr<float> bw_buf = qvl::bandwidth_buffer(pool, bw_floats);
  nlohmann::json out = {{"threads", pool.size()},
                        {"rounds", rounds},
                        {"simd_target", qvl::simd_target_name()},
                        {"formats", nlohmann::json::array()}};
  for (WeightFormat f : formats) {
    std::vector<std::shared_ptr<void>> keep;
    std::vector<Layer> layers;
    size_t bytes = 0;
    while (bytes < (size_t(512) << 20)) {
      Layer l{make(src, kQ, kHidden, f, pool, keep),    make(src, kKv, kHidden, f, pool, keep),
              make(src, kKv, kHidden, f, pool, keep),   make(src, kHidden, kQ, f, pool, keep),
              make(src, kMlp, kHidden, f, pool, keep),  make(src, kMlp, kHidden, f, pool, keep),
              make(src, kHidden, kMlp, f, pool, keep)};
      for (const WeightMatrix* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) bytes += w->bytes();
      layers.push_back(std::move(l));
    }
    auto pass = [&] {
      for (const Layer& l : layers) {
        const MatmulOutput qkv[] = {{&l.q, nullptr, y.data(), kQ}, {&l.k, nullptr, y2.data(), kKv},
                                    {&l.v, nullptr, y2.data() + kKv, kKv}};
        qvl::matmul_each(x.data(), 1, kHidden, qkv, pool);
        qvl::matmul(x.data(), 1, l.o, nullptr, y.data(), pool);
        const MatmulOutput gate_up[] = {{&l.gate, nullptr, y.data(), kMlp}, {&l.up, nullptr, y2.data(), kMlp}};
        qvl::matmul_each(x.data(), 1, kHidden, gate_up, pool);
        qvl::matmul(x.data(), 1, l.down, nullptr, y.data(), pool);
      }
    };
    pass();  // warm-up: pages touched, pool awake
    std::vector<double> kernel_gbs, probe_gbs, ratios;
    for (int r = 0; r < rounds; ++r) {
      // Passes for at least kRoundSeconds: the first few milliseconds after
      // a probe pass read slower (a 7 ms bf16 pass right after the probe read
      // 0.6 of it, back to back 0.9), and decode never follows a probe.
      constexpr double kRoundSeconds = 0.2;
      const Clock::time_point t0 = Clock::now();
      int passes = 0;
      double seconds = 0;
      do {
        pass();
        ++passes;
        seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      } while (seconds < kRoundSeconds);
      const double gbs = static_cast<double>(bytes) * passes / seconds / 1e9;
      const double probe = qvl::measure_read_bandwidth_gbs(pool, bw_buf.get(), bw_floats, 1);
      kernel_gbs.push_back(gbs);
      probe_gbs.push_back(probe);
      ratios.push_back(gbs / probe);
    }
    out["formats"].push_back({{"format", qvl::weight_format_name(f)},
                              {"layers", layers.size()},
                              {"weight_bytes_per_pass", bytes},
                              {"kernel", qvl::matmul_kernel(layers[0].q, 1).name},
                              {"median_gb_s", median(kernel_gbs)},
                              {"median_read_bandwidth_gb_s", median(probe_gbs)},
                              {"median_fraction_of_read_bandwidth", median(ratios)},
                              {"fraction_min", *std::min_element(ratios.begin(), ratios.end())},
                              {"fraction_max", *std::max_element(ratios.begin(), ratios.end())},
                              {"rounds_gb_s", kernel_gbs},
                              {"rounds_read_bandwidth_gb_s", probe_gbs}});
  }
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
