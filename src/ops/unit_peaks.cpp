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
#include "ops/matmul.h"
#include "ops/neon_matmul_quant.h"
#include "ops/neon_peaks.h"
#include "ops/simd_matmul.h"

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

// The vpmaddubsw loops below are written in assembly on twelve named
// accumulators: GCC 12 kept a copy of each element of an accumulator array
// on the stack, one store per instruction, which held the loop to half of
// vpmaddubsw's rate on Zen 4 (one a cycle; register-only, two).
#define QVL_12_CHAINS(step)                                                                                 \
  step("0") step("1") step("2") step("3") step("4") step("5") step("6") step("7") step("8") step("9") \
      step("10") step("11")
#define QVL_12_OPERANDS \
  "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5), "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), \
      "+x"(c11)

// Runs `iterations` of the assembly `steps` (one per chain, operand 12 the
// constant unsigned bytes, 13 the words of ones) and returns a sum of the
// chains so the loop cannot be dropped.
#define QVL_12_CHAIN_LOOP(steps)                                                                               \
  __m256i c0 = _mm256_set1_epi32(seed), c1 = _mm256_set1_epi32(seed + 1), c2 = _mm256_set1_epi32(seed + 2),     \
          c3 = _mm256_set1_epi32(seed + 3), c4 = _mm256_set1_epi32(seed + 4), c5 = _mm256_set1_epi32(seed + 5), \
          c6 = _mm256_set1_epi32(seed + 6), c7 = _mm256_set1_epi32(seed + 7), c8 = _mm256_set1_epi32(seed + 8), \
          c9 = _mm256_set1_epi32(seed + 9), c10 = _mm256_set1_epi32(seed + 10),                              \
          c11 = _mm256_set1_epi32(seed + 11);                                                                 \
  const __m256i a = _mm256_set1_epi32(0x01020304 + seed), ones = _mm256_set1_epi16(1);                       \
  for (int64_t it = 0; it < iterations; ++it) __asm__(QVL_12_CHAINS(steps) : QVL_12_OPERANDS : "x"(a), "x"(ones)); \
  const __m256i s = _mm256_add_epi32(                                                                         \
      _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),                  \
                       _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7))),                 \
      _mm256_add_epi32(_mm256_add_epi32(c8, c9), _mm256_add_epi32(c10, c11)));                                \
  volatile int sink = _mm256_extract_epi32(s, 0);                                                             \
  (void)sink

// vpmaddubsw ymm: 16 lanes × 2 byte products (unsigned × signed, summed
// in 16 bits) = 32 multiply-adds: the int8 unit of an AVX2 CPU without VNNI.
// Each chain feeds its 16-bit sums back as the signed bytes.
__attribute__((target("avx2"))) double MaddubsLoop(int64_t iterations, int seed) {
#define QVL_STEP(i) "vpmaddubsw %" i ", %12, %" i "\n\t"
  QVL_12_CHAIN_LOOP(QVL_STEP);
#undef QVL_STEP
  return double(iterations) * 12 * 32 * 2;
}

// vpmaddubsw ymm then vpmaddwd ymm by ones (the 16-bit pair sums widened to
// 32 bits): the sequence that sums byte products exactly where two 16-bit
// pair sums may overflow (simd_matmul_quant.cpp, q8). 32 multiply-adds a pair.
__attribute__((target("avx2"))) double MaddubsMaddLoop(int64_t iterations, int seed) {
#define QVL_STEP(i) "vpmaddubsw %" i ", %12, %" i "\n\tvpmaddwd %13, %" i ", %" i "\n\t"
  QVL_12_CHAIN_LOOP(QVL_STEP);
#undef QVL_STEP
  return double(iterations) * 12 * 32 * 2;
}
#undef QVL_12_CHAIN_LOOP
#undef QVL_12_CHAINS
#undef QVL_12_OPERANDS

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
// tiles (tmm4-7), the shape of a 32 × 32 output block. AmxTiles configures
// the calling thread (a thread may run tile instructions only after its own
// ldtilecfg). Not GCC's _tile_loadconfig: its asm operand is the first 8
// bytes of the configuration, so the compiler may drop the stores of the
// tile shapes before it, and ldtilecfg then faults on a zero-row config
// (seen with GCC 12 -O2 on a Xeon with AMX: SIGSEGV in qvl bench).
amx::TileConfig PeakTileConfig() {
  amx::TileConfig cfg;
  for (int t = 0; t < amx::kTiles; ++t) cfg.set(t, 16, 64);
  return cfg;
}

void LoadSources(amx::AmxTiles& tiles) {
  alignas(64) static const uint8_t kSource[16 * 64] = {};  // zeros: the loop measures rate, not values
  tiles.zero<0>();
  tiles.zero<1>();
  tiles.zero<2>();
  tiles.zero<3>();
  tiles.load<4>(kSource, 64);
  tiles.load<5>(kSource, 64);
  tiles.load<6>(kSource, 64);
  tiles.load<7>(kSource, 64);
}

// tdpbf16ps: 16 × 16 outputs × 32 bf16 products = 8192 multiply-adds.
double AmxBf16Loop(int64_t iterations, int) {
  amx::AmxTiles tiles(PeakTileConfig());
  LoadSources(tiles);
  for (int64_t it = 0; it < iterations; ++it) {
    tiles.dpbf16ps<0, 4, 6>();
    tiles.dpbf16ps<1, 4, 7>();
    tiles.dpbf16ps<2, 5, 6>();
    tiles.dpbf16ps<3, 5, 7>();
  }
  return double(iterations) * 4 * 8192 * 2;
}

// tdpbssd: 16 × 16 outputs × 64 int8 products = 16384 multiply-adds.
double AmxInt8Loop(int64_t iterations, int) {
  amx::AmxTiles tiles(PeakTileConfig());
  LoadSources(tiles);
  for (int64_t it = 0; it < iterations; ++it) {
    tiles.dpbssd<0, 4, 6>();
    tiles.dpbssd<1, 4, 7>();
    tiles.dpbssd<2, 5, 6>();
    tiles.dpbssd<3, 5, 7>();
  }
  return double(iterations) * 4 * 16384 * 2;
}
#endif

}  // namespace

double measure_fma_peak_gflops(ThreadPool& pool, double seconds) { return measure_peak(pool, seconds, FmaLoop); }

double measure_unit_peak(ThreadPool& pool, MatmulUnit unit, double seconds) {
#if QVL_X86
  const CpuFeatures& f = cpu_features();
  switch (unit) {
    case MatmulUnit::FmaF32: return measure_peak(pool, seconds, FmaLoop);
    case MatmulUnit::Int8Dot:
      return f.avx512_vnni ? measure_peak(pool, seconds, VnniZmmLoop)
             : f.avx_vnni  ? measure_peak(pool, seconds, VnniYmmLoop)
                           : 0;
    case MatmulUnit::Int16Madd: return __builtin_cpu_supports("avx2") ? measure_peak(pool, seconds, MaddubsLoop) : 0;
    case MatmulUnit::Bf16Dot: return f.avx512_bf16 ? measure_peak(pool, seconds, Bf16DotLoop) : 0;
    case MatmulUnit::AmxInt8:
      return f.amx_int8 && amx_tile_state_granted() ? measure_peak(pool, seconds, AmxInt8Loop) : 0;
    case MatmulUnit::AmxBf16:
      return f.amx_bf16 && amx_tile_state_granted() ? measure_peak(pool, seconds, AmxBf16Loop) : 0;
  }
  return 0;
#elif defined(__aarch64__)
  // The int8 unit is the instruction the q8/q4 GEMM runs (neon_matmul_quant.h).
  switch (unit) {
    case MatmulUnit::FmaF32: return measure_peak(pool, seconds, FmaLoop);
    case MatmulUnit::Int8Dot:
      switch (neon::int8_kernel(simd::kSmallM)) {
        case neon::Int8Kernel::Smmla: return measure_peak(pool, seconds, neon::smmla_loop);
        case neon::Int8Kernel::Sdot: return measure_peak(pool, seconds, neon::sdot_loop);
        case neon::Int8Kernel::None: return 0;
      }
      return 0;
    case MatmulUnit::Bf16Dot: return cpu_features().arm_bf16 ? measure_peak(pool, seconds, neon::bfmmla_loop) : 0;
    default: return 0;
  }
#else
  return unit == MatmulUnit::FmaF32 ? measure_peak(pool, seconds, FmaLoop) : 0;
#endif
}

double measure_maddubs_madd_peak_gops(ThreadPool& pool, double seconds) {
#if QVL_X86
  if (__builtin_cpu_supports("avx2")) return measure_peak(pool, seconds, MaddubsMaddLoop);
#endif
  (void)pool, (void)seconds;
  return 0;
}

UnitPeaks measure_unit_peaks(ThreadPool& pool, double seconds_each) {
  UnitPeaks p;
  p.fma_f32_gflops = measure_unit_peak(pool, MatmulUnit::FmaF32, seconds_each);
#if QVL_X86
  const CpuFeatures& f = cpu_features();
  p.int8_dot_gops = measure_unit_peak(pool, MatmulUnit::Int8Dot, seconds_each);
  p.int8_dot_instruction = f.avx512_vnni ? "vpdpbusd zmm (AVX512-VNNI)"
                           : f.avx_vnni  ? "vpdpbusd ymm (AVX-VNNI)"
                                         : "none";
  p.bf16_dot_gflops = measure_unit_peak(pool, MatmulUnit::Bf16Dot, seconds_each);
  p.amx_bf16_gflops = measure_unit_peak(pool, MatmulUnit::AmxBf16, seconds_each);
  p.amx_int8_gops = measure_unit_peak(pool, MatmulUnit::AmxInt8, seconds_each);
#elif defined(__aarch64__)
  p.int8_dot_gops = measure_unit_peak(pool, MatmulUnit::Int8Dot, seconds_each);
  const neon::Int8Kernel int8 = neon::int8_kernel(simd::kSmallM);
  p.int8_dot_instruction = int8 == neon::Int8Kernel::Smmla ? "SMMLA (FEAT_I8MM)"
                           : int8 == neon::Int8Kernel::Sdot ? "SDOT (FEAT_DotProd)"
                                                            : "none";
  p.bf16_dot_gflops = measure_unit_peak(pool, MatmulUnit::Bf16Dot, seconds_each);
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
#elif defined(__aarch64__)
  if (!cpu_features().arm_bf16) return 0;
  ThreadPool one(1);
  double fma = 0, bf16 = 0;  // as on x86: interleaved, best of each
  for (int round = 0; round < 2; ++round) {
    fma = std::max(fma, measure_peak(one, seconds_each / 2, FmaLoop));
    bf16 = std::max(bf16, measure_peak(one, seconds_each / 2, neon::bfmmla_loop));
  }
  return fma > 0 ? bf16 / fma : 0;
#else
  (void)seconds_each;
  return 0;
#endif
}

}  // namespace qvl
