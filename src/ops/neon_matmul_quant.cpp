// The AArch64 q8/q4 block kernels (neon_matmul_quant.h): SDOT and SMMLA on the
// interleaved weight layout (quant.h) as stored. Each function that uses an
// optional instruction is compiled for it alone (a target attribute), and
// called only when cpu_features() says the CPU has it, so one binary runs on
// any AArch64. Speed is untested: the only AArch64 here is qemu (docs/platforms.md).
#include "ops/neon_matmul_quant.h"

#include <algorithm>
#include <utility>

#include "ops/cpu_features.h"
#include "util/error.h"

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_neon.h>
#define QVL_NEON_INT8 1
#else
#define QVL_NEON_INT8 0
#endif

namespace qvl::neon {

bool int8_kernel_available(Int8Kernel k) {
  switch (k) {
    case Int8Kernel::Sdot: return QVL_NEON_INT8 && cpu_features().arm_dotprod;
    case Int8Kernel::Smmla: return QVL_NEON_INT8 && cpu_features().arm_i8mm;
    case Int8Kernel::None: return false;
  }
  return false;
}

Int8Kernel int8_kernel(int64_t m) {
  if (m >= 2 && int8_kernel_available(Int8Kernel::Smmla)) return Int8Kernel::Smmla;
  if (int8_kernel_available(Int8Kernel::Sdot)) return Int8Kernel::Sdot;
  if (int8_kernel_available(Int8Kernel::Smmla)) return Int8Kernel::Smmla;  // I8MM without the dot product: none known
  return Int8Kernel::None;
}

const char* int8_kernel_name(Int8Kernel k) {
  switch (k) {
    case Int8Kernel::Sdot: return "SDOT";
    case Int8Kernel::Smmla: return "SMMLA";
    case Int8Kernel::None: return "none";
  }
  return "none";
}

#if QVL_NEON_INT8
namespace {

constexpr int64_t kRB = quant::kBlockRows;   // 16 weight rows per block
constexpr int64_t kUnitBytes = kRB * quant::kUnit;  // 64: one 4-byte unit of all 16 rows
constexpr int64_t kMaxRows = 8;              // x rows per call (simd::kSmallM)

#define QVL_SDOT_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#define QVL_SMMLA_TARGET __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))

// Prefetches the 4 KB page that starts within [p, p + bytes), if one does:
// one prefetch per page of weights ahead of the reads (as on x86,
// simd_matmul_quant.cpp, where a prefetch per line held decode back).
inline void PrefetchPageStart(const uint8_t* p, int64_t bytes) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t page = (a + static_cast<uintptr_t>(bytes) - 1) & ~(kPage - 1);
  if (page >= a) __builtin_prefetch(reinterpret_cast<const void*>(page), 0, 2);
}
constexpr int64_t kPrefetchBytes = 4096;

// The 16 f16 scales of one (block, group) as f32, rows 4q..4q+3 in sw[q].
inline void LoadScales(const uint16_t* s, float32x4_t sw[4]) {
  const float16x8_t lo = vreinterpretq_f16_u16(vld1q_u16(s)), hi = vreinterpretq_f16_u16(vld1q_u16(s + 8));
  sw[0] = vcvt_f32_f16(vget_low_f16(lo));
  sw[1] = vcvt_high_f32_f16(lo);
  sw[2] = vcvt_f32_f16(vget_low_f16(hi));
  sw[3] = vcvt_high_f32_f16(hi);
}

// Weight codes 4t..4t+3 of rows 4q..4q+3 (16 bytes, row by row) as int8: q8
// as stored; q4 the nibbles of stored unit t & 3, low for t < 4, high for
// t >= 4, as q + 8 in 0..15 (corr takes the 8 back out).
template <bool kQ8>
inline int8x16_t Unit(const uint8_t* gc, int t, int q) {
  if (kQ8) return vld1q_s8(reinterpret_cast<const int8_t*>(gc + t * kUnitBytes + q * 16));
  const uint8x16_t raw = vld1q_u8(gc + (t & 3) * kUnitBytes + q * 16);
  return vreinterpretq_s8_u8(t < 4 ? vandq_u8(raw, vdupq_n_u8(0x0F)) : vshrq_n_u8(raw, 4));
}

// ---- SDOT ----------------------------------------------------------------
// S (1 or 2) x rows from row i0 against the whole block, lane r of dot[s][q]
// being weight row 4q + r: per group 8 units × 4 quads SDOT (by element: x's
// 4 codes of unit t are lane t % 4 of the 16 codes of half t / 4), then per
// quad one conversion, scale and FMA.
template <int T, int S, bool kQ8>
QVL_SDOT_TARGET inline void SdotUnit(const uint8_t* gc, const int8x16_t (&xv)[S][2], int32x4_t (&dot)[S][4]) {
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const int8x16_t w = Unit<kQ8>(gc, T, q);
#pragma GCC unroll 2
    for (int s = 0; s < S; ++s) dot[s][q] = vdotq_laneq_s32(dot[s][q], w, xv[s][T / 4], T % 4);
  }
}

template <int S, bool kQ8, int... T>
QVL_SDOT_TARGET inline void SdotUnits(const uint8_t* gc, const int8x16_t (&xv)[S][2], int32x4_t (&dot)[S][4],
                                      std::integer_sequence<int, T...>) {
  (SdotUnit<T, S, kQ8>(gc, xv, dot), ...);
}

template <int S, bool kQ8>
QVL_SDOT_TARGET void SdotRows(const quant::View& v, int64_t b, const QuantX& x, int64_t i0, float* out) {
  const int64_t G = v.groups, bgb = v.block_group_bytes();
  const uint8_t* codes = v.codes + b * G * bgb;
  const uint16_t* sc = v.scales + b * G * kRB;
  float32x4_t acc[S][4];
  for (int s = 0; s < S; ++s)
    for (int q = 0; q < 4; ++q) acc[s][q] = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < G; ++g) {
    const uint8_t* gc = codes + g * bgb;
    PrefetchPageStart(gc + kPrefetchBytes, bgb);
    int8x16_t xv[S][2];
    int32x4_t dot[S][4];
    for (int s = 0; s < S; ++s) {
      const int8_t* xc = x.codes + (i0 + s) * x.row_stride + g * x.group_stride;
      xv[s][0] = vld1q_s8(xc);
      xv[s][1] = vld1q_s8(xc + 16);
      const int32x4_t start = vdupq_n_s32(kQ8 ? 0 : x.corrs[(i0 + s) * x.srow + g * x.sgroup]);
      for (int q = 0; q < 4; ++q) dot[s][q] = start;
    }
    SdotUnits<S, kQ8>(gc, xv, dot, std::make_integer_sequence<int, 8>{});
    float32x4_t sw[4];
    LoadScales(sc + g * kRB, sw);
    for (int s = 0; s < S; ++s) {
      const float sx = x.scales[(i0 + s) * x.srow + g * x.sgroup];
      for (int q = 0; q < 4; ++q) acc[s][q] = vfmaq_f32(acc[s][q], vcvtq_f32_s32(dot[s][q]), vmulq_n_f32(sw[q], sx));
    }
  }
  for (int s = 0; s < S; ++s)
    for (int q = 0; q < 4; ++q) vst1q_f32(out + (i0 + s) * kRB + q * 4, acc[s][q]);
}

template <bool kQ8>
void SdotBlock(int64_t m, const quant::View& v, int64_t b, const QuantX& x, float* out) {
  int64_t i = 0;
  for (; i + 2 <= m; i += 2) SdotRows<2, kQ8>(v, b, x, i, out);
  if (i < m) SdotRows<1, kQ8>(v, b, x, i, out);
}

// ---- SMMLA ---------------------------------------------------------------
// x rows in pairs (i, i + 1; an odd m's last row paired with zeros), weight
// rows in pairs (2p, 2p + 1), codes in 4 chunks of 8 (chunk c = 8c..8c+7):
// SMMLA multiplies [w_2p chunk c ; w_2p+1 chunk c] by [x_i chunk c ; x_i+1
// chunk c] into lanes [w_2p·x_i, w_2p·x_i+1, w_2p+1·x_i, w_2p+1·x_i+1].
// A weight chunk is two stored units zipped by 32-bit words (rows 4q, 4q+1
// from zip1, rows 4q+2, 4q+3 from zip2); an x chunk is two rows' halves
// zipped by 64-bit words. Each lane is then scaled and summed exactly as
// SDOT's lane for that (x row, weight row).
template <bool kQ8>
QVL_SMMLA_TARGET void SmmlaBlock(int64_t m, const quant::View& v, int64_t b, const QuantX& x, float* out) {
  const int64_t G = v.groups, bgb = v.block_group_bytes();
  const uint8_t* codes = v.codes + b * G * bgb;
  const uint16_t* sc = v.scales + b * G * kRB;
  const int64_t pairs = (m + 1) / 2;
  float32x4_t acc[kMaxRows / 2][8];
  for (int64_t j = 0; j < pairs; ++j)
    for (int p = 0; p < 8; ++p) acc[j][p] = vdupq_n_f32(0.0f);
  for (int64_t g = 0; g < G; ++g) {
    const uint8_t* gc = codes + g * bgb;
    PrefetchPageStart(gc + kPrefetchBytes, bgb);
    // x: chunks, the scales d_x and the starting sums, per pair, in lane order.
    int8x16_t xb[kMaxRows / 2][4];
    float32x4_t sx[kMaxRows / 2];
    int32x4_t start[kMaxRows / 2];
    for (int64_t j = 0; j < pairs; ++j) {
      const int64_t i = 2 * j;
      const bool second = i + 1 < m;
      const int8_t* xa = x.codes + i * x.row_stride + g * x.group_stride;
      const int8_t* xc = second ? xa + x.row_stride : nullptr;
      for (int h = 0; h < 2; ++h) {
        const int64x2_t a = vreinterpretq_s64_s8(vld1q_s8(xa + 16 * h));
        const int64x2_t c = second ? vreinterpretq_s64_s8(vld1q_s8(xc + 16 * h)) : vdupq_n_s64(0);
        xb[j][2 * h] = vreinterpretq_s8_s64(vzip1q_s64(a, c));
        xb[j][2 * h + 1] = vreinterpretq_s8_s64(vzip2q_s64(a, c));
      }
      const float s0 = x.scales[i * x.srow + g * x.sgroup];
      const float s1 = second ? x.scales[(i + 1) * x.srow + g * x.sgroup] : 0.0f;
      const float sl[4] = {s0, s1, s0, s1};
      sx[j] = vld1q_f32(sl);
      if (kQ8) {
        start[j] = vdupq_n_s32(0);
      } else {
        const int32_t c0 = x.corrs[i * x.srow + g * x.sgroup];
        const int32_t c1 = second ? x.corrs[(i + 1) * x.srow + g * x.sgroup] : 0;
        const int32_t cl[4] = {c0, c1, c0, c1};
        start[j] = vld1q_s32(cl);
      }
    }
    float32x4_t sw[4];
    LoadScales(sc + g * kRB, sw);
    for (int q = 0; q < 4; ++q) {
      // Chunks of rows 4q..4q+3: lo[c] rows 4q, 4q+1; hi[c] rows 4q+2, 4q+3.
      int8x16_t lo[4], hi[4];
      for (int c = 0; c < 4; ++c) {
        const int32x4_t u0 = vreinterpretq_s32_s8(Unit<kQ8>(gc, 2 * c, q));
        const int32x4_t u1 = vreinterpretq_s32_s8(Unit<kQ8>(gc, 2 * c + 1, q));
        lo[c] = vreinterpretq_s8_s32(vzip1q_s32(u0, u1));
        hi[c] = vreinterpretq_s8_s32(vzip2q_s32(u0, u1));
      }
      const float32x4_t sw_lo = vzip1q_f32(sw[q], sw[q]), sw_hi = vzip2q_f32(sw[q], sw[q]);
      for (int64_t j = 0; j < pairs; ++j) {
        int32x4_t d0 = start[j], d1 = start[j];
        for (int c = 0; c < 4; ++c) {
          d0 = vmmlaq_s32(d0, lo[c], xb[j][c]);
          d1 = vmmlaq_s32(d1, hi[c], xb[j][c]);
        }
        acc[j][2 * q] = vfmaq_f32(acc[j][2 * q], vcvtq_f32_s32(d0), vmulq_f32(sw_lo, sx[j]));
        acc[j][2 * q + 1] = vfmaq_f32(acc[j][2 * q + 1], vcvtq_f32_s32(d1), vmulq_f32(sw_hi, sx[j]));
      }
    }
  }
  for (int64_t j = 0; j < pairs; ++j) {
    const int64_t i = 2 * j;
    for (int p = 0; p < 8; ++p) {
      float lanes[4];
      vst1q_f32(lanes, acc[j][p]);
      out[i * kRB + 2 * p] = lanes[0];
      out[i * kRB + 2 * p + 1] = lanes[2];
      if (i + 1 < m) {
        out[(i + 1) * kRB + 2 * p] = lanes[1];
        out[(i + 1) * kRB + 2 * p + 1] = lanes[3];
      }
    }
  }
}

}  // namespace

void quant_range(Int8Kernel k, int64_t m, const quant::View& v, const QuantX& x, int64_t b0, int64_t b1, int64_t n,
                 const float* bias, float* y, int64_t ldy) {
  if (!int8_kernel_available(k)) fail("neon::quant_range: ", int8_kernel_name(k), " is not available on this CPU");
  if (m < 1 || m > kMaxRows) fail("neon::quant_range: m = ", m, " (1 to ", kMaxRows, ")");
  alignas(64) float out[kMaxRows * kRB];
  for (int64_t b = b0; b < b1; ++b) {
    if (k == Int8Kernel::Smmla)
      v.q8 ? SmmlaBlock<true>(m, v, b, x, out) : SmmlaBlock<false>(m, v, b, x, out);
    else
      v.q8 ? SdotBlock<true>(m, v, b, x, out) : SdotBlock<false>(m, v, b, x, out);
    for (int64_t r = 0; r < kRB && b * kRB + r < n; ++r) {
      const float bb = bias ? bias[b * kRB + r] : 0.0f;
      for (int64_t i = 0; i < m; ++i) y[i * ldy + b * kRB + r] = out[i * kRB + r] + bb;
    }
  }
}

#else  // not AArch64: int8_kernel_available() is false everywhere

void quant_range(Int8Kernel k, int64_t, const quant::View&, const QuantX&, int64_t, int64_t, int64_t, const float*,
                 float*, int64_t) {
  fail("neon::quant_range: ", int8_kernel_name(k), " needs AArch64");
}

#endif

}  // namespace qvl::neon
