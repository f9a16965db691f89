// Prints, as JSON, this machine's limits (2-thread FP32 FMA peak, read
// bandwidth over 1 GB) and each ops kernel at the model's shapes as a
// fraction of those limits, all measured in the same run. Median of repeats,
// or with --best the fastest repeat (the limits are best-of passes too, so on
// a machine shared with other jobs --best compares like with like).
// GEMM rows also give the fraction of the peak of the unit their kernel runs
// on (matmul_kernel(): FP32 FMA, vpdpbusd, vpmaddubsw, AMX), re-measured
// before each row; vpmaddubsw rows add the vpmaddubsw + vpmaddwd pair peak,
// the sequence the q8 kernel needs (measure_maddubs_madd_peak_gops).
//
// --target NAME runs as QVL_SIMD_TARGET=NAME would (the benchmark re-executes
// itself with it set): every kernel and probe as an older CPU runs them (e.g. AVX2
// on an AVX-512 machine: 256-bit FMA peak, the vpmaddubsw kernels and peak).
//
//   ops_report [--threads N] [--quick] [--best] [--target NAME]
//              [--only gemm|qgemm|gemv|attention|small|error]...
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simd_target_option.h"

#include "ops/machine_limits.h"
#include "ops/matmul.h"
#include "ops/ops.h"

namespace {

using qvl::ThreadPool;
using qvl::WeightFormat;
using qvl::WeightMatrix;
using Clock = std::chrono::steady_clock;

// Median (or, with best, minimum) seconds of `reps` runs of fn (after one warm-up).
double time_seconds(int reps, bool best, const std::function<void(int)>& fn) {
  fn(0);
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    fn(r + 1);
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return best ? t.front() : t[t.size() / 2];
}

std::vector<uint16_t> random_bf16(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = qvl::f32_to_bf16(dist(rng));
  return v;
}

std::vector<float> random_f32(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

// Each figure is divided by the limit measured right before it (the machine
// is shared and its load drifts within a run); the run-wide limits are
// reported too.
struct Report {
  ThreadPool* pool = nullptr;
  bool best = false;  // time = fastest repeat instead of the median
  double seconds(int reps, const std::function<void(int)>& fn) const { return time_seconds(reps, best, fn); }
  std::shared_ptr<float> bw_buf;  // > caches, touched once, on the weights' 2 MB pages
  size_t bw_floats = 0;
  double peak_gflops = 0, bw_gbs = 0;
  nlohmann::json rows = nlohmann::json::array();
  double local_peak() { return qvl::measure_fma_peak_gflops(*pool, 0.1); }
  // The row's unit: its name, its peak and the row's fraction of it (and for
  // vpmaddubsw, of the vpmaddubsw + vpmaddwd pair peak), measured now.
  nlohmann::json unit_fields(const qvl::MatmulKernel& kernel, double gops, double fma_peak) {
    nlohmann::json f = {{"matmul_kernel", kernel.name}, {"unit", qvl::matmul_unit_name(kernel.unit)}};
    const double peak = kernel.unit == qvl::MatmulUnit::FmaF32 ? fma_peak
                                                                : qvl::measure_unit_peak(*pool, kernel.unit, 0.1);
    f["unit_peak_gops"] = peak;
    if (peak > 0) f["fraction_of_unit_peak"] = gops / peak;
    if (kernel.unit == qvl::MatmulUnit::Int16Madd) {
      const double pair = qvl::measure_maddubs_madd_peak_gops(*pool, 0.1);
      f["maddubs_madd_peak_gops"] = pair;
      if (pair > 0) f["fraction_of_maddubs_madd_peak"] = gops / pair;
    }
    return f;
  }
  double local_bw() { return qvl::measure_read_bandwidth_gbs(*pool, bw_buf.get(), bw_floats, 2); }
  void flops(const std::string& name, double flop, double sec, double peak, nlohmann::json extra = nlohmann::json::object()) {
    double g = flop / sec / 1e9;
    nlohmann::json r = {{"kernel", name}, {"ms", sec * 1e3}, {"gflops", g}, {"fma_peak_gflops", peak},
                        {"fraction_of_fma_peak", g / peak}};
    r.update(extra);
    rows.push_back(r);
    std::fprintf(stderr, "%-44s %9.3f ms %8.1f GFLOP/s %5.1f%% of FMA peak %.0f", name.c_str(), sec * 1e3, g,
                 100 * g / peak, peak);
    if (r.value("unit", "fma_f32") != "fma_f32" && r.contains("fraction_of_unit_peak"))
      std::fprintf(stderr, ", %.1f%% of %s peak %.0f", 100 * r["fraction_of_unit_peak"].get<double>(),
                   r["unit"].get<std::string>().c_str(), r["unit_peak_gops"].get<double>());
    if (r.contains("fraction_of_maddubs_madd_peak"))
      std::fprintf(stderr, ", %.1f%% of pair peak %.0f", 100 * r["fraction_of_maddubs_madd_peak"].get<double>(),
                   r["maddubs_madd_peak_gops"].get<double>());
    std::fprintf(stderr, "\n");
  }
  void bytes(const std::string& name, double b, double sec, double bw, nlohmann::json extra = nlohmann::json::object()) {
    double g = b / sec / 1e9;
    nlohmann::json r = {{"kernel", name}, {"ms", sec * 1e3}, {"gbs", g}, {"read_bw_gbs", bw}, {"fraction_of_read_bw", g / bw}};
    r.update(extra);
    rows.push_back(r);
    std::fprintf(stderr, "%-44s %9.3f ms %8.1f GB/s    %5.1f%% of read bw %.1f\n", name.c_str(), sec * 1e3, g,
                 100 * g / bw, bw);
  }
};

std::string shape(const char* fmt, int64_t m, int64_t n, int64_t k) {
  return std::string(fmt) + " m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

// Prefill GEMM: FLOP-bound, one weight matrix (it may sit in cache: fine).
double gemm(Report& rep, ThreadPool& pool, WeightFormat f, int64_t m, int64_t n, int64_t k, int reps,
            const char* label = nullptr) {
  auto src = random_bf16(n * k, 1);
  WeightMatrix w = f == WeightFormat::BF16 ? WeightMatrix::view_bf16(src.data(), n, k)
                                           : WeightMatrix::from_bf16(src.data(), n, k, f, &pool);
  auto x = random_f32(m * k, 2);
  std::vector<float> y(static_cast<size_t>(m * n));
  double peak = rep.local_peak();
  double s = rep.seconds(reps, [&](int) { qvl::matmul(x.data(), m, w, nullptr, y.data(), pool); });
  nlohmann::json extra = {{"threads", pool.size()}};
  extra.update(rep.unit_fields(qvl::matmul_kernel(w, m), 2.0 * m * n * k / s / 1e9, peak));
  rep.flops(label ? label : "matmul " + shape(qvl::weight_format_name(f), m, n, k), 2.0 * m * n * k, s, peak, extra);
  return s;
}

// Prefill GEMM with bf16 weights in MatmulPrecision::Fast (x rounded to bf16,
// AVX512-BF16): effective GFLOP/s (2mnk/t) against the FP32 FMA peak, whose
// double is the vdpbf16ps peak. Without AVX512-BF16 the row says so and times
// the exact path it falls back to.
void gemm_fast(Report& rep, ThreadPool& pool, int64_t m, int64_t n, int64_t k, int reps) {
  auto src = random_bf16(n * k, 1);
  WeightMatrix w = WeightMatrix::view_bf16(src.data(), n, k);
  w.set_precision(qvl::MatmulPrecision::Fast);
  auto x = random_f32(m * k, 2);
  std::vector<float> y(static_cast<size_t>(m * n));
  double peak = rep.local_peak();
  double s = rep.seconds(reps, [&](int) { qvl::matmul(x.data(), m, w, nullptr, y.data(), pool); });
  const bool fast = qvl::matmul_fast_bf16_supported();
  rep.flops(shape(fast ? "matmul bf16 fast" : "matmul bf16 fast (no AVX512-BF16: exact)", m, n, k), 2.0 * m * n * k, s,
            peak, {{"threads", pool.size()}, {"precision", "fast"}, {"avx512_bf16", fast},
                   {"fraction_of_bf16_dot_peak", 2.0 * m * n * k / s / 1e9 / (2 * peak)}});
}

// Decode GEMV: bandwidth-bound. Cycles through enough copies of the matrix
// that they cannot stay in the caches.
double gemv(Report& rep, ThreadPool& pool, WeightFormat f, int64_t m, int64_t n, int64_t k, int reps,
            double base_ms = 0) {
  auto src = random_bf16(n * k, 3);
  size_t one = static_cast<size_t>(n * k) * (f == WeightFormat::F32 ? 4 : f == WeightFormat::BF16 ? 2 : 1);
  int copies = static_cast<int>(std::max<size_t>(1, (size_t(256) << 20) / std::max<size_t>(one, 1)));
  copies = std::min(copies, 64);
  std::vector<std::vector<uint16_t>> srcs;
  std::vector<WeightMatrix> ws;
  for (int c = 0; c < copies; ++c) {
    if (f == WeightFormat::BF16) {
      srcs.push_back(src);
      ws.push_back(WeightMatrix::view_bf16(srcs.back().data(), n, k));
    } else {
      ws.push_back(WeightMatrix::from_bf16(src.data(), n, k, f, &pool));
    }
  }
  auto x = random_f32(m * k, 4);
  std::vector<float> y(static_cast<size_t>(m * n));
  int calls = std::max(copies, 8);
  double bw = rep.local_bw();
  double s = rep.seconds(reps, [&](int) {
               for (int c = 0; c < calls; ++c) qvl::matmul(x.data(), m, ws[c % copies], nullptr, y.data(), pool);
             }) / calls;
  nlohmann::json extra = {{"bytes", ws[0].bytes()}};
  if (base_ms > 0) extra["time_vs_m1"] = s * 1e3 / base_ms;
  rep.bytes("matmul " + shape(qvl::weight_format_name(f), m, n, k), double(ws[0].bytes()), s, bw, extra);
  return s * 1e3;
}

// A Fast attention row's kernel fields: on the AMX unit, the tdpbf16ps
// peak measured now and the row's fraction of it (every flop counted, the
// softmax between the products included).
nlohmann::json attention_unit_fields(ThreadPool& pool, const std::string& kernel, double gflops) {
  nlohmann::json f = {{"attention_kernel", kernel}};
  if (kernel.find("AMX") == std::string::npos) return f;
  const double amx = qvl::measure_unit_peak(pool, qvl::MatmulUnit::AmxBf16, 0.1);
  f["unit"] = qvl::matmul_unit_name(qvl::MatmulUnit::AmxBf16);
  f["unit_peak_gops"] = amx;
  if (amx > 0) f["fraction_of_unit_peak"] = gflops / amx;
  return f;
}

// Vision's full attention over n patches (16 heads of 64), Exact (unless
// fast_only) and, where it runs another kernel, Fast (bf16 products, or
// int8 Q·Kᵀ and P·V; against the bf16 dot peak, taken as twice the FMA one
// as in the bf16 GEMM rows, and on AMX against the unit's peak too).
void attention_vision(Report& rep, ThreadPool& pool, int64_t n, int reps, bool fast_only = false) {
  qvl::AttentionParams p;
  p.nq = p.nkv = n, p.q_heads = p.kv_heads = 16, p.head_dim = 64;
  p.q_stride = p.kv_stride = p.out_stride = 16 * 64;
  p.scale = 0.125f;
  auto q = random_f32(n * 1024, 5), k = random_f32(n * 1024, 6), v = random_f32(n * 1024, 7);
  std::vector<float> out(q.size());
  for (qvl::MatmulPrecision precision : {qvl::MatmulPrecision::Exact, qvl::MatmulPrecision::Fast}) {
    if (fast_only && precision == qvl::MatmulPrecision::Exact) continue;
    p.precision = precision;
    const std::string kernel = qvl::attention_kernel_name(p);
    if (precision == qvl::MatmulPrecision::Fast && kernel.find("f32 FMA") != std::string::npos) break;
    double peak = rep.local_peak();
    double s = rep.seconds(reps, [&](int) { qvl::attention(q.data(), k.data(), v.data(), out.data(), p, pool); });
    const double flop = 4.0 * n * n * 64 * 16;
    nlohmann::json extra = attention_unit_fields(pool, kernel, flop / s / 1e9);
    if (precision == qvl::MatmulPrecision::Fast) extra["fraction_of_bf16_dot_peak"] = flop / s / 1e9 / (2 * peak);
    // int8 Q·Kᵀ and P·V (int8_attention.h, vision calls have no causal
    // mask): all the flops at the int8 dot peak, 4x FMA's (vpdpbusd: 64
    // multiply-adds an instruction against vfmadd231ps's 16).
    if (kernel.find("vpdpbusd") != std::string::npos)
      extra["fraction_of_int8_dot_peak"] = flop / s / 1e9 / (4.0 * peak);
    rep.flops(std::string("attention vision ") + qvl::matmul_precision_name(precision) + " n=" + std::to_string(n) +
                  " 16x64",
              flop, s, peak, extra);
  }
}

// Fast prefill attention over a prompt of n tokens in one call: causal, 16
// query heads sharing 8 kv heads of 128 (the text model's), the flops of
// the n(n+1)/2 visible pairs only. Not run where Fast falls to f32 FMA.
void attention_prefill(Report& rep, ThreadPool& pool, int64_t n, int reps) {
  qvl::AttentionParams p;
  p.nq = p.nkv = n, p.q_heads = 16, p.kv_heads = 8, p.head_dim = 128;
  p.q_stride = p.out_stride = 16 * 128, p.kv_stride = 8 * 128;
  p.scale = 1.0f / std::sqrt(128.0f), p.causal = true, p.q_pos0 = 0;
  p.precision = qvl::MatmulPrecision::Fast;
  const std::string kernel = qvl::attention_kernel_name(p);
  if (kernel.find("f32 FMA") != std::string::npos) return;
  auto q = random_f32(n * 2048, 11), k = random_f32(n * 1024, 12), v = random_f32(n * 1024, 13);
  std::vector<float> out(q.size());
  double peak = rep.local_peak();
  double s = rep.seconds(reps, [&](int) { qvl::attention(q.data(), k.data(), v.data(), out.data(), p, pool); });
  const double flop = 4.0 * 128 * 16 * (double(n) * (n + 1) / 2);
  nlohmann::json extra = attention_unit_fields(pool, kernel, flop / s / 1e9);
  extra["fraction_of_bf16_dot_peak"] = flop / s / 1e9 / (2 * peak);
  rep.flops("attention prefill Fast n=" + std::to_string(n) + " 16q/8kv x128", flop, s, peak, extra);
}

void attention_decode(Report& rep, ThreadPool& pool, int64_t nkv, int reps) {
  qvl::AttentionParams p;
  p.nq = 1, p.nkv = nkv, p.q_heads = 16, p.kv_heads = 8, p.head_dim = 128;
  p.q_stride = p.out_stride = 16 * 128, p.kv_stride = 8 * 128;
  p.scale = 1.0f / std::sqrt(128.0f), p.causal = true, p.q_pos0 = nkv - 1;
  // Several caches so the KV does not stay in L3 between calls.
  int copies = static_cast<int>(std::max<int64_t>(1, (int64_t(128) << 20) / (nkv * 1024 * 8)));
  std::vector<std::vector<float>> ks, vs;
  for (int c = 0; c < copies; ++c) ks.push_back(random_f32(nkv * 1024, 8 + c)), vs.push_back(random_f32(nkv * 1024, 9 + c));
  auto q = random_f32(16 * 128, 10);
  std::vector<float> out(q.size());
  int calls = std::max(copies, 8);
  double bw = rep.local_bw();
  double s = rep.seconds(reps, [&](int) {
               for (int c = 0; c < calls; ++c)
                 qvl::attention(q.data(), ks[c % copies].data(), vs[c % copies].data(), out.data(), p, pool);
             }) / calls;
  rep.bytes("attention decode nkv=" + std::to_string(nkv) + " 16q/8kv x128", double(nkv) * 1024 * 8, s, bw);
}

// Error of q8/q4 results against the f32-weight result on random data at a
// model shape: relative L2 over all outputs, and the worst output error
// relative to the outputs' RMS.
void quant_error(nlohmann::json& out, ThreadPool& pool, int64_t m, int64_t n, int64_t k) {
  auto src = random_bf16(n * k, 21);
  auto x = random_f32(m * k, 22);
  std::vector<float> ref(static_cast<size_t>(m * n)), y(ref.size());
  qvl::matmul(x.data(), m, WeightMatrix::from_bf16(src.data(), n, k, WeightFormat::F32, &pool), nullptr, ref.data(), pool);
  for (auto f : {WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
    WeightMatrix w = WeightMatrix::from_bf16(src.data(), n, k, f, &pool);
    qvl::matmul(x.data(), m, w, nullptr, y.data(), pool);
    double num = 0, den = 0, worst = 0;
    for (size_t i = 0; i < y.size(); ++i) num += double(y[i] - ref[i]) * (y[i] - ref[i]), den += double(ref[i]) * ref[i];
    double rms = std::sqrt(den / double(y.size()));
    for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(double(y[i]) - ref[i]) / rms);
    out.push_back({{"format", qvl::weight_format_name(f)}, {"m", m}, {"n", n}, {"k", k},
                   {"rel_l2_error", std::sqrt(num / den)}, {"max_error_over_rms", worst}});
    std::fprintf(stderr, "error %-4s m=%ld n=%ld k=%ld: relative L2 %.3g, max/rms %.3g\n", qvl::weight_format_name(f),
                 long(m), long(n), long(k), std::sqrt(num / den), worst);
  }
}

// Error of MatmulPrecision::Fast (x rounded to bf16) against the exact
// product with the same bf16 weights, at a prefill shape (m > 8).
void fast_error(nlohmann::json& out, ThreadPool& pool, int64_t m, int64_t n, int64_t k) {
  auto src = random_bf16(n * k, 23);
  auto x = random_f32(m * k, 24);
  std::vector<float> ref(static_cast<size_t>(m * n)), y(ref.size());
  WeightMatrix w = WeightMatrix::view_bf16(src.data(), n, k);
  qvl::matmul(x.data(), m, w, nullptr, ref.data(), pool);
  w.set_precision(qvl::MatmulPrecision::Fast);
  qvl::matmul(x.data(), m, w, nullptr, y.data(), pool);
  double num = 0, den = 0, worst = 0;
  for (size_t i = 0; i < y.size(); ++i) num += double(y[i] - ref[i]) * (y[i] - ref[i]), den += double(ref[i]) * ref[i];
  const double rms = std::sqrt(den / double(y.size()));
  for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(double(y[i]) - ref[i]) / rms);
  out.push_back({{"format", "bf16 fast"}, {"avx512_bf16", qvl::matmul_fast_bf16_supported()}, {"m", m}, {"n", n},
                 {"k", k}, {"rel_l2_error", std::sqrt(num / den)}, {"max_error_over_rms", worst}});
  std::fprintf(stderr, "error bf16 fast m=%ld n=%ld k=%ld: relative L2 %.3g, max/rms %.3g\n", long(m), long(n), long(k),
               std::sqrt(num / den), worst);
}

void small_kernels(Report& rep, ThreadPool& pool, int reps) {
  const int64_t rows = 784, dim = 1024, n = rows * dim;
  auto x = random_f32(n, 11), w = random_f32(dim, 12), b = random_f32(dim, 13), u = random_f32(n, 14);
  std::vector<float> out(static_cast<size_t>(n)), tmp = x;
  auto run = [&](const char* name, double bytes, const std::function<void()>& fn) {
    // Small kernels run on one thread from cache: reported against the 2-thread DRAM bandwidth for scale only.
    rep.bytes(std::string(name) + " 784x1024 (1 thread)", bytes, rep.seconds(reps, [&](int) { fn(); }), rep.bw_gbs);
  };
  run("rms_norm", 8.0 * n, [&] { qvl::rms_norm(x.data(), w.data(), out.data(), rows, dim, 1e-6f); });
  run("layer_norm", 8.0 * n, [&] { qvl::layer_norm(x.data(), w.data(), b.data(), out.data(), rows, dim, 1e-6f); });
  run("gelu_tanh", 8.0 * n, [&] { std::memcpy(tmp.data(), x.data(), n * 4), qvl::gelu_tanh(tmp.data(), n); });
  run("gelu_erf", 8.0 * n, [&] { std::memcpy(tmp.data(), x.data(), n * 4), qvl::gelu_erf(tmp.data(), n); });
  run("silu_mul", 12.0 * n, [&] { qvl::silu_mul(x.data(), u.data(), out.data(), n); });
  run("add", 12.0 * n, [&] { qvl::add(x.data(), u.data(), out.data(), n); });
  run("softmax (rows of 1024)", 8.0 * n, [&] {
    std::memcpy(tmp.data(), x.data(), n * 4);
    for (int64_t r = 0; r < rows; ++r) qvl::softmax(tmp.data() + r * dim, dim);
  });
  (void)pool;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  bool quick = false, best = false;
  std::vector<std::string> only;  // sections to run; empty: all
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (a == "--quick")
      quick = true;
    else if (a == "--best")
      best = true;
    else if (a == "--only" && i + 1 < argc)
      only.push_back(argv[++i]);
    else if (a == "--target" && i + 1 < argc)
      return qvl::bench::reexec_under_simd_target(argc, argv, i);
    else {
      std::fprintf(stderr,
                   "usage: ops_report [--threads N] [--quick] [--best] [--target NAME] "
                   "[--only gemm|qgemm|gemv|attention|small|error]...\n");
      return 2;
    }
  }
  auto run = [&](const char* section) { return only.empty() || std::find(only.begin(), only.end(), section) != only.end(); };
  ThreadPool pool(threads);
  ThreadPool one(1);
  Report rep;
  rep.pool = &pool;
  rep.best = best;
  rep.bw_floats = (quick ? size_t(256) << 20 : size_t(1) << 30) / sizeof(float);
  rep.bw_buf = qvl::bandwidth_buffer(pool, rep.bw_floats);
  rep.peak_gflops = qvl::measure_fma_peak_gflops(pool);
  rep.bw_gbs = qvl::measure_read_bandwidth_gbs(pool, rep.bw_buf.get(), rep.bw_floats, 5);
  std::fprintf(stderr, "target %s (matmul %s), %d threads: FMA peak %.1f GFLOP/s, read bandwidth %.1f GB/s\n",
               qvl::simd_target_name(), qvl::matmul_simd_target(), pool.size(), rep.peak_gflops, rep.bw_gbs);
  const int reps = quick ? 3 : 7;

  // Prefill / vision GEMM from bf16 weights.
  double speedup = 0;
  if (run("gemm")) {
  double t_many = 0;
  for (int64_t m : {64, 256, 784}) {
    double t = gemm(rep, pool, WeightFormat::BF16, m, 2048, 2048, reps);
    if (m == 256) t_many = t;
  }
  gemm(rep, pool, WeightFormat::BF16, 784, 4096, 1024, reps);
  gemm(rep, pool, WeightFormat::BF16, 256, 6144, 2048, reps);
  gemm(rep, pool, WeightFormat::BF16, 256, 2048, 6144, reps);
  gemm(rep, pool, WeightFormat::F32, 256, 2048, 2048, reps);
  // Exact beside fast at the fast rows' shapes.
  gemm(rep, pool, WeightFormat::BF16, 784, 1024, 4096, reps);
  for (auto [m, n, k] : {std::array<int64_t, 3>{256, 2048, 2048}, {784, 4096, 1024}, {784, 1024, 4096}})
    gemm_fast(rep, pool, m, n, k, reps);
  double t_one = gemm(rep, one, WeightFormat::BF16, 256, 2048, 2048, reps, "matmul bf16 m=256 n=2048 k=2048 (1 thread)");
  speedup = t_one / t_many;
  std::fprintf(stderr, "GEMM bf16 m=256 n=2048 k=2048: %d threads %.2fx faster than 1 thread\n", pool.size(), speedup);
  }

  // Prefill / vision GEMM from q8/q4 weights (integer dot products): text
  // layer (2048 -> 2048), vision MLP (1024 -> 4096), text MLP down (6144 -> 2048).
  if (run("gemm") || run("qgemm")) {
    for (auto f : {WeightFormat::Q8, WeightFormat::Q4})
      for (auto [m, n, k] : {std::array<int64_t, 3>{256, 2048, 2048}, {784, 4096, 1024}, {256, 2048, 6144}})
        gemm(rep, pool, f, m, n, k, reps);
  }

  // Decode GEMV and batched decode.
  if (run("gemv")) {
  for (auto f : {WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4, WeightFormat::F32}) {
    double base = gemv(rep, pool, f, 1, 2048, 2048, reps);
    if (f != WeightFormat::F32)
      for (int64_t m : {2, 4, 8}) gemv(rep, pool, f, m, 2048, 2048, reps, base);
  }
  for (auto f : {WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
    gemv(rep, pool, f, 1, 6144, 2048, reps);
    // The down projection batched: 4 rows of x at k = 6144 are 96 KB, past L1.
    for (int64_t m : {1, 2, 4, 8}) gemv(rep, pool, f, m, 2048, 6144, reps);
  }
  if (!quick) gemv(rep, pool, WeightFormat::BF16, 1, 151936, 2048, 3);
  }

  if (run("attention")) {
    attention_vision(rep, pool, 784, reps);
    attention_vision(rep, pool, 4032, 3, quick);  // a document page: 896x1152 pixels
    attention_prefill(rep, pool, 1024, reps);
    attention_decode(rep, pool, 4096, reps);
  }
  if (run("small")) small_kernels(rep, one, reps);

  nlohmann::json errors = nlohmann::json::array();
  if (run("error")) {
    quant_error(errors, pool, 8, 2048, 2048);
    quant_error(errors, pool, 8, 2048, 6144);
    fast_error(errors, pool, 256, 2048, 2048);
    fast_error(errors, pool, 256, 2048, 6144);
  }
  nlohmann::json out = {{"quantization_error_vs_f32", errors},
                        {"gemm_speedup_vs_1_thread", speedup},
                        {"statistic", best ? "best of repeats" : "median of repeats"},
                        {"simd_target", qvl::simd_target_name()},
                        {"matmul_simd_target", qvl::matmul_simd_target()},
                        {"threads", pool.size()},
                        {"fma_peak_gflops", rep.peak_gflops},
                        {"read_bandwidth_gbs", rep.bw_gbs},
                        {"kernels", rep.rows}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
