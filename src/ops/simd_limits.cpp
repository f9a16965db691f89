// Machine-limit probes (see machine_limits.h), compiled per SIMD target.
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_limits.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ops/machine_limits.h"
#include "util/error.h"
#include "util/huge_pages.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Independent chains enough to cover FMA latency (4) x ports (2) twice; 12
// where the target has 16 vector registers: with 16 chains and the two
// constants GCC spilled three chains of the AVX2 loop, whose store and
// reload each FMA then waited for, and the AVX2 peak read low.
// Returns the sum so the compiler cannot drop the loop; flops via *flops.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3
constexpr int kFmaChains = 12;
#else
constexpr int kFmaChains = 16;
#endif

float FmaLoop(int64_t iterations, float seed, double* flops) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  V a[kFmaChains];
  for (int i = 0; i < kFmaChains; ++i) a[i] = hn::Set(d, seed + 0.001f * i);
  const V mul = hn::Set(d, 0.9999999f), add = hn::Set(d, 1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kFmaChains; ++i) a[i] = hn::MulAdd(a[i], mul, add);
  }
  V s = a[0];
  for (int i = 1; i < kFmaChains; ++i) s = hn::Add(s, a[i]);
  *flops = double(iterations) * kFmaChains * 2 * static_cast<double>(hn::Lanes(d));
  return hn::GetLane(s);
}

// Three read loops, as each reads the most on different machines. Plain: one
// add per 64-byte load. Shifted: a shift and a mask before the add, as a
// kernel unpacking its weights does; on a shared Zen 5 VM it read 1.22-1.31x
// the plain loop (3 runs of 15 alternating passes). Paged: shifted, plus a
// prefetch of each 4 KB page's start 4 KB ahead, as the q8/q4 decode kernel
// does (simd_matmul_quant.cpp: PrefetchPageStart), which then read more than
// both. A probe of fewer loops would flatter every kernel measured against it.
template <bool kShifted, bool kPaged>
int64_t ReadSum(const float* p, int64_t n) {
  const hn::ScalableTag<int32_t> d;
  const hn::RebindToFloat<decltype(d)> df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const auto mask = hn::Set(d, 0x0f0f0f0f);
  auto word = [&](int64_t i) {
    const auto v = hn::BitCast(d, hn::Load(df, p + i));
    return kShifted ? hn::And(hn::ShiftRight<1>(v), mask) : v;
  };
  constexpr int64_t kPageFloats = 4096 / sizeof(float);
  auto a0 = hn::Zero(d), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * N <= n; i += 4 * N) {
    // Into L2 (locality 2 = prefetcht1 on x86), as the kernel's.
    if (kPaged && i % kPageFloats == 0) __builtin_prefetch(p + i + kPageFloats, 0, 2);
    a0 = hn::Add(a0, word(i));
    a1 = hn::Add(a1, word(i + N));
    a2 = hn::Add(a2, word(i + 2 * N));
    a3 = hn::Add(a3, word(i + 3 * N));
  }
  int64_t s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) s += static_cast<int64_t>(p[i] > 0);
  return s;
}

int64_t ReadSumPlain(const float* p, int64_t n) { return ReadSum<false, false>(p, n); }
int64_t ReadSumShifted(const float* p, int64_t n) { return ReadSum<true, false>(p, n); }
int64_t ReadSumPaged(const float* p, int64_t n) { return ReadSum<true, true>(p, n); }

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qvl {

HWY_EXPORT(FmaLoop);
HWY_EXPORT(ReadSumPlain);
HWY_EXPORT(ReadSumShifted);
HWY_EXPORT(ReadSumPaged);
HWY_EXPORT(TargetName);

const char* simd_target_name() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

double fma_loop_flops(int64_t iterations, float seed) {
  double flops = 0;
  volatile float sink = HWY_DYNAMIC_DISPATCH(FmaLoop)(iterations, seed, &flops);
  (void)sink;
  return flops;
}

std::shared_ptr<float> bandwidth_buffer(ThreadPool& pool, size_t n) {
  std::shared_ptr<float> buf =
      std::static_pointer_cast<float>(allocate_huge_pages(n * sizeof(float), "the read bandwidth probe"));
  // Touch every page from the thread that will read it.
  const int64_t chunk = 1 << 16;
  pool.parallel_for((static_cast<int64_t>(n) + chunk - 1) / chunk, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b * chunk; i < std::min<int64_t>(e * chunk, static_cast<int64_t>(n)); ++i)
      buf.get()[i] = 1e-9f * float(i & 1023);
  });
  return buf;
}

double measure_read_bandwidth_gbs(ThreadPool& pool, size_t bytes, int passes) {
  const size_t n = bytes / sizeof(float);
  return measure_read_bandwidth_gbs(pool, bandwidth_buffer(pool, n).get(), n, passes);
}

double measure_read_bandwidth_gbs(ThreadPool& pool, const float* buf, size_t n, int passes) {
  const int64_t chunk = 1 << 16;
  const int64_t chunks = static_cast<int64_t>(n) / chunk;
  auto pass = [&](int loop) {
    std::atomic<int64_t> sink{0};
    auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(chunks, [&](int64_t b, int64_t e, int) {
      const float* from = buf + b * chunk;
      const int64_t count = (e - b) * chunk;
      sink += loop == 0   ? HWY_DYNAMIC_DISPATCH(ReadSumPlain)(from, count)
              : loop == 1 ? HWY_DYNAMIC_DISPATCH(ReadSumShifted)(from, count)
                          : HWY_DYNAMIC_DISPATCH(ReadSumPaged)(from, count);
    });
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return double(chunks * chunk) * sizeof(float) / dt / 1e9;
  };
  double best = 0;
  for (int p = 0; p < passes; ++p) best = std::max({best, pass(0), pass(1), pass(2)});
  return best;
}

}  // namespace qvl
#endif
