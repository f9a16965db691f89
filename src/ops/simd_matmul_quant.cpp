// Highway kernels for q8/q4 weights (see simd_matmul.h), every m: x is
// rounded to 8 bits per group (quant::XRow) and each group's exact integer
// dot product is scaled by both scales and summed in f32. Compiled once per
// SIMD target and chosen at run time.
//
// The weights are interleaved by blocks of 16 rows (quant.h), so a thread
// reads one sequential stream and a 64-byte vector holds 4 bytes of each of
// the 16 rows: with AVX-512 VNNI, vpdpbusd multiplies it by 4 x codes
// broadcast to all lanes, lane r accumulating row r; AVX2/AVX-512 without
// VNNI do the same on 8 rows with vpmaddubsw + vpmaddwd; other targets use
// portable Highway code. One block kernel (QBlock*) applies a block of 16
// weight rows to M x rows.
//
// Small m (decode, m <= kSmallM): every block is read once and applied to all
// m rows (memory-bound). Larger m (prefill, vision; compute-bound): threads
// claim tiles of blocks small enough to stay in L2 and apply each tile to x
// in chunks of up to kSmallM rows, with the same block kernels. With VNNI
// the kernel does 8 vpdpbusd (512 multiply-adds) per x row and group for 3
// f32 operations, so it runs at the same speed for 4 to 16 rows per chunk
// (measured on Zen 4): 8 it is, as for decode.
//
// Every output value is computed the same way whatever m is and whichever
// chunk its row falls in (per x row and group: an integer dot product
// started at corr, converted to f32, times sw·sx, added to the row's f32
// accumulator, groups in order), so every output row is bit-identical to the
// same x row multiplied alone (m = 1), for every m.
//
// AVX3_DL (AVX-512 with VNNI) is compiled here only: it is the one target
// whose code differs (the integer dot product), so the other ops files are
// spared the extra compile. Highway 1.1+ also builds AVX3_ZEN4 and AVX3_SPR,
// which include it and take the same kernels (QVL_X86_VNNI).
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_matmul_quant.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/cache_control.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "ops/amx_matmul.h"
#include "ops/cpu_features.h"
#include "ops/neon_matmul_quant.h"
#include "ops/quant.h"
#include "ops/scalar.h"
#include "ops/scratch.h"
#include "ops/simd_matmul.h"
#include "ops/simd_quant.h"
#include "ops/work_pieces.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// x rows quantized (quant::XRow): codes of row i, group g at
// codes + i·row_stride + g·group_stride; scales and corr at [i·srow + g·sgroup].
// corr = -offset · Σ codes removes the offset of unsigned weight codes (VNNI:
// q8 as q + 128, q4 as q + 8; vpmaddubsw: q4). Decode keeps x row-major; the
// GEMM packs each chunk of rows group-major, so a block kernel reads x as one
// sequential stream.
struct XQ {
  const int8_t* codes;
  const float* scales;
  const int32_t* corrs;
  int64_t row_stride, group_stride;  // bytes, for codes
  int64_t srow, sgroup;              // elements, for scales and corrs
  const int8_t* code(int64_t i, int64_t g) const { return codes + i * row_stride + g * group_stride; }
  float scale(int64_t i, int64_t g) const { return scales[i * srow + g * sgroup]; }
  int32_t corr(int64_t i, int64_t g) const { return corrs[i * srow + g * sgroup]; }
};

constexpr int64_t kRB = quant::kBlockRows;
constexpr int64_t kQPrefetchBytes = 4096;
constexpr int64_t kQScalePrefetchBytes = 1024;  // 32 groups of scales ahead

#if HWY_ARCH_X86
// Prefetches (into L2) the 4 KB page that starts within [p, p + bytes), if
// one does: one prefetch per page of weights, not one per line. The hardware
// prefetchers stream a page once a miss in it starts them, but stop at its
// end; a prefetch at each page's start, ahead of the reads, starts them on
// every page in time. A prefetch of every line instead took the place of the
// hardware's and held decode to ~46 GB/s whatever the format. In
// bench/ops_decode_stream on Zen 5 (a few runs each, against the probe of
// the time): per line, q4 0.68-0.75 (44-47 GB/s), q8 0.75-0.81; per 1 KB,
// q4 0.80-0.88, q8 0.90-1.00; per 4 KB page, q4 0.87-0.93 (57-60 GB/s), q8
// 0.96-1.06; per 8 KB (every other page) or none at all, 0.57-0.72. 2, 4 or
// 8 KB ahead: alike.
// The same for the scales read 0.99-1.02 for q4 against 0.97-1.00 with a
// prefetch of every other group's scales (3 alternating runs).
HWY_INLINE void PrefetchPageStart(const uint8_t* p, int64_t bytes) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t page = (a + static_cast<uintptr_t>(bytes) - 1) & ~(kPage - 1);
  if (page >= a) _mm_prefetch(reinterpret_cast<const char*>(page), _MM_HINT_T1);
}
#endif

#if QVL_X86_VNNI
// acc += w (unsigned bytes) · the 4 signed bytes at `four` broadcast to all
// lanes, as vpdpbusd with an embedded broadcast (m32{1to16}): one
// instruction. GCC 12 compiles _mm512_dpbusd_epi32(acc, w,
// _mm512_set1_epi32(x)) to a separate vpbroadcastd, and at m = 1 (decode)
// that is one extra instruction per 64 weight bytes in a loop that is
// instruction-bound on slow cores. Same result either way.
__attribute__((target(HWY_TARGET_STR ",avx512vnni"))) HWY_INLINE __m512i DpbusdBroadcast(__m512i acc, __m512i w,
                                                                                          const int8_t* four) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const int32_t*>(four)));
  return acc;
}

// One block of 16 weight rows against M x rows, written with the bias added
// straight into y (row i at y + i·ldy, the block's first `rows` <= 16 columns;
// bias, when given, holds the block's). Each 64-byte
// unit vector holds 4 bytes of every row, so int32 lane r is row r: vpdpbusd
// multiplies the unsigned weight bytes (q8 flipped to q + 128, q4 nibbles as
// stored, q + 8) by 4 signed x codes broadcast to all lanes, and each lane
// starts at corr to remove the offset. One conversion, scale and FMA per
// x row and group covers all 16 rows.
// kPacked: x is a GEMM chunk of exactly M rows packed group-major (codes
// [group][M][32], scales and corr [group][M]; MatmulQuantGemm), so every x
// address is one pointer per group plus a constant. With a row stride known
// only at run time, 8 rows needed 8 address registers, which GCC spilled to
// vector registers (vmovq) and, short of those, the accumulators to the
// stack: a load and a store around every FMA (perf annotate, a document
// page's vision on Zen 4).
// Highway 1.0.3's AVX3_DL attributes name AVX-VNNI but not AVX512-VNNI
// (which its CPU check for AVX3_DL requires, and MatmulSmallQuant checks
// again): added here, so this function is called, not inlined.
template <int M, bool kQ8, bool kPacked>
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512vnni"))) void QBlockVnni(const quant::View& v, int64_t b,
                                                                                   const XQ& xq, float* y, int64_t ldy,
                                                                                   const float* bias, int64_t rows) {
  const int64_t G = v.groups;
  const int64_t bgb = v.block_group_bytes();
  const uint8_t* codes = v.codes + b * G * bgb;
  const uint16_t* sc = v.scales + b * G * kRB;
  // Every loop over acc is unrolled, so each acc[i] is a register (an index
  // left to run time keeps the array in memory).
  __m512 acc[M];
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0F), flip = _mm512_set1_epi8(static_cast<char>(0x80));
  constexpr int kChains = 8;
  for (int64_t g = 0; g < G; ++g) {
    // The codes, and the scales: a stream of their own.
    PrefetchPageStart(codes + kQPrefetchBytes, bgb);
    PrefetchPageStart(reinterpret_cast<const uint8_t*>(sc + g * kRB) + kQScalePrefetchBytes, kRB * 2);
    const __m512 sw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + g * kRB)));
    // Unit t pairs with x codes 4t..4t+3 of the group: q8 flipped to
    // unsigned, q4 the low nibbles of unit t (t < 4) or the high ones of t - 4.
    auto unit = [&](int t) {
      if (kQ8) return _mm512_xor_si512(_mm512_loadu_si512(codes + t * 64), flip);
      const __m512i raw = _mm512_loadu_si512(codes + (t & 3) * 64);
      return _mm512_and_si512(t < 4 ? raw : _mm512_srli_epi16(raw, 4), low4);
    };
    const int8_t* xg = kPacked ? xq.codes + g * (M * quant::kGroup) : nullptr;
    const float* sg = kPacked ? xq.scales + g * M : nullptr;
    const int32_t* cg = kPacked ? xq.corrs + g * M : nullptr;
    auto code = [&](int i) { return kPacked ? xg + i * quant::kGroup : xq.code(i, g); };
    auto xscale = [&](int i) { return kPacked ? sg[i] : xq.scale(i, g); };
    auto corr = [&](int i) { return kPacked ? cg[i] : xq.corr(i, g); };
    // acc[i] += dot · (sw · sx). Written out at each use, not in a lambda
    // taking acc by reference: that made GCC keep acc in memory, a load and
    // a store around every FMA.
#define QVL_SCALE(i, dot) \
  acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(sw, _mm512_set1_ps(xscale(i))), acc[i])
    // Integer sums are exact, so how the chains are split changes nothing.
    if (M <= 2) {  // two chains per row hide the latency when few rows share the weights
      __m512i w[8];
      for (int t = 0; t < 8; ++t) w[t] = unit(t);
#pragma GCC unroll 2
      for (int i = 0; i < M; ++i) {
        __m512i d0 = _mm512_set1_epi32(corr(i)), d1 = _mm512_setzero_si512();
        for (int t = 0; t < 8; t += 2) {
          d0 = DpbusdBroadcast(d0, w[t], code(i) + 4 * t);
          d1 = DpbusdBroadcast(d1, w[t + 1], code(i) + 4 * t + 4);
        }
        QVL_SCALE(i, _mm512_add_epi32(d0, d1));
      }
    } else {
      // Rows 8 at a time, their chains interleaved so that independent
      // vpdpbusd sit next to each other in the instruction stream, each
      // weight unit made just before its 8 uses (8 accumulators, 8 chains
      // and a unit or two fit the 32 registers). 4 chains only just cover
      // vpdpbusd's latency at one a cycle; 8 made the GEMM 5-15 % faster on
      // Zen 4 (bench/ops_report --only qgemm, one thread, best of repeats:
      // q8 0.56-0.64 of the int8 peak -> 0.65-0.68, q4 0.58-0.66 -> 0.65-0.69).
#pragma GCC unroll 16
      for (int i0 = 0; i0 < M; i0 += kChains) {
        __m512i dot[kChains];
        for (int j = 0; j < kChains; ++j)
          if (i0 + j < M) dot[j] = _mm512_set1_epi32(corr(i0 + j));
        for (int t = 0; t < 8; ++t) {
          const __m512i wt = unit(t);
          for (int j = 0; j < kChains; ++j)
            if (i0 + j < M) dot[j] = DpbusdBroadcast(dot[j], wt, code(i0 + j) + 4 * t);
        }
        for (int j = 0; j < kChains; ++j)
          if (i0 + j < M) QVL_SCALE(i0 + j, dot[j]);
      }
    }
#undef QVL_SCALE
    codes += bgb;
  }
  // Out of the block's buffer and into y with one masked store a row: a
  // scalar copy of 16·M values per block cost 10 % of the kernel's time on a
  // document page's vision (perf, Zen 4). The bias is added to every output,
  // zero where there is none, as before.
  const __mmask16 keep = rows >= kRB ? __mmask16(0xFFFF) : __mmask16((1u << rows) - 1);
  const __m512 bv = bias ? _mm512_maskz_loadu_ps(keep, bias) : _mm512_setzero_ps();
#pragma GCC unroll 16
  for (int i = 0; i < M; ++i) _mm512_mask_storeu_ps(y + i * ldy, keep, _mm512_add_ps(acc[i], bv));
}
#endif

#if QVL_X86_AVX2
// x86 without VNNI: the same lane-per-row scheme on 256-bit vectors (8 rows
// each, two halves per block) with vpmaddubsw (unsigned x signed bytes ->
// saturating 16-bit pair sums) and vpmaddwd by ones (-> 32-bit). No sum may
// saturate: q4 nibbles (<= 15) times codes (<= 127) give pairs <= 3810, and
// the 8 units of a group add to <= 30480 in 16 bits; q8 uses |q| as the
// unsigned side and moves q's sign onto x (pairs <= 2·127·127 = 32258), each
// unit widened to 32 bits at once.
//
// Against issue 32's 0.60 of the vpmaddubsw peak (Zen 4 running the AVX2
// target as a proxy for an AVX2-only CPU; one thread, CPU time, so a shared
// machine's load does not count): q8 reaches 0.24 (113 of 460 GOP/s; 0.49
// of the vpmaddubsw + vpmaddwd pair peak), q4 0.41 (190). The count says
// why q8 cannot reach 0.60. On Zen 4 vpmaddubsw, vpmaddwd, vpsignb,
// vpabsb, vmulps and vfmadd share two pipes (six of one and six of another
// take twice the time of six alone; vpaddw, vpand, vcvtdq2ps, shifts and
// broadcast loads run beside them), as on Intel's ports 0 and 1. Per x row,
// half block and group (256 multiply-adds: 8 vpmaddubsw, 4 cycles at the
// peak) q8 issues 8 vpmaddubsw + 8 vpmaddwd + 8 vpsignb + vmulps + vfmadd
// = 26 there, plus 8 vpabsb per half block and group shared by the chunk's
// 8 rows: 27, at least 13.5 cycles, so at most 0.30 of the peak (measured
// loop: about 15 cycles). Nothing exact takes fewer with vpmaddubsw: two
// of its pair sums overflow int16, so every unit needs its vpmaddwd, and
// x·q needs q's sign per x row. q8 as 16-bit pairs with vpmaddwd alone (16
// + 2 = 18, at most 0.44) measured 0.9-1.1x this kernel in four variants
// (issue 32): not kept. q4 issues 8 vpmaddubsw + vpmaddwd + vmulps +
// vfmadd = 11 (at most 0.73) but its loop takes about 9.7 cycles, not 5.5.
// Its instructions replayed alone on data in L1 (a VM: no cycle counters,
// so CPU time at 3.66 GHz, noisy): the 8 vpbroadcastd of x take 4-5.4
// cycles by themselves, with the vpmaddubsw 4.4-5.9, with the vpaddw
// 5.3-7, and the scale (vmulps, vcvtdq2ps, vfmadd) adds 1.5-2.5. x broadcast
// ahead in memory (vpmaddubsw reading it) was 10-15 % faster there but
// slower in the GEMM, where x grows 8x and streams from L2; both halves per
// x broadcast (4.5 loads per row, half and group instead of 13) and two x
// rows per iteration measured no faster. The AVX3 target, the same ymm
// code with 32 registers, runs q8 1.13x and q4 1.08x faster.
template <int M, bool kQ8>
HWY_INLINE void QBlockMaddubs(const quant::View& v, int64_t b, const XQ& xq, float* out) {
  const int64_t G = v.groups;
  const int64_t bgb = v.block_group_bytes();
  const uint8_t* codes = v.codes + b * G * bgb;
  const uint16_t* sc = v.scales + b * G * kRB;
  __m256 acc[M][2];
  for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  for (int64_t g = 0; g < G; ++g) {
    // As the VNNI kernel. On Zen 5 with --target AVX2 (bench/ops_decode_stream,
    // 3 alternating runs): q4 0.74-0.78 of the probe against 0.50-0.58 with a
    // prefetch of every line, q8 0.84-0.88 against 0.51-0.59.
    PrefetchPageStart(codes + kQPrefetchBytes, bgb);
    PrefetchPageStart(reinterpret_cast<const uint8_t*>(sc + g * kRB) + kQScalePrefetchBytes, kRB * 2);
    for (int h = 0; h < 2; ++h) {
      const __m256 sw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + g * kRB + h * 8)));
      // Unit t of rows 8h..8h+7 (32 bytes); w[t] pairs with x codes 4t..4t+3.
      auto unit = [&](int t) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + (t * kRB + h * 8) * quant::kUnit));
      };
      for (int i = 0; i < M; ++i) {
        const int8_t* xc = xq.code(i, g);
        auto xv = [&](int t) { return _mm256_broadcastd_epi32(_mm_loadu_si32(xc + 4 * t)); };
        __m256i dot;
        if (kQ8) {
          dot = _mm256_setzero_si256();
          for (int t = 0; t < 8; ++t) {
            const __m256i q = unit(t);
            const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(xv(t), q));
            dot = _mm256_add_epi32(dot, _mm256_madd_epi16(p, ones));
          }
        } else {
          __m256i s16 = _mm256_setzero_si256();
          for (int t = 0; t < 4; ++t) {
            const __m256i raw = unit(t);
            s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(_mm256_and_si256(raw, low4), xv(t)));
            s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(raw, 4), low4), xv(t + 4)));
          }
          dot = _mm256_add_epi32(_mm256_madd_epi16(s16, ones), _mm256_set1_epi32(xq.corr(i, g)));
        }
        acc[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(sw, _mm256_set1_ps(xq.scale(i, g))),
                                    acc[i][h]);
      }
    }
    codes += bgb;
  }
  for (int i = 0; i < M; ++i)
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(out + i * kRB + h * 8, acc[i][h]);
}
#endif

// Portable: each row's group data gathered from its units, then per row the
// integer dot product from 16-bit products (PromoteTo +
// ReorderWidenMulAccumulate), scaled and summed in f32 per group.
template <int M, bool kQ8>
HWY_INLINE void QBlockGeneric(const quant::View& v, int64_t b, const XQ& xq, float* out) {
  const hn::CappedTag<int16_t, 16> d16;
  const hn::Repartition<int32_t, decltype(d16)> d32;
  const hn::Rebind<int8_t, decltype(d16)> d8;
  const hn::Rebind<uint8_t, decltype(d16)> du8;
  const hn::Rebind<uint16_t, decltype(d16)> du16;
  using VI = hn::Vec<decltype(d32)>;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d16));
  const int64_t G = v.groups, gb = quant::group_bytes(kQ8), bgb = v.block_group_bytes();
  const uint8_t* codes = v.codes + b * G * bgb;
  const uint16_t* sc = v.scales + b * G * kRB;
  float acc[M][kRB] = {};
  alignas(64) uint8_t rows[kRB][quant::kGroup];
  alignas(64) int16_t xw[M][quant::kGroup];
  for (int64_t g = 0; g < G; ++g) {
    const uint8_t* bg = codes + g * bgb;
    for (int64_t p = 0; p < bgb; p += 64) hwy::Prefetch(bg + kQPrefetchBytes + p);
    for (int64_t r = 0; r < kRB; ++r)
      for (int64_t t = 0; t < gb; t += quant::kUnit)
        std::memcpy(&rows[r][t], bg + (t / quant::kUnit * kRB + r) * quant::kUnit, quant::kUnit);
    for (int i = 0; i < M; ++i)
      for (int64_t j = 0; j < quant::kGroup; j += L)
        hn::Store(hn::PromoteTo(d16, hn::LoadU(d8, xq.code(i, g) + j)), d16,
                  &xw[i][j]);
    for (int64_t r = 0; r < kRB; ++r) {
      VI dot0[M], dot1[M];
      for (int i = 0; i < M; ++i) dot0[i] = dot1[i] = hn::Zero(d32);
      if (kQ8) {
        for (int64_t j = 0; j < quant::kGroup; j += L) {
          const auto w = hn::PromoteTo(d16, hn::Load(d8, reinterpret_cast<const int8_t*>(&rows[r][j])));
          for (int i = 0; i < M; ++i) dot0[i] = hn::ReorderWidenMulAccumulate(d32, w, hn::Load(d16, &xw[i][j]), dot0[i], dot1[i]);
        }
      } else {
        const auto eight = hn::Set(d16, 8);
        for (int64_t j = 0; j < quant::kGroup / 2; j += L) {
          const auto raw = hn::BitCast(d16, hn::PromoteTo(du16, hn::Load(du8, &rows[r][j])));
          const auto lo = hn::Sub(hn::And(raw, hn::Set(d16, 15)), eight);
          const auto hi = hn::Sub(hn::ShiftRight<4>(raw), eight);
          for (int i = 0; i < M; ++i) {
            dot0[i] = hn::ReorderWidenMulAccumulate(d32, lo, hn::Load(d16, &xw[i][j]), dot0[i], dot1[i]);
            dot0[i] = hn::ReorderWidenMulAccumulate(d32, hi, hn::Load(d16, &xw[i][j + quant::kGroup / 2]), dot0[i], dot1[i]);
          }
        }
      }
      const float dw = quant::f16_to_f32(sc[g * kRB + r]);
      for (int i = 0; i < M; ++i) {
        const int32_t dot = hn::GetLane(hn::SumOfLanes(d32, hn::Add(dot0[i], dot1[i])));
        acc[i][r] += static_cast<float>(dot) * (dw * xq.scale(i, g));
      }
    }
  }
  for (int i = 0; i < M; ++i)
    for (int64_t r = 0; r < kRB; ++r) out[i * kRB + r] = acc[i][r];
}

template <int M, bool kQ8>
HWY_INLINE void QBlock(const quant::View& v, int64_t b, const XQ& xq, float* out) {
#if QVL_X86_AVX2
  QBlockMaddubs<M, kQ8>(v, b, xq, out);
#else
  QBlockGeneric<M, kQ8>(v, b, xq, out);
#endif
}

// Blocks [b0, b1) against M x rows; y rows start at y (row stride ldy).
template <int M, bool kQ8>
void QRange(const quant::View& v, const XQ& xq, int64_t b0, int64_t b1, int64_t n, const float* bias, float* y,
            int64_t ldy, bool vnni) {
  for (int64_t b = b0; b < b1; ++b) {
#if QVL_X86_VNNI
    if (vnni) {
      // The GEMM's chunks (MatmulQuantGemm's chunk_x): exactly M rows, group-major.
      const bool packed = xq.row_stride == quant::kGroup && xq.group_stride == M * quant::kGroup && xq.srow == 1 &&
                          xq.sgroup == M;
      const float* bb = bias ? bias + b * kRB : nullptr;
      const int64_t rows = std::min(kRB, n - b * kRB);
      if (packed)
        QBlockVnni<M, kQ8, true>(v, b, xq, y + b * kRB, ldy, bb, rows);
      else
        QBlockVnni<M, kQ8, false>(v, b, xq, y + b * kRB, ldy, bb, rows);
      continue;
    }
#else
    (void)vnni;
#endif
    float out[M * kRB];
    QBlock<M, kQ8>(v, b, xq, out);
    for (int64_t r = 0; r < kRB && b * kRB + r < n; ++r) {
      const float bb = bias ? bias[b * kRB + r] : 0.0f;
      for (int i = 0; i < M; ++i) y[i * ldy + b * kRB + r] = out[i * kRB + r] + bb;
    }
  }
}

// QRange for m rows, 1 <= m <= M.
template <int M, bool kQ8>
void QRangeRows(int64_t m, const quant::View& v, const XQ& xq, int64_t b0, int64_t b1, int64_t n, const float* bias,
                float* y, int64_t ldy, bool vnni) {
  if constexpr (M > 1) {
    if (m < M) return QRangeRows<M - 1, kQ8>(m, v, xq, b0, b1, n, bias, y, ldy, vnni);
  }
  QRange<M, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
}

// Scalable vectors (SVE, RVV) may hold fewer lanes than the tags' bound,
// which the group arithmetic assumes; such targets use the scalar twin.
static bool LanesAreFixed() {
  const hn::CappedTag<int16_t, 16> d16;
  return hn::Lanes(d16) == hn::MaxLanes(d16);
}

// Bytes of weights in a GEMM tile, and of x codes in a panel: a tile is
// applied to a panel of x from L2 (1 MB per core on Zen 4, 512 KB+ on most
// x86).
constexpr int64_t kTileBytes = 256 << 10;

// Whether this target hands GEMMs (m > kSmallM) to the AMX int8 kernel: an
// AVX-512 target (the kernel scales its sums with AVX-512 FMA, as these
// targets' kernels do, so rows stay bit-identical to the small-m path) on a
// machine where it runs.
bool GemmOnAmx() {
#if QVL_X86_AVX512
  return amx::int8_usable();
#else
  return false;
#endif
}

#if QVL_X86_VNNI
static bool HasVnni() {
  return cpu_features().avx512_vnni;  // QVL_SIMD_TARGET may have taken it away
}
#else
static constexpr bool HasVnni() { return false; }
#endif

// AArch64: the SDOT/SMMLA block kernels (neon_matmul_quant.h) on the NEON
// target where the CPU has them; the portable baseline keeps its own.
static neon::Int8Kernel ArmKernel(int64_t m) {
#if HWY_ARCH_ARM_A64 && HWY_TARGET == HWY_NEON
  return neon::int8_kernel(m);
#else
  (void)m;
  return neon::Int8Kernel::None;
#endif
}

// The instruction ArmKernel(m) names ("SDOT", "SMMLA"), or null where none runs.
const char* ArmKernelName(int64_t m) {
  const neon::Int8Kernel k = ArmKernel(m);
  return k == neon::Int8Kernel::None ? nullptr : neon::int8_kernel_name(k);
}

// QRangeRows for q8 or q4 weights, m <= kSmallM rows.
void QRangeAny(int64_t m, const quant::View& v, const XQ& x, int64_t b0, int64_t b1, int64_t n, const float* bias,
               float* y, int64_t ldy) {
  if (const neon::Int8Kernel arm = ArmKernel(m); arm != neon::Int8Kernel::None)
    return neon::quant_range(arm, m, v, {x.codes, x.scales, x.corrs, x.row_stride, x.group_stride, x.srow, x.sgroup},
                             b0, b1, n, bias, y, ldy);
  if (v.q8)
    QRangeRows<kSmallM, true>(m, v, x, b0, b1, n, bias, y, ldy, HasVnni());
  else
    QRangeRows<kSmallM, false>(m, v, x, b0, b1, n, bias, y, ldy, HasVnni());
}

// One row of x rounded to 8-bit codes per group, with corr = -offset·Σ codes
// per group (the weights' unsigned offset, q8 128 and q4 8, taken back out).
void QuantizeRow(const float* x, int64_t k, int64_t groups, int32_t offset, int8_t* codes, float* scales,
                 int32_t* corr) {
  simd::quantize_x(x, k, {codes, scales, corr});
  for (int64_t g = 0; g < groups; ++g) corr[g] *= -offset;
}

// Row stride of quantized x: 64 bytes past whole groups, so x rows do not all
// share L1 sets.
int64_t CodesStride(int64_t groups) { return groups * quant::kGroup + 64; }

void MatmulQuantSmallMTasks(std::span<const MatmulTask> tasks, ThreadPool& pool) {
  if (!LanesAreFixed()) {
    for (const MatmulTask& t : tasks)
      pool.parallel_for(t.out.w->rows(), [&](int64_t b, int64_t e, int) {
        scalar::matmul_rows(t.x, t.m, t.ldx, *t.out.w, t.out.bias, t.out.y, t.out.ldy, b, e);
      });
    return;
  }
  // Each distinct x rounded once (the tasks share its format and k).
  const quant::View v0 = quant::view(*tasks[0].out.w);
  const int64_t k = tasks[0].out.w->cols(), G = v0.groups, cs = CodesStride(G);
  int64_t rows = 0;
  const std::vector<int64_t> first = task_x_rows(tasks, rows);
  thread_local ScratchVector<int8_t> codes;
  thread_local ScratchVector<float> scales;
  thread_local ScratchVector<int32_t> corr;
  codes.resize(static_cast<size_t>(rows * cs));
  scales.resize(static_cast<size_t>(rows * G));
  corr.resize(static_cast<size_t>(rows * G));
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0 && first[i] == first[i - 1]) continue;
    for (int64_t r = 0; r < tasks[i].m; ++r) {
      const int64_t at = first[i] + r;
      QuantizeRow(tasks[i].x + r * tasks[i].ldx, k, G, v0.q8 ? 128 : 8, codes.data() + at * cs,
                  scales.data() + at * G, corr.data() + at * G);
    }
  }
  std::vector<XQ> xq;
  std::vector<quant::View> views;
  std::vector<int64_t> blocks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    xq.push_back({codes.data() + first[i] * cs, scales.data() + first[i] * G, corr.data() + first[i] * G, cs,
                  quant::kGroup, G, 1});
    views.push_back(quant::view(*tasks[i].out.w));
    blocks.push_back(quant::row_blocks(tasks[i].out.w->rows()));
  }
  run_pieces(pool, split_work(blocks, pool.size()), [&](const WorkPiece& p) {
    const size_t i = static_cast<size_t>(p.product);
    const MatmulOutput& o = tasks[i].out;
    QRangeAny(tasks[i].m, views[i], xq[i], p.begin, p.end, o.w->rows(), o.bias, o.y, o.ldy);
  });
}

void MatmulQuantSmallM(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool) {
  std::vector<MatmulTask> tasks;
  for (const MatmulOutput& o : outs) tasks.push_back({x, m, ldx, o});
  MatmulQuantSmallMTasks(tasks, pool);
}

// GEMM (m > kSmallM) for one or more products of the same x (q, k and v;
// gate and up), all q8/q4 of one format and k: x is rounded and packed once
// for all of them, and their work items are shared among the threads, so the
// products are one parallel step (rounding x again for each cost ~1 % of a
// prefill, and each product's last items left a thread idle).
void MatmulQuantGemm(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool) {
  const WeightMatrix& w0 = *outs[0].w;
  const int64_t k = w0.cols();
  const quant::View v0 = quant::view(w0);
  const int64_t G = v0.groups;
  const int32_t offset = v0.q8 ? 128 : 8;
  thread_local ScratchVector<int8_t> codes_buf;
  thread_local ScratchVector<float> scales_buf;
  thread_local ScratchVector<int32_t> corr_buf;
  codes_buf.resize(static_cast<size_t>(m * G * quant::kGroup));
  scales_buf.resize(static_cast<size_t>(m * G));
  corr_buf.resize(static_cast<size_t>(m * G));
  // The caller's buffers, which workers fill (in a lambda, a thread_local
  // name would be the worker's own).
  int8_t* codes = codes_buf.data();
  float* scales = scales_buf.data();
  int32_t* corr = corr_buf.data();

  // x in chunks of at most kSmallM rows, of nearly equal size (100 rows: 13
  // chunks of 7-8, not 12 of 8 and one of 4, which would use each weight
  // vector only 4 times), each packed group-major, codes [group][row][32] and
  // scales, corr [group][row], so a block kernel reads the chunk as one
  // sequential stream (measured: 1.5-2x faster than rows kSmallM apart at
  // k = 6144, whose chunk does not fit L1).
  const int64_t chunks = (m + kSmallM - 1) / kSmallM;
  auto chunk_begin = [&](int64_t c) { return c * m / chunks; };
  auto chunk_x = [&](int64_t c) {
    const int64_t i0 = chunk_begin(c), rows = chunk_begin(c + 1) - i0;
    return XQ{codes + i0 * G * quant::kGroup, scales + i0 * G, corr + i0 * G, quant::kGroup, rows * quant::kGroup, 1, rows};
  };
  pool.parallel_for(chunks, [&](int64_t c0, int64_t c1, int) {
    thread_local ScratchVector<int8_t> row_codes;  // this worker's own
    thread_local ScratchVector<float> row_scales;
    thread_local ScratchVector<int32_t> row_corr;
    row_codes.resize(static_cast<size_t>(G * quant::kGroup));
    row_scales.resize(static_cast<size_t>(G));
    row_corr.resize(static_cast<size_t>(G));
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t i0 = chunk_begin(c), rows = chunk_begin(c + 1) - i0;
      for (int64_t r = 0; r < rows; ++r) {
        QuantizeRow(x + (i0 + r) * ldx, k, G, offset, row_codes.data(), row_scales.data(), row_corr.data());
        for (int64_t g = 0; g < G; ++g) {
          const int64_t at = i0 * G + g * rows + r;  // chunk_x's layout
          std::memcpy(codes + at * quant::kGroup, row_codes.data() + g * quant::kGroup, quant::kGroup);
          scales[at] = row_scales[static_cast<size_t>(g)];
          corr[at] = row_corr[static_cast<size_t>(g)];
        }
      }
    }
  });
  // Work items: (panel of x chunks, product, tile of its weight blocks),
  // panel by panel, so a thread's tile and the panel it is applied to
  // (kTileBytes each) stay in L2 together; the weights stream once per
  // panel, from L3 when they fit. The products share k, so a tile holds as
  // many blocks in each.
  const int64_t tile = std::clamp<int64_t>(kTileBytes / (G * v0.block_group_bytes()), 1, 16);
  const int64_t panel = std::max<int64_t>(1, kTileBytes / (kSmallM * G * quant::kGroup));  // chunks
  const int64_t panels = (chunks + panel - 1) / panel;
  std::vector<int64_t> first_tile(outs.size() + 1, 0);  // items of a panel: product p's tiles from first_tile[p]
  for (size_t p = 0; p < outs.size(); ++p)
    first_tile[p + 1] = first_tile[p] + (quant::row_blocks(outs[p].w->rows()) + tile - 1) / tile;
  const int64_t per_panel = first_tile.back(), items = panels * per_panel;
  // Threads claim items one at a time, so a thread the OS deschedules (the
  // machine may be shared) delays only its current item.
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const int64_t in_panel = item % per_panel;
      const size_t p = static_cast<size_t>(std::upper_bound(first_tile.begin(), first_tile.end(), in_panel) -
                                           first_tile.begin() - 1);
      const MatmulOutput& o = outs[p];
      const int64_t n = o.w->rows(), blocks = quant::row_blocks(n);
      const int64_t b0 = (in_panel - first_tile[p]) * tile, b1 = std::min(blocks, b0 + tile);
      const int64_t c0 = item / per_panel * panel, c1 = std::min(chunks, c0 + panel);
      const quant::View v = quant::view(*o.w);
      for (int64_t c = c0; c < c1; ++c)
        QRangeAny(chunk_begin(c + 1) - chunk_begin(c), v, chunk_x(c), b0, b1, n, o.bias, o.y + chunk_begin(c) * o.ldy,
                  o.ldy);
    }
  });
}

// Several products of x as MatmulQuantGemm, or each on its own where the
// AMX int8 kernel takes GEMMs or the target's vectors are not fixed.
void MatmulQuantEach(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool) {
  if (m <= kSmallM) return MatmulQuantSmallM(x, m, ldx, outs, pool);
  if (GemmOnAmx() || !LanesAreFixed()) {
    for (const MatmulOutput& o : outs) {
      const MatmulArgs a{x, m, ldx, o.w, o.bias, o.y, o.ldy};
      if (GemmOnAmx()) {
        amx::matmul_quant(a, pool);
      } else {
        pool.parallel_for(o.w->rows(), [&](int64_t b, int64_t e, int) {
          scalar::matmul_rows(x, m, ldx, *o.w, o.bias, o.y, o.ldy, b, e);
        });
      }
    }
    return;
  }
  MatmulQuantGemm(x, m, ldx, outs, pool);
}

void MatmulQuant(const MatmulArgs& a, ThreadPool& pool) {
  const MatmulOutput out{a.w, a.bias, a.y, a.ldy};
  MatmulQuantEach(a.x, a.m, a.ldx, {&out, 1}, pool);
}

// What this target's block kernels multiply on (QRange): the rule
// matmul_kernel() names and the benchmarks measure against.
QuantInstruction Instruction() {
  if (HasVnni()) return {"vpdpbusd", MatmulUnit::Int8Dot};
  if (const char* arm = ArmKernelName(kSmallM)) return {arm, MatmulUnit::Int8Dot};  // the GEMM's chunks
#if QVL_X86_AVX2
  return {"vpmaddubsw", MatmulUnit::Int16Madd};
#else
  return {"portable", MatmulUnit::Int16Madd};
#endif
}

const char* TargetName() {
#if QVL_X86_VNNI
  if (!cpu_features().avx512_vnni) return "AVX3_DL without VNNI";
#endif
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qvl::simd {

HWY_EXPORT(MatmulQuant);
void matmul_quant(const MatmulArgs& a, ThreadPool& pool) { HWY_DYNAMIC_DISPATCH(MatmulQuant)(a, pool); }
HWY_EXPORT(MatmulQuantEach);
void matmul_quant_each(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatmulQuantEach)(x, m, ldx, outs, pool);
}
HWY_EXPORT(MatmulQuantSmallM);
void matmul_quant_small_m(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs,
                          ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatmulQuantSmallM)(x, m, ldx, outs, pool);
}

HWY_EXPORT(MatmulQuantSmallMTasks);
void matmul_quant_small_m_tasks(std::span<const MatmulTask> tasks, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(MatmulQuantSmallMTasks)(tasks, pool);
}

HWY_EXPORT(GemmOnAmx);
bool matmul_quant_gemm_on_amx() { return HWY_DYNAMIC_DISPATCH(GemmOnAmx)(); }

HWY_EXPORT(ArmKernelName);
const char* matmul_quant_arm_instruction(int64_t m) { return HWY_DYNAMIC_DISPATCH(ArmKernelName)(m); }

HWY_EXPORT(TargetName);
const char* matmul_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

HWY_EXPORT(Instruction);
QuantInstruction matmul_quant_instruction() { return HWY_DYNAMIC_DISPATCH(Instruction)(); }

}  // namespace qvl::simd
#endif
