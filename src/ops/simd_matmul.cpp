// Highway matmul kernels (see simd_matmul.h), compiled once per SIMD target
// and chosen at run time.
//
// Small m (decode), f32/bf16: each weight row is streamed once, a group of 32
// weights at a time widened to f32 and multiplied into all m rows of x held
// in L1/L2 (m = 1: one row at a time, so a thread reads one sequential
// stream).
// Small m, q8/q4: x is rounded to 8 bits per group (quant::XRow), and each
// group's exact integer dot product is scaled by both scales and summed in
// f32. The weights are interleaved by blocks of 16 rows (quant.h), so a
// thread reads one sequential stream and a 64-byte vector holds 4 bytes of
// each of the 16 rows: with AVX-512 VNNI, vpdpbusd multiplies it by 4 x
// codes broadcast to all lanes, lane r accumulating row r; AVX2/AVX-512
// without VNNI do the same on 8 rows with vpmaddubsw + vpmaddwd; other
// targets use portable Highway code.
// Larger m (prefill): x is packed transposed in tiles of TM rows ([k][TM]),
// a panel of NR weight rows is widened to f32 ([NR][k]), and a register
// micro-kernel keeps TM x NR accumulators (TM/lanes vectors x NR), doing
// TM·NR/lanes FMAs per k for TM/lanes + NR loads.
//
// Every output row's value depends only on its x row, never on m or on the
// other rows (same per-row operation order for m = 1..kSmallM), so requests
// decoded together get the results they would get alone.
//
// AVX3_DL (AVX-512 with VNNI) is compiled here only: it is the one target
// whose code differs (the integer dot product), so the other ops files are
// spared the extra compile.
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_matmul.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/cache_control.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "ops/quant.h"
#include "ops/scalar.h"
#include "ops/simd_matmul.h"
#include "ops/simd_quant.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::CappedTag<float, 16>;  // <= 16 lanes so a q8/q4 group (32) is whole vectors
using VF = hn::Vec<DF>;

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_ARCH_ARM_A64
constexpr int kMV = 3, kNR = 8;  // 32 registers: 24 accumulators
#else
constexpr int kMV = 2, kNR = 6;  // 16 registers: 12 accumulators
#endif

// Reads weight row r as f32 vectors: Load(r, c) for c a multiple of the lane
// count. `vec_end` is how far whole vectors go; columns past it (f32/bf16
// tails) come from Scalar(r, c).
struct F32Rows {
  static constexpr int64_t kBytes = 4;
  const float* w;
  int64_t k, n;  // [n, k]
  const void* Addr(int64_t r, int64_t c) const { return w + r * k + c; }
  HWY_INLINE VF Load(DF d, int64_t r, int64_t c) const { return hn::LoadU(d, w + r * k + c); }
  float Scalar(int64_t r, int64_t c) const { return w[r * k + c]; }
  int64_t vec_end(size_t lanes) const { return k / static_cast<int64_t>(lanes) * static_cast<int64_t>(lanes); }
  int64_t group_end() const { return k / quant::kGroup * quant::kGroup; }
  template <int V>
  HWY_INLINE void LoadGroup(DF d, int64_t r, int64_t c, VF* out) const {
    for (int v = 0; v < V; ++v) out[v] = Load(d, r, c + v * static_cast<int64_t>(hn::Lanes(d)));
  }
};

struct Bf16Rows {
  static constexpr int64_t kBytes = 2;
  const uint16_t* w;
  int64_t k, n;  // [n, k]
  const void* Addr(int64_t r, int64_t c) const { return w + r * k + c; }
  HWY_INLINE VF Load(DF d, int64_t r, int64_t c) const {
    const hn::Rebind<uint16_t, DF> du16;
    const hn::Rebind<uint32_t, DF> du32;
    auto wide = hn::PromoteTo(du32, hn::LoadU(du16, w + r * k + c));
    return hn::BitCast(d, hn::ShiftLeft<16>(wide));  // bf16 is the top half of an f32: exact
  }
  float Scalar(int64_t r, int64_t c) const {
    uint32_t bits = static_cast<uint32_t>(w[r * k + c]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  int64_t vec_end(size_t lanes) const { return k / static_cast<int64_t>(lanes) * static_cast<int64_t>(lanes); }
  int64_t group_end() const { return k / quant::kGroup * quant::kGroup; }
  template <int V>
  HWY_INLINE void LoadGroup(DF d, int64_t r, int64_t c, VF* out) const {
    for (int v = 0; v < V; ++v) out[v] = Load(d, r, c + v * static_cast<int64_t>(hn::Lanes(d)));
  }
};

// q8/q4 rows for the GEMM packing: a row dequantized to f32 (the group's
// scale times its codes), gathered from the interleaved layout of quant.h.
struct QRows {
  quant::View v;
  void DequantRow(int64_t r, float* dst) const {
    const DF d;
    const hn::Rebind<int32_t, DF> di32;
    const size_t N = hn::Lanes(d);
    const int64_t gb = quant::group_bytes(v.q8);
    alignas(64) uint8_t data[quant::kGroup];
    for (int64_t g = 0; g < v.groups; ++g) {
      for (int64_t t = 0; t < gb; t += quant::kUnit) std::memcpy(data + t, v.byte(r, g, t), quant::kUnit);
      const float s = quant::f16_to_f32(v.scale(r, g));
      float* out = dst + g * quant::kGroup;
      if (v.q8) {
        for (size_t j = 0; j < quant::kGroup; j += N) {
          auto q = hn::PromoteTo(di32, hn::Load(hn::Rebind<int8_t, DF>(), reinterpret_cast<const int8_t*>(data) + j));
          hn::StoreU(hn::Mul(hn::ConvertTo(d, q), hn::Set(d, s)), d, out + j);
        }
      } else {
        for (size_t j = 0; j < quant::kGroup / 2; j += N) {
          auto wide = hn::BitCast(di32, hn::PromoteTo(hn::Rebind<uint32_t, DF>(), hn::Load(hn::Rebind<uint8_t, DF>(), data + j)));
          // (code - 8)·s in one rounding: -8s is exact.
          const VF sv = hn::Set(d, s), bias = hn::Set(d, -8.0f * s);
          hn::StoreU(hn::MulAdd(hn::ConvertTo(d, hn::And(wide, hn::Set(di32, 15))), sv, bias), d, out + j);
          hn::StoreU(hn::MulAdd(hn::ConvertTo(d, hn::ShiftRight<4>(wide)), sv, bias), d, out + j + quant::kGroup / 2);
        }
      }
    }
  }
};

// ---------------------------------------------------------------- small m, f32/bf16

constexpr int64_t kPrefetchBytes = 1024;

// R weight rows [n, n+R) against M rows of x (padded with zeros to xs floats
// per row). Accumulators: M·R vectors. Each (x row, weight row) pair sums in
// the same order whatever M and R are.
template <int M, int R, class Rows>
HWY_INLINE void SmallBlock(const Rows& rows, const float* x, int64_t xs, int64_t k, int64_t n, const float* bias,
                           float* y, int64_t ldy) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  constexpr int V = static_cast<int>(quant::kGroup / hn::MaxLanes(DF()));  // vectors per group of 32
  VF acc[M][R];
  for (int i = 0; i < M; ++i)
    for (int r = 0; r < R; ++r) acc[i][r] = hn::Zero(d);
  const int64_t end = rows.group_end();
  for (int64_t c = 0; c < end; c += quant::kGroup) {
    VF w[R][V];
    for (int r = 0; r < R; ++r) {
      // Each row is its own short stream (a page for k = 2048 bf16); run
      // ahead of the hardware prefetcher, into the same row of the next
      // block near the end of the row, so a new block does not start cold.
      const int64_t ahead = c * Rows::kBytes + kPrefetchBytes, row_bytes = k * Rows::kBytes;
      if (ahead < row_bytes)
        hwy::Prefetch(static_cast<const uint8_t*>(rows.Addr(n + r, 0)) + ahead);
      else if (n + R + r < rows.n)
        hwy::Prefetch(static_cast<const uint8_t*>(rows.Addr(n + R + r, 0)) + (ahead - row_bytes));
      rows.template LoadGroup<V>(d, n + r, c, w[r]);
    }
    for (int u = 0; u < V; ++u)
      for (int i = 0; i < M; ++i) {
        const VF xv = hn::LoadU(d, x + i * xs + c + u * N);
        for (int r = 0; r < R; ++r) acc[i][r] = hn::MulAdd(xv, w[r][u], acc[i][r]);
      }
  }
  // Remaining whole vectors, then single columns.
  const int64_t vend = std::max(end, rows.vec_end(static_cast<size_t>(N)));
  for (int64_t c = end; c < vend; c += N)
    for (int r = 0; r < R; ++r) {
      const VF wv = rows.Load(d, n + r, c);
      for (int i = 0; i < M; ++i) acc[i][r] = hn::MulAdd(hn::LoadU(d, x + i * xs + c), wv, acc[i][r]);
    }
  for (int r = 0; r < R; ++r) {
    float tail[M] = {};
    for (int64_t c = vend; c < k; ++c) {
      float wt = rows.Scalar(n + r, c);
      for (int i = 0; i < M; ++i) tail[i] += x[i * xs + c] * wt;
    }
    const float b = bias ? bias[n + r] : 0.0f;
    for (int i = 0; i < M; ++i) y[i * ldy + n + r] = hn::GetLane(hn::SumOfLanes(d, acc[i][r])) + tail[i] + b;
  }
}

template <int M, class Rows>
void SmallRange(const Rows& rows, const float* x, int64_t xs, int64_t k, int64_t n0, int64_t n1, const float* bias,
                float* y, int64_t ldy) {
  if constexpr (kMV == 3 && M > 4) {
    // 32 registers: x rows 0-3, then the rest against the same 4 weight
    // rows, which the first pass left in L1 (M·R accumulators for M > 4
    // would spill).
    int64_t n = n0;
    for (; n + 4 <= n1; n += 4) {
      SmallBlock<4, 4>(rows, x, xs, k, n, bias, y, ldy);
      SmallBlock<M - 4, 4>(rows, x + 4 * xs, xs, k, n, bias, y + 4 * ldy, ldy);
    }
    for (; n < n1; ++n) SmallBlock<M, 1>(rows, x, xs, k, n, bias, y, ldy);
  } else if (std::is_same_v<Rows, Bf16Rows> && M * k <= 4096) {
    // One row at a time: the thread's rows are one sequential stream (rows
    // are contiguous), which the prefetchers serve best, while x (<= 16 KB)
    // stays in L1; M FMA chains per row are still faster than memory.
    // Measured: faster than 4 rows at m = 1, k = 2048, slower at k = 6144 (x
    // then streams from L2 once per row), and slower for f32 weights.
    for (int64_t n = n0; n < n1; ++n) SmallBlock<M, 1>(rows, x, xs, k, n, bias, y, ldy);
  } else {
    // Rows per block: M·R accumulators + R·(32/lanes) weight vectors must fit the register file.
    constexpr int R = kMV == 3 ? 4 : (M <= 2 ? 4 : M <= 4 ? 2 : 1);
    int64_t n = n0;
    for (; n + R <= n1; n += R) SmallBlock<M, R>(rows, x, xs, k, n, bias, y, ldy);
    for (; n < n1; ++n) SmallBlock<M, 1>(rows, x, xs, k, n, bias, y, ldy);
  }
}

template <class Rows>
void SmallDispatch(const Rows& rows, const float* x, int64_t m, int64_t xs, int64_t k, int64_t n0, int64_t n1,
                   const float* bias, float* y, int64_t ldy) {
  switch (m) {
    case 1: return SmallRange<1>(rows, x, xs, k, n0, n1, bias, y, ldy);
    case 2: return SmallRange<2>(rows, x, xs, k, n0, n1, bias, y, ldy);
    case 3: return SmallRange<3>(rows, x, xs, k, n0, n1, bias, y, ldy);
    case 4: return SmallRange<4>(rows, x, xs, k, n0, n1, bias, y, ldy);
    case 5: return SmallRange<5>(rows, x, xs, k, n0, n1, bias, y, ldy);
    case 6: return SmallRange<6>(rows, x, xs, k, n0, n1, bias, y, ldy);
    case 7: return SmallRange<7>(rows, x, xs, k, n0, n1, bias, y, ldy);
    default: return SmallRange<8>(rows, x, xs, k, n0, n1, bias, y, ldy);
  }
}

// ---------------------------------------------------------------- small m, q8/q4

// x rows quantized (quant::XRow), row i at codes + i·codes_stride and
// scales/corr + i·groups. corr = -offset · Σ codes removes the offset of
// unsigned weight codes (VNNI: q8 as q + 128, q4 as q + 8; vpmaddubsw: q4).
struct XQ {
  const int8_t* codes;
  const float* scales;
  const int32_t* corr;
  int64_t codes_stride, groups;
};

constexpr int64_t kRB = quant::kBlockRows;
constexpr int64_t kQPrefetchBytes = 2048;

#if HWY_TARGET == HWY_AVX3_DL
// One block of 16 weight rows against M x rows: out[i·16 + r]. Each 64-byte
// unit vector holds 4 bytes of every row, so int32 lane r is row r: vpdpbusd
// multiplies the unsigned weight bytes (q8 flipped to q + 128, q4 nibbles as
// stored, q + 8) by 4 signed x codes broadcast to all lanes, and each lane
// starts at corr to remove the offset. One conversion, scale and FMA per
// x row and group covers all 16 rows.
// Highway 1.0.3's AVX3_DL attributes name AVX-VNNI but not AVX512-VNNI
// (which its CPU check for AVX3_DL requires, and MatmulSmallQuant checks
// again): added here, so this function is called, not inlined.
template <int M, bool kQ8>
HWY_NOINLINE __attribute__((target(HWY_TARGET_STR ",avx512vnni"))) void QBlockVnni(const quant::View& v, int64_t b,
                                                                                   const XQ& xq, float* out) {
  const int64_t G = v.groups;
  const int64_t bgb = v.block_group_bytes();
  const uint8_t* codes = v.codes + b * G * bgb;
  const uint16_t* sc = v.scales + b * G * kRB;
  __m512 acc[M];
  for (int i = 0; i < M; ++i) acc[i] = _mm512_setzero_ps();
  const __m512i low4 = _mm512_set1_epi8(0x0F), flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t p = 0; p < bgb; p += 64) _mm_prefetch(reinterpret_cast<const char*>(codes) + kQPrefetchBytes + p, _MM_HINT_T0);
    if ((g & 1) == 0) _mm_prefetch(reinterpret_cast<const char*>(sc + g * kRB) + 512, _MM_HINT_T0);
    const __m512 sw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc + g * kRB)));
    // w[t] pairs with x codes 4t..4t+3 of the group.
    __m512i w[8];
    if (kQ8) {
      for (int t = 0; t < 8; ++t) w[t] = _mm512_xor_si512(_mm512_loadu_si512(codes + t * 64), flip);
    } else {
      for (int t = 0; t < 4; ++t) {
        const __m512i raw = _mm512_loadu_si512(codes + t * 64);
        w[t] = _mm512_and_si512(raw, low4);
        w[t + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
      }
    }
    codes += bgb;
    // Unrolled so the accumulators stay in registers.
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {
      const int8_t* xc = xq.codes + i * xq.codes_stride + g * quant::kGroup;
      // 4 x codes broadcast to every lane (a load, folded into vpdpbusd).
      auto xv = [&](int t) { return _mm512_broadcastd_epi32(_mm_loadu_si32(xc + 4 * t)); };
      __m512i dot;
      if (M <= 2) {  // two chains hide the latency when few rows share the weights; integer sums are exact
        __m512i d0 = _mm512_set1_epi32(xq.corr[i * xq.groups + g]), d1 = _mm512_setzero_si512();
        for (int t = 0; t < 8; t += 2) {
          d0 = _mm512_dpbusd_epi32(d0, w[t], xv(t));
          d1 = _mm512_dpbusd_epi32(d1, w[t + 1], xv(t + 1));
        }
        dot = _mm512_add_epi32(d0, d1);
      } else {
        dot = _mm512_set1_epi32(xq.corr[i * xq.groups + g]);
        for (int t = 0; t < 8; ++t) dot = _mm512_dpbusd_epi32(dot, w[t], xv(t));
      }
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(sw, _mm512_set1_ps(xq.scales[i * xq.groups + g])),
                               acc[i]);
    }
  }
  for (int i = 0; i < M; ++i) _mm512_storeu_ps(out + i * kRB, acc[i]);
}
#endif

#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
// x86 without VNNI: the same lane-per-row scheme on 256-bit vectors (8 rows
// each, two halves per block) with vpmaddubsw (unsigned x signed bytes ->
// saturating 16-bit pair sums) and vpmaddwd by ones (-> 32-bit). No sum may
// saturate: q4 nibbles (<= 15) times codes (<= 127) give pairs <= 3810, and
// the 8 units of a group add to <= 30480 in 16 bits; q8 uses |q| as the
// unsigned side and moves q's sign onto x (pairs <= 2·127·127 = 32258), each
// unit widened to 32 bits at once.
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
    for (int64_t p = 0; p < bgb; p += 64) hwy::Prefetch(codes + kQPrefetchBytes + p);
    for (int h = 0; h < 2; ++h) {
      const __m256 sw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc + g * kRB + h * 8)));
      // Unit t of rows 8h..8h+7 (32 bytes); w[t] pairs with x codes 4t..4t+3.
      auto unit = [&](int t) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + (t * kRB + h * 8) * quant::kUnit));
      };
      for (int i = 0; i < M; ++i) {
        const int8_t* xc = xq.codes + i * xq.codes_stride + g * quant::kGroup;
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
          dot = _mm256_add_epi32(_mm256_madd_epi16(s16, ones), _mm256_set1_epi32(xq.corr[i * xq.groups + g]));
        }
        acc[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(sw, _mm256_set1_ps(xq.scales[i * xq.groups + g])),
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
        hn::Store(hn::PromoteTo(d16, hn::LoadU(d8, xq.codes + i * xq.codes_stride + g * quant::kGroup + j)), d16,
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
        acc[i][r] += static_cast<float>(dot) * (dw * xq.scales[i * xq.groups + g]);
      }
    }
  }
  for (int i = 0; i < M; ++i)
    for (int64_t r = 0; r < kRB; ++r) out[i * kRB + r] = acc[i][r];
}

template <int M, bool kQ8>
void QRange(const quant::View& v, const XQ& xq, int64_t b0, int64_t b1, int64_t n, const float* bias, float* y,
            int64_t ldy, bool vnni) {
  for (int64_t b = b0; b < b1; ++b) {
    float out[M * kRB];
#if HWY_TARGET == HWY_AVX3_DL
    if (vnni)
      QBlockVnni<M, kQ8>(v, b, xq, out);
    else
#endif
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
      QBlockMaddubs<M, kQ8>(v, b, xq, out);
#else
      QBlockGeneric<M, kQ8>(v, b, xq, out);
#endif
    for (int64_t r = 0; r < kRB && b * kRB + r < n; ++r) {
      const float bb = bias ? bias[b * kRB + r] : 0.0f;
      for (int i = 0; i < M; ++i) y[i * ldy + b * kRB + r] = out[i * kRB + r] + bb;
    }
  }
}

template <bool kQ8>
void QDispatch(const quant::View& v, const XQ& xq, int64_t m, int64_t b0, int64_t b1, int64_t n, const float* bias,
               float* y, int64_t ldy, bool vnni) {
  switch (m) {
    case 1: return QRange<1, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
    case 2: return QRange<2, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
    case 3: return QRange<3, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
    case 4: return QRange<4, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
    case 5: return QRange<5, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
    case 6: return QRange<6, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
    case 7: return QRange<7, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
    default: return QRange<8, kQ8>(v, xq, b0, b1, n, bias, y, ldy, vnni);
  }
}

template <class F>
void WithRows(const WeightMatrix& w, const F& f) {
  switch (w.format()) {
    case WeightFormat::F32: return f(F32Rows{static_cast<const float*>(w.data()), w.cols(), w.rows()});
    case WeightFormat::BF16: return f(Bf16Rows{static_cast<const uint16_t*>(w.data()), w.cols(), w.rows()});
    case WeightFormat::Q8:
    case WeightFormat::Q4: return f(QRows{quant::view(w)});
  }
}

// Scalable vectors (SVE, RVV) may hold fewer lanes than the tag's bound, which
// the group arithmetic assumes; such targets use the scalar twin.
bool LanesAreFixed() { return hn::Lanes(DF()) == hn::MaxLanes(DF()); }

void ScalarFallback(const MatmulArgs& a, ThreadPool& pool) {
  pool.parallel_for(a.w->rows(), [&](int64_t b, int64_t e, int) {
    scalar::matmul_rows(a.x, a.m, a.ldx, *a.w, a.bias, a.y, a.ldy, b, e);
  });
}

void MatmulSmallQuant(const MatmulArgs& a, ThreadPool& pool) {
  const int64_t k = a.w->cols();
  const quant::View v = quant::view(*a.w);
  const int64_t G = v.groups, cs = G * quant::kGroup + 64;
  thread_local std::vector<int8_t> codes;
  thread_local std::vector<float> scales;
  thread_local std::vector<int32_t> sums;
  codes.resize(static_cast<size_t>(a.m * cs));
  scales.resize(static_cast<size_t>(a.m * G));
  sums.resize(static_cast<size_t>(a.m * G));
  for (int64_t i = 0; i < a.m; ++i)
    simd::quantize_x(a.x + i * a.ldx, k, {codes.data() + i * cs, scales.data() + i * G, sums.data() + i * G});
  const int32_t offset = v.q8 ? 128 : 8;
  for (auto& s : sums) s *= -offset;  // now corr
  const XQ xq{codes.data(), scales.data(), sums.data(), cs, G};
#if HWY_TARGET == HWY_AVX3_DL
  static const bool vnni = __builtin_cpu_supports("avx512vnni");
#else
  constexpr bool vnni = false;
#endif
  const int64_t n = a.w->rows();
  pool.parallel_for(quant::row_blocks(n), [&](int64_t b0, int64_t b1, int) {
    if (v.q8)
      QDispatch<true>(v, xq, a.m, b0, b1, n, a.bias, a.y, a.ldy, vnni);
    else
      QDispatch<false>(v, xq, a.m, b0, b1, n, a.bias, a.y, a.ldy, vnni);
  });
}

void MatmulSmallM(const MatmulArgs& a, ThreadPool& pool) {
  if (!LanesAreFixed()) return ScalarFallback(a, pool);
  if (a.w->format() == WeightFormat::Q8 || a.w->format() == WeightFormat::Q4) return MatmulSmallQuant(a, pool);
  const int64_t k = a.w->cols();
  // x copied once, zero-padded to whole groups.
  // Row stride padded 64 bytes off a power of two so x rows do not share L1 sets.
  const int64_t xs = quant::padded_cols(k) + 16;
  thread_local std::vector<float> xpad;
  xpad.assign(static_cast<size_t>(a.m * xs), 0.0f);
  for (int64_t i = 0; i < a.m; ++i) std::memcpy(xpad.data() + i * xs, a.x + i * a.ldx, sizeof(float) * k);
  const float* x = xpad.data();
  auto run = [&](const auto& rows) {
    // Chunks of 4 rows keep every thread's blocks whole.
    const int64_t blocks = (a.w->rows() + 3) / 4;
    pool.parallel_for(blocks, [&](int64_t b, int64_t e, int) {
      SmallDispatch(rows, x, a.m, xs, k, b * 4, std::min(a.w->rows(), e * 4), a.bias, a.y, a.ldy);
    });
  };
  if (a.w->format() == WeightFormat::F32)
    run(F32Rows{static_cast<const float*>(a.w->data()), k, a.w->rows()});
  else
    run(Bf16Rows{static_cast<const uint16_t*>(a.w->data()), k, a.w->rows()});
}

// ---------------------------------------------------------------- gemm

// x rows [m0, m0 + tm) transposed to xt [k][tm], rows past m zero.
void PackX(const float* x, int64_t m, int64_t ldx, int64_t k, int64_t m0, int64_t tm, float* xt) {
  for (int64_t r = 0; r < tm; ++r) {
    if (m0 + r < m) {
      const float* src = x + (m0 + r) * ldx;
      for (int64_t c = 0; c < k; ++c) xt[c * tm + r] = src[c];
    } else {
      for (int64_t c = 0; c < k; ++c) xt[c * tm + r] = 0.0f;
    }
  }
}

// Weight rows [n0, n0 + kNR) widened to f32, wp [kNR][ks]; rows past n zero.
template <class Rows>
void PackW(const Rows& rows, int64_t n, int64_t k, int64_t n0, float* wp, int64_t ks) {
  const DF d;
  const size_t N = hn::Lanes(d);
  int64_t end = 0;
  if constexpr (!std::is_same_v<Rows, QRows>) end = rows.vec_end(N);
  for (int64_t j = 0; j < kNR; ++j) {
    float* dst = wp + j * ks;
    if (n0 + j >= n) {
      std::memset(dst, 0, sizeof(float) * ks);
      continue;
    }
    if constexpr (std::is_same_v<Rows, QRows>) {
      rows.DequantRow(n0 + j, dst);
    } else {
      for (int64_t c = 0; c < end; c += static_cast<int64_t>(N)) hn::StoreU(rows.Load(d, n0 + j, c), d, dst + c);
      for (int64_t c = end; c < k; ++c) dst[c] = rows.Scalar(n0 + j, c);
    }
  }
}

// The micro-kernel: out[j][r] = Σ_c xt[c][r] · wp[j][c] for MV·lanes rows r, NJ columns j.
template <int MV, int NJ = kNR>
HWY_NOINLINE void Tile(const float* HWY_RESTRICT xt, int64_t tm, const float* HWY_RESTRICT wp, int64_t ks, int64_t k,
                       float* HWY_RESTRICT out) {
  const DF d;
  const size_t N = hn::Lanes(d);
  VF acc[MV][NJ];
  for (int v = 0; v < MV; ++v)
    for (int j = 0; j < NJ; ++j) acc[v][j] = hn::Zero(d);
  for (int64_t c = 0; c < k; ++c) {
    VF xv[MV];
    for (int v = 0; v < MV; ++v) xv[v] = hn::LoadU(d, xt + c * tm + v * N);
    for (int j = 0; j < NJ; ++j) {
      VF wb = hn::Set(d, wp[j * ks + c]);
      for (int v = 0; v < MV; ++v) acc[v][j] = hn::MulAdd(xv[v], wb, acc[v][j]);
    }
  }
  for (int j = 0; j < NJ; ++j)
    for (int v = 0; v < MV; ++v) hn::StoreU(acc[v][j], d, out + j * tm + v * N);
}

void MatmulGemm(const MatmulArgs& a, ThreadPool& pool) {
  if (!LanesAreFixed()) return ScalarFallback(a, pool);
  const int64_t k = a.w->cols(), n = a.w->rows(), m = a.m;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  // Tiles of kMV vectors of rows; with 32 registers, 49..64 rows make one
  // tile of 4 vectors (run as two halves of the panel) rather than a full
  // tile plus a 1-vector one, which is load-bound.
  const int64_t mvt = kMV == 3 && m > 3 * lanes && m <= 4 * lanes ? 4 : kMV;
  const int64_t tm = mvt * lanes;
  const int64_t tiles = (m + tm - 1) / tm;
  thread_local std::vector<float> xt_buf;
  xt_buf.resize(static_cast<size_t>(tiles * tm * k));
  float* xt = xt_buf.data();
  const float* x = a.x;
  int64_t ldx = a.ldx;
  thread_local std::vector<float> xr_buf;
  if (a.w->format() == WeightFormat::Q8 || a.w->format() == WeightFormat::Q4) {
    // Quantized weights see x rounded to 8 bits per group, as in the small-m
    // path (quant.h): the same products, in f32.
    const int64_t G = quant::groups(k);
    xr_buf.resize(static_cast<size_t>(m * k));
    float* xr = xr_buf.data();  // the caller's buffer (the workers have their own thread_locals)
    pool.parallel_for(m, [&](int64_t b, int64_t e, int) {
      thread_local std::vector<int8_t> codes;  // per thread, reused across calls
      thread_local std::vector<float> scales;
      thread_local std::vector<int32_t> sums;
      codes.resize(static_cast<size_t>(G * quant::kGroup));
      scales.resize(static_cast<size_t>(G));
      sums.resize(static_cast<size_t>(G));
      for (int64_t i = b; i < e; ++i) {
        simd::quantize_x(a.x + i * a.ldx, k, {codes.data(), scales.data(), sums.data()});
        float* dst = xr + i * k;
        for (int64_t c = 0; c < k; ++c)
          dst[c] = static_cast<float>(codes[static_cast<size_t>(c)]) * scales[static_cast<size_t>(c / quant::kGroup)];
      }
    });
    x = xr;
    ldx = k;
  }
  pool.parallel_for(tiles, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) PackX(x, m, ldx, k, t * tm, tm, xt + t * tm * k);
  });
  // +16 floats: panel rows 64 bytes off a power-of-two stride, so the kNR
  // broadcast streams do not all fall into the same L1 sets.
  const int64_t ks = quant::padded_cols(k) + 16;
  const int64_t panels = (n + kNR - 1) / kNR;
  // kPanels panels are packed together and each x tile is applied to all of
  // them while they are in L2: x streams from L3 once per group. Threads
  // claim groups one at a time, so a thread the OS deschedules (the machine
  // may be shared) delays only its current group, not a fixed half.
  constexpr int64_t kPanels = 4;
  const int64_t groups = (panels + kPanels - 1) / kPanels;
  std::atomic<int64_t> next{0};
  WithRows(*a.w, [&](const auto& rows) {
    pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
      thread_local std::vector<float> wp_buf, out_buf;
      wp_buf.resize(static_cast<size_t>(kPanels * kNR * ks));
      out_buf.resize(static_cast<size_t>(kNR * tm));
      float* out = out_buf.data();
      for (int64_t grp; (grp = next.fetch_add(1, std::memory_order_relaxed)) < groups;) {
        const int64_t g0 = grp * kPanels, g1 = std::min(panels, g0 + kPanels);
        for (int64_t p = g0; p < g1; ++p) PackW(rows, n, k, p * kNR, wp_buf.data() + (p - g0) * kNR * ks, ks);
        for (int64_t t = 0; t < tiles; ++t) {
          const int64_t m0 = t * tm, valid = std::min(tm, m - m0);
          const int64_t mv = (valid + lanes - 1) / lanes;
          const float* xtt = xt + t * tm * k;
          for (int64_t p = g0; p < g1; ++p) {
            const float* wp = wp_buf.data() + (p - g0) * kNR * ks;
            const int64_t n0 = p * kNR, cols = std::min<int64_t>(kNR, n - n0);
            if (mv == 4 && kMV == 3) {
              Tile<kMV == 3 ? 4 : 1, kNR / 2>(xtt, tm, wp, ks, k, out);
              Tile<kMV == 3 ? 4 : 1, kNR / 2>(xtt, tm, wp + kNR / 2 * ks, ks, k, out + kNR / 2 * tm);
            } else if (mv >= kMV)
              Tile<kMV>(xtt, tm, wp, ks, k, out);
            else if (mv == 2)
              Tile<2>(xtt, tm, wp, ks, k, out);
            else
              Tile<1>(xtt, tm, wp, ks, k, out);
            // Row by row: each y row gets `cols` contiguous floats (one cache
            // line), instead of touching TM lines per column.
            for (int64_t r = 0; r < valid; ++r) {
              float* yr = a.y + (m0 + r) * a.ldy + n0;
              for (int64_t j = 0; j < cols; ++j) yr[j] = out[j * tm + r] + (a.bias ? a.bias[n0 + j] : 0.0f);
            }
          }
        }
      }
    });
  });
}

const char* TargetName() {
#if HWY_TARGET == HWY_AVX3_DL
  if (!__builtin_cpu_supports("avx512vnni")) return "AVX3_DL without VNNI";
#endif
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qvl::simd {

HWY_EXPORT(MatmulSmallM);
HWY_EXPORT(MatmulGemm);

void matmul_small_m(const MatmulArgs& a, ThreadPool& pool) { HWY_DYNAMIC_DISPATCH(MatmulSmallM)(a, pool); }
void matmul_gemm(const MatmulArgs& a, ThreadPool& pool) { HWY_DYNAMIC_DISPATCH(MatmulGemm)(a, pool); }

HWY_EXPORT(TargetName);
const char* matmul_target() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

}  // namespace qvl::simd
#endif
