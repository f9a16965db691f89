// Peak throughput of each multiply unit (machine_limits.h, UnitPeaks): one
// register-only loop per instruction, independent accumulator chains enough
// to cover latency × ports, no memory traffic. The loops over instructions
// Highway 1.0.3 lacks (vpdpbusd, vdpbf16ps, the AMX tile ops) are hand
// intrinsics in functions compiled for that instruction set and called only
// when cpu_features() says the CPU has it.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "ops/amx_tiles.h"
#include "ops/cpu_features.h"
#include "ops/machine_limits.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define QVL_X86 1
#else
#define QVL_X86 0
#endif

namespace qvl {

// In simd_limits.cpp (Highway, widest target): one thread's FP32 FMA loop.
double fma_loop_flops(int64_t iterations, float seed);

namespace {

// A loop of `iterations` steps that returns the operations it did (a
// multiply-add counts 2); `seed` keeps the compiler from folding it.
using PeakLoop = double (*)(int64_t iterations, int seed);

// Calibrates the iteration count on one thread to about seconds / 4, then
// runs every pool thread together; best of three, in G operations/s.
double measure_peak(ThreadPool& pool, double seconds, PeakLoop loop) {
  using Clock = std::chrono::steady_clock;
  int64_t iters = 1 << 12;
  for (;;) {
    const auto t0 = Clock::now();
    loop(iters, 1);
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    if (dt > seconds / 4 || iters > (int64_t(1) << 40)) {
      iters = static_cast<int64_t>(double(iters) * seconds / std::max(dt, 1e-9)) + 1;
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> ops(static_cast<size_t>(pool.size()), 0.0);
    const auto t0 = Clock::now();
    pool.parallel_for(pool.size(), [&](int64_t b, int64_t e, int t) {
      for (int64_t i = b; i < e; ++i) ops[static_cast<size_t>(t)] += loop(iters, static_cast<int>(i) + 2);
    });
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    double total = 0;
    for (double o : ops) total += o;
    best = std::max(best, total / dt / 1e9);
  }
  return best;
}

double FmaLoop(int64_t iterations, int seed) { return fma_loop_flops(iterations, 1.0f + 0.5f * float(seed)); }

#if QVL_X86
// 12 chains: vpdpbusd/vdpbf16ps latency (5-6 cycles) × 2 ports.
constexpr int kChains = 12;

// vpdpbusd zmm: 16 lanes × 4 byte products = 64 multiply-adds.
__attribute__((target("avx512f,avx512vnni"))) double VnniZmmLoop(int64_t iterations, int seed) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_epi32(seed + i);
  const __m512i a = _mm512_set1_epi32(0x01020304 + seed), b = _mm512_set1_epi32(0x01010101);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  __m512i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_epi32(s, acc[i]);
  volatile int sink = _mm512_reduce_add_epi32(s);
  (void)sink;
  return double(iterations) * kChains * 64 * 2;
}

// vpdpbusd ymm (AVX-VNNI, VEX): 8 lanes × 4 = 32 multiply-adds.
__attribute__((target("avx2,avxvnni"))) double VnniYmmLoop(int64_t iterations, int seed) {
  __m256i acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_epi32(seed + i);
  const __m256i a = _mm256_set1_epi32(0x01020304 + seed), b = _mm256_set1_epi32(0x01010101);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], a, b);
  __m256i s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_epi32(s, acc[i]);
  volatile int sink = _mm256_extract_epi32(s, 0);
  (void)sink;
  return double(iterations) * kChains * 32 * 2;
}

// vdpbf16ps zmm: 16 lanes × 2 bf16 products = 32 multiply-adds.
__attribute__((target("avx512f,avx512bf16"))) double Bf16DotLoop(int64_t iterations, int seed) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(seed + i));
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x33d633d6);
  for (int64_t it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  volatile float sink = _mm512_reduce_add_ps(s);
  (void)sink;
  return double(iterations) * kChains * 32 * 2;
}

// AMX: 4 accumulator tiles (tmm0-3, 16 rows × 64 bytes) fed by 2 × 2 source
// tiles (tmm4-7), the shape of a 32 × 32 output block. Configured by the
// calling thread at each call: a thread may run tile instructions only after
// its own ldtilecfg.
__attribute__((target("amx-tile"))) void ConfigureTiles() {
  amx::TileConfig cfg;
  for (int t = 0; t < amx::kTiles; ++t) cfg.set(t, 16, 64);
  _tile_loadconfig(&cfg);
  alignas(64) static const uint8_t kSource[16 * 64] = {};  // zeros: the loop measures rate, not values
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, kSource, 64);
  _tile_loadd(5, kSource, 64);
  _tile_loadd(6, kSource, 64);
  _tile_loadd(7, kSource, 64);
}

// tdpbf16ps: 16 × 16 outputs × 32 bf16 products = 8192 multiply-adds.
__attribute__((target("amx-tile,amx-bf16"))) double AmxBf16Loop(int64_t iterations, int) {
  ConfigureTiles();
  for (int64_t it = 0; it < iterations; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_release();
  return double(iterations) * 4 * 8192 * 2;
}

// tdpbssd: 16 × 16 outputs × 64 int8 products = 16384 multiply-adds.
__attribute__((target("amx-tile,amx-int8"))) double AmxInt8Loop(int64_t iterations, int) {
  ConfigureTiles();
  for (int64_t it = 0; it < iterations; ++it) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  _tile_release();
  return double(iterations) * 4 * 16384 * 2;
}
#endif

}  // namespace

double measure_fma_peak_gflops(ThreadPool& pool, double seconds) { return measure_peak(pool, seconds, FmaLoop); }

UnitPeaks measure_unit_peaks(ThreadPool& pool, double seconds_each) {
  UnitPeaks p;
  p.fma_f32_gflops = measure_peak(pool, seconds_each, FmaLoop);
#if QVL_X86
  const CpuFeatures& f = cpu_features();
  if (f.avx512_vnni) {
    p.int8_dot_gops = measure_peak(pool, seconds_each, VnniZmmLoop);
    p.int8_dot_instruction = "vpdpbusd zmm (AVX512-VNNI)";
  } else if (f.avx_vnni) {
    p.int8_dot_gops = measure_peak(pool, seconds_each, VnniYmmLoop);
    p.int8_dot_instruction = "vpdpbusd ymm (AVX-VNNI)";
  }
  if (f.avx512_bf16) p.bf16_dot_gflops = measure_peak(pool, seconds_each, Bf16DotLoop);
  if (amx_tile_state_granted()) {
    if (f.amx_bf16) p.amx_bf16_gflops = measure_peak(pool, seconds_each, AmxBf16Loop);
    if (f.amx_int8) p.amx_int8_gops = measure_peak(pool, seconds_each, AmxInt8Loop);
  }
#endif
  return p;
}

double measure_bf16_dot_vs_fma(double seconds_each) {
#if QVL_X86
  if (!cpu_features().avx512_bf16) return 0;
  ThreadPool one(1);
  // Interleaved, best of each: a load that comes and goes on a shared
  // machine then hits both alike.
  double fma = 0, bf16 = 0;
  for (int round = 0; round < 2; ++round) {
    fma = std::max(fma, measure_peak(one, seconds_each / 2, FmaLoop));
    bf16 = std::max(bf16, measure_peak(one, seconds_each / 2, Bf16DotLoop));
  }
  return fma > 0 ? bf16 / fma : 0;
#else
  (void)seconds_each;
  return 0;
#endif
}

}  // namespace qvl
