// Google Benchmark cases for the ops kernels at Qwen3-VL-2B's shapes. Counters
// report GFLOP/s (compute-bound cases) or weight GB/s (decode). For figures as
// a fraction of this machine's limits measured in the same run, use
// `ops_report` (bench/ops_report.cpp).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "ops/matmul.h"
#include "ops/ops.h"

namespace {

using qvl::WeightFormat;
using qvl::WeightMatrix;

qvl::ThreadPool& pool() {
  static qvl::ThreadPool p(0);
  return p;
}

std::vector<uint16_t> weights(int64_t n, int64_t k) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<uint16_t> w(static_cast<size_t>(n * k));
  for (auto& v : w) v = qvl::f32_to_bf16(dist(rng));
  return w;
}

// args: format, m, n, k
void BM_Matmul(benchmark::State& state) {
  const auto f = static_cast<WeightFormat>(state.range(0));
  const int64_t m = state.range(1), n = state.range(2), k = state.range(3);
  auto src = weights(n, k);
  WeightMatrix w = f == WeightFormat::BF16 ? WeightMatrix::view_bf16(src.data(), n, k)
                                           : WeightMatrix::from_bf16(src.data(), n, k, f, &pool());
  std::vector<float> x(static_cast<size_t>(m * k), 0.5f), y(static_cast<size_t>(m * n));
  for (auto _ : state) {
    qvl::matmul(x.data(), m, w, nullptr, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(qvl::weight_format_name(f));
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_GB/s"] = benchmark::Counter(double(w.bytes()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void MatmulArgs(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{2048, 2048}, {6144, 2048}, {2048, 6144}, {4096, 1024}, {1024, 4096}};
  for (int f : {int(WeightFormat::BF16), int(WeightFormat::Q8), int(WeightFormat::Q4), int(WeightFormat::F32)})
    for (auto& s : shapes)
      for (int64_t m : {1, 2, 4, 8, 64, 256, 784}) b->Args({f, m, s[0], s[1]});
  for (int f : {int(WeightFormat::BF16), int(WeightFormat::Q8), int(WeightFormat::Q4)}) b->Args({f, 1, 151936, 2048});
}
BENCHMARK(BM_Matmul)->Apply(MatmulArgs)->Unit(benchmark::kMillisecond)->UseRealTime();

// args: positions (vision, bidirectional 16 heads x 64)
void BM_AttentionVision(benchmark::State& state) {
  const int64_t n = state.range(0);
  qvl::AttentionParams p;
  p.nq = p.nkv = n, p.q_heads = p.kv_heads = 16, p.head_dim = 64;
  p.q_stride = p.kv_stride = p.out_stride = 1024;
  p.scale = 0.125f;
  std::vector<float> q(static_cast<size_t>(n * 1024), 0.1f), k = q, v = q, out = q;
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(float(i)), k[i] = std::cos(float(i) * 0.7f);
  for (auto _ : state) qvl::attention(q.data(), k.data(), v.data(), out.data(), p, pool());
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * n * n * 64 * 16 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttentionVision)->Arg(784)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

// args: kv length (decode: 1 query, 16 q heads / 8 kv heads x 128, causal)
void BM_AttentionDecode(benchmark::State& state) {
  const int64_t nkv = state.range(0);
  qvl::AttentionParams p;
  p.nq = 1, p.nkv = nkv, p.q_heads = 16, p.kv_heads = 8, p.head_dim = 128;
  p.q_stride = p.out_stride = 2048, p.kv_stride = 1024;
  p.scale = 1.0f / std::sqrt(128.0f), p.causal = true, p.q_pos0 = nkv - 1;
  std::vector<float> q(2048, 0.1f), k(static_cast<size_t>(nkv * 1024), 0.01f), v = k, out(2048);
  for (auto _ : state) qvl::attention(q.data(), k.data(), v.data(), out.data(), p, pool());
  state.counters["KV_GB/s"] = benchmark::Counter(double(nkv) * 1024 * 8 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AttentionDecode)->Arg(512)->Arg(4096)->Arg(16384)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Small(benchmark::State& state) {
  const int64_t rows = 784, dim = 1024, n = rows * dim;
  std::vector<float> x(static_cast<size_t>(n), 0.3f), u = x, out = x, w(dim, 1.0f), b(dim, 0.0f);
  const int which = static_cast<int>(state.range(0));
  for (auto _ : state) {
    switch (which) {
      case 0: qvl::rms_norm(x.data(), w.data(), out.data(), rows, dim, 1e-6f); break;
      case 1: qvl::layer_norm(x.data(), w.data(), b.data(), out.data(), rows, dim, 1e-6f); break;
      case 2: qvl::gelu_tanh(out.data(), n); break;
      case 3: qvl::gelu_erf(out.data(), n); break;
      case 4: qvl::silu_mul(x.data(), u.data(), out.data(), n); break;
      case 5: qvl::add(x.data(), u.data(), out.data(), n); break;
      default: qvl::softmax(out.data(), dim); break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  const char* names[] = {"rms_norm", "layer_norm", "gelu_tanh", "gelu_erf", "silu_mul", "add", "softmax"};
  state.SetLabel(names[which]);
}
BENCHMARK(BM_Small)->DenseRange(0, 6)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
