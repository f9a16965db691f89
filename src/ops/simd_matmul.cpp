// Highway matmul kernels (see simd_matmul.h), compiled once per SIMD target
// and chosen at run time.
//
// Small m (decode): each weight row is streamed once, a group of 32 weights
// at a time widened to f32 and multiplied into all m rows of x held in L1/L2.
// For q8/q4 with m <= 2 the codes are multiplied unscaled and each group's
// sum is scaled once (fewer vector ops per weight; the twin's order).
// Larger m (prefill): x is packed transposed in tiles of TM rows ([k][TM]),
// a panel of NR weight rows is widened to f32 ([NR][k]), and a register
// micro-kernel keeps TM x NR accumulators (TM/lanes vectors x NR), doing
// TM·NR/lanes FMAs per k for TM/lanes + NR loads.
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_matmul.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/cache_control.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/quant.h"
#include "ops/scalar.h"
#include "ops/simd_matmul.h"

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
  static constexpr bool kQuantized = false;
  const float* w;
  int64_t k;
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
  static constexpr bool kQuantized = false;
  const uint16_t* w;
  int64_t k;
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

struct Q8Rows {
  static constexpr bool kQuantized = true;
  quant::View v;
  template <int V>
  HWY_INLINE void LoadStoredCodes(DF d, int64_t r, int64_t c, VF* out) const { LoadCodes<V>(d, r, c, out); }
  float Offset(DF, int64_t, int) const { return 0.0f; }
  float Scale(int64_t r, int64_t c) const { return v.scales[r * v.groups + c / quant::kGroup]; }
  // The group's integer codes as f32 (exact), without the scale.
  template <int V>
  HWY_INLINE void LoadCodes(DF d, int64_t r, int64_t c, VF* out) const {
    const hn::Rebind<int8_t, DF> di8;
    const hn::Rebind<int32_t, DF> di32;
    const int8_t* q = reinterpret_cast<const int8_t*>(v.quants + r * v.row_bytes + c);
    for (int u = 0; u < V; ++u) out[u] = hn::ConvertTo(d, hn::PromoteTo(di32, hn::LoadU(di8, q + u * hn::Lanes(d))));
  }
  const void* Addr(int64_t r, int64_t c) const { return v.quants + r * v.row_bytes + c; }
  HWY_INLINE VF Load(DF d, int64_t r, int64_t c) const {
    const hn::Rebind<int8_t, DF> di8;
    const hn::Rebind<int32_t, DF> di32;
    auto codes = hn::PromoteTo(di32, hn::LoadU(di8, reinterpret_cast<const int8_t*>(v.quants + r * v.row_bytes + c)));
    return hn::Mul(hn::ConvertTo(d, codes), hn::Set(d, v.scales[r * v.groups + c / quant::kGroup]));
  }
  float Scalar(int64_t, int64_t) const { return 0; }
  int64_t vec_end(size_t) const { return v.groups * quant::kGroup; }  // padded codes are 0
  int64_t group_end() const { return v.groups * quant::kGroup; }
  // The whole group c..c+32 (V vectors), its scale loaded once.
  template <int V>
  HWY_INLINE void LoadGroup(DF d, int64_t r, int64_t c, VF* out) const {
    const hn::Rebind<int8_t, DF> di8;
    const hn::Rebind<int32_t, DF> di32;
    const int8_t* q = reinterpret_cast<const int8_t*>(v.quants + r * v.row_bytes + c);
    const VF s = hn::Set(d, v.scales[r * v.groups + c / quant::kGroup]);
    for (int u = 0; u < V; ++u)
      out[u] = hn::Mul(hn::ConvertTo(d, hn::PromoteTo(di32, hn::LoadU(di8, q + u * hn::Lanes(d)))), s);
  }
};

struct Q4Rows {
  static constexpr bool kQuantized = true;
  quant::View v;
  // Per x row i, per group g: Σ x (set by MatmulSmallM for the few-rows path,
  // which sums stored codes 0..15 and subtracts 8·s·Σx once per row).
  const float* xsum = nullptr;
  int64_t xsum_stride = 0;
  template <int V>
  HWY_INLINE void LoadStoredCodes(DF d, int64_t r, int64_t c, VF* out) const {
    const hn::Rebind<uint8_t, DF> du8;
    const hn::Rebind<int32_t, DF> di32;
    const uint8_t* bytes = v.quants + r * v.row_bytes + c / 2;
    for (int u = 0; u < V / 2; ++u) {
      auto wide = hn::BitCast(di32, hn::PromoteTo(hn::Rebind<uint32_t, DF>(), hn::LoadU(du8, bytes + u * hn::Lanes(d))));
      out[u] = hn::ConvertTo(d, hn::And(wide, hn::Set(di32, 15)));
      out[u + V / 2] = hn::ConvertTo(d, hn::ShiftRight<4>(wide));
    }
  }
  // -8 · Σ_g s_g · xsum[i][g] for row r.
  float Offset(DF d, int64_t r, int i) const {
    const float* sc = v.scales + r * v.groups;
    const float* xs = xsum + i * xsum_stride;
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    VF acc = hn::Zero(d);
    int64_t g = 0;
    for (; g + N <= v.groups; g += N) acc = hn::MulAdd(hn::LoadU(d, sc + g), hn::LoadU(d, xs + g), acc);
    float sum = hn::GetLane(hn::SumOfLanes(d, acc));
    for (; g < v.groups; ++g) sum += sc[g] * xs[g];
    return -8.0f * sum;
  }
  float Scale(int64_t r, int64_t c) const { return v.scales[r * v.groups + c / quant::kGroup]; }
  template <int V>
  HWY_INLINE void LoadCodes(DF d, int64_t r, int64_t c, VF* out) const {
    const hn::Rebind<uint8_t, DF> du8;
    const hn::Rebind<int32_t, DF> di32;
    const uint8_t* bytes = v.quants + r * v.row_bytes + c / 2;
    const auto eight = hn::Set(di32, 8);
    for (int u = 0; u < V / 2; ++u) {
      auto wide = hn::BitCast(di32, hn::PromoteTo(hn::Rebind<uint32_t, DF>(), hn::LoadU(du8, bytes + u * hn::Lanes(d))));
      out[u] = hn::ConvertTo(d, hn::Sub(hn::And(wide, hn::Set(di32, 15)), eight));
      out[u + V / 2] = hn::ConvertTo(d, hn::Sub(hn::ShiftRight<4>(wide), eight));
    }
  }
  const void* Addr(int64_t r, int64_t c) const { return v.quants + r * v.row_bytes + c / 2; }
  HWY_INLINE VF Load(DF d, int64_t r, int64_t c) const {
    const hn::Rebind<uint8_t, DF> du8;
    const hn::Rebind<int32_t, DF> di32;
    const int64_t g = c / quant::kGroup, o = c % quant::kGroup;
    constexpr int64_t half = quant::kGroup / 2;
    // Elements o..o+lanes of the group sit in the low nibbles (o < 16) or the
    // high nibbles (o >= 16) of bytes (o mod 16)..
    const uint8_t* bytes = v.quants + r * v.row_bytes + g * half + (o % half);
    auto wide = hn::BitCast(di32, hn::PromoteTo(hn::Rebind<uint32_t, DF>(), hn::LoadU(du8, bytes)));
    auto code = o < half ? hn::And(wide, hn::Set(di32, 15)) : hn::ShiftRight<4>(wide);
    const float s = v.scales[r * v.groups + g];
    // (code - 8)·s = code·s - 8s
    return hn::MulAdd(hn::ConvertTo(d, code), hn::Set(d, s), hn::Set(d, -8.0f * s));
  }
  float Scalar(int64_t, int64_t) const { return 0; }
  int64_t vec_end(size_t) const { return v.groups * quant::kGroup; }
  int64_t group_end() const { return v.groups * quant::kGroup; }
  // The whole group: each byte load yields a low-nibble vector (elements
  // 0..15) and a high-nibble vector (16..31); scale loaded once.
  template <int V>
  HWY_INLINE void LoadGroup(DF d, int64_t r, int64_t c, VF* out) const {
    const hn::Rebind<uint8_t, DF> du8;
    const hn::Rebind<int32_t, DF> di32;
    const uint8_t* bytes = v.quants + r * v.row_bytes + c / 2;
    const float sc = v.scales[r * v.groups + c / quant::kGroup];
    const VF s = hn::Set(d, sc), bias = hn::Set(d, -8.0f * sc);
    for (int u = 0; u < V / 2; ++u) {
      auto wide = hn::BitCast(di32, hn::PromoteTo(hn::Rebind<uint32_t, DF>(), hn::LoadU(du8, bytes + u * hn::Lanes(d))));
      out[u] = hn::MulAdd(hn::ConvertTo(d, hn::And(wide, hn::Set(di32, 15))), s, bias);
      out[u + V / 2] = hn::MulAdd(hn::ConvertTo(d, hn::ShiftRight<4>(wide)), s, bias);
    }
  }
};

// ---------------------------------------------------------------- small m

constexpr int64_t kPrefetchBytes = 1024;

// R weight rows [n, n+R) against M rows of x (padded with zeros to xs floats
// per row). Accumulators: M·R vectors.
template <int M, int R, class Rows>
HWY_INLINE void SmallBlock(const Rows& rows, const float* x, int64_t xs, int64_t k, int64_t n, const float* bias,
                           float* y, int64_t ldy) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  constexpr int V = static_cast<int>(quant::kGroup / hn::MaxLanes(DF()));  // vectors per group of 32
  VF acc[M][R];
  for (int i = 0; i < M; ++i)
    for (int r = 0; r < R; ++r) acc[i][r] = hn::Zero(d);
  // Whole groups of 32 columns (quantized rows: every group, zero-padded).
  const int64_t end = rows.group_end();
  if constexpr (Rows::kQuantized && M <= 2) {
    // Few x rows: sum code·x per group, then one multiply by the group's
    // scale (the twin's order); cheaper than scaling every weight.
    for (int64_t c = 0; c < end; c += quant::kGroup) {
      for (int r = 0; r < R; ++r) {
        hwy::Prefetch(static_cast<const uint8_t*>(rows.Addr(n + r, c)) + kPrefetchBytes);
        VF codes[V];
        rows.template LoadStoredCodes<V>(d, n + r, c, codes);
        const VF s = hn::Set(d, rows.Scale(n + r, c));
        for (int i = 0; i < M; ++i) {
          VF part = hn::Mul(hn::LoadU(d, x + i * xs + c), codes[0]);
          for (int u = 1; u < V; ++u) part = hn::MulAdd(hn::LoadU(d, x + i * xs + c + u * N), codes[u], part);
          acc[i][r] = hn::MulAdd(part, s, acc[i][r]);
        }
      }
    }
  }
  for (int64_t c = 0; c < end && !(Rows::kQuantized && M <= 2); c += quant::kGroup) {
    VF w[R][V];
    for (int r = 0; r < R; ++r) {
      // Each row is its own short stream; run ahead of the hardware prefetcher.
      hwy::Prefetch(static_cast<const uint8_t*>(rows.Addr(n + r, c)) + kPrefetchBytes);
      rows.template LoadGroup<V>(d, n + r, c, w[r]);
    }
    for (int u = 0; u < V; ++u)
      for (int i = 0; i < M; ++i) {
        const VF xv = hn::LoadU(d, x + i * xs + c + u * N);
        for (int r = 0; r < R; ++r) acc[i][r] = hn::MulAdd(xv, w[r][u], acc[i][r]);
      }
  }
  // f32/bf16 rows: remaining whole vectors, then single columns.
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
    if constexpr (Rows::kQuantized && M <= 2) {
      for (int i = 0; i < M; ++i) tail[i] += rows.Offset(d, n + r, i);
    }
    for (int i = 0; i < M; ++i) y[i * ldy + n + r] = hn::GetLane(hn::SumOfLanes(d, acc[i][r])) + tail[i] + b;
  }
}

template <int M, class Rows>
void SmallRange(const Rows& rows, const float* x, int64_t xs, int64_t k, int64_t n0, int64_t n1, const float* bias,
                float* y, int64_t ldy) {
  // Rows per block: MR accumulators + R·(32/lanes) weight vectors must fit the register file.
  constexpr int R = kMV == 3 ? (M <= 4 ? 4 : 3) : (M <= 2 ? 4 : M <= 4 ? 2 : 1);
  int64_t n = n0;
  for (; n + R <= n1; n += R) SmallBlock<M, R>(rows, x, xs, k, n, bias, y, ldy);
  for (; n < n1; ++n) SmallBlock<M, 1>(rows, x, xs, k, n, bias, y, ldy);
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

template <class F>
void WithRows(const WeightMatrix& w, const F& f) {
  switch (w.format()) {
    case WeightFormat::F32: return f(F32Rows{static_cast<const float*>(w.data()), w.cols()});
    case WeightFormat::BF16: return f(Bf16Rows{static_cast<const uint16_t*>(w.data()), w.cols()});
    case WeightFormat::Q8: return f(Q8Rows{quant::view(w)});
    case WeightFormat::Q4: return f(Q4Rows{quant::view(w)});
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

void MatmulSmallM(const MatmulArgs& a, ThreadPool& pool) {
  if (!LanesAreFixed()) return ScalarFallback(a, pool);
  const int64_t k = a.w->cols();
  // x copied once, zero-padded to whole groups so quantized rows need no tail.
  // Row stride padded 64 bytes off a power of two so x rows do not share L1 sets.
  const int64_t xs = quant::padded_cols(k) + 16;
  thread_local std::vector<float> xpad;
  xpad.assign(static_cast<size_t>(a.m * xs), 0.0f);
  for (int64_t i = 0; i < a.m; ++i) std::memcpy(xpad.data() + i * xs, a.x + i * a.ldx, sizeof(float) * k);
  const float* x = xpad.data();
  if (a.w->format() == WeightFormat::Q4 && a.m <= 2) {
    Q4Rows rows{quant::view(*a.w)};
    thread_local std::vector<float> xsum;
    xsum.resize(static_cast<size_t>(a.m * rows.v.groups));
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t g = 0; g < rows.v.groups; ++g) {
        float sum = 0;
        for (int64_t j = 0; j < quant::kGroup; ++j) sum += x[i * xs + g * quant::kGroup + j];
        xsum[static_cast<size_t>(i * rows.v.groups + g)] = sum;
      }
    rows.xsum = xsum.data();
    rows.xsum_stride = rows.v.groups;
    const int64_t blocks = (a.w->rows() + 3) / 4;
    pool.parallel_for(blocks, [&](int64_t b, int64_t e, int) {
      SmallDispatch(rows, x, a.m, xs, k, b * 4, std::min(a.w->rows(), e * 4), a.bias, a.y, a.ldy);
    });
    return;
  }
  WithRows(*a.w, [&](const auto& rows) {
    // Chunks of 4 rows keep every thread's blocks whole.
    const int64_t blocks = (a.w->rows() + 3) / 4;
    pool.parallel_for(blocks, [&](int64_t b, int64_t e, int) {
      SmallDispatch(rows, x, a.m, xs, k, b * 4, std::min(a.w->rows(), e * 4), a.bias, a.y, a.ldy);
    });
  });
}

// ---------------------------------------------------------------- gemm

// x rows [m0, m0 + TM) transposed to xt [k][TM], rows past m zero.
void PackX(const float* x, int64_t m, int64_t ldx, int64_t k, int64_t m0, float* xt) {
  const int64_t tm = kMV * static_cast<int64_t>(hn::Lanes(DF()));
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
  const int64_t end = rows.vec_end(N);
  for (int64_t j = 0; j < kNR; ++j) {
    float* dst = wp + j * ks;
    if (n0 + j >= n) {
      std::memset(dst, 0, sizeof(float) * ks);
      continue;
    }
    for (int64_t c = 0; c < end; c += static_cast<int64_t>(N)) hn::StoreU(rows.Load(d, n0 + j, c), d, dst + c);
    for (int64_t c = end; c < k; ++c) dst[c] = rows.Scalar(n0 + j, c);
  }
}

// The micro-kernel: out[j][r] = Σ_c xt[c][r] · wp[j][c] for MV·lanes rows r, kNR columns j.
template <int MV>
HWY_NOINLINE void Tile(const float* HWY_RESTRICT xt, int64_t tm, const float* HWY_RESTRICT wp, int64_t ks, int64_t k,
                       float* HWY_RESTRICT out) {
  const DF d;
  const size_t N = hn::Lanes(d);
  VF acc[MV][kNR];
  for (int v = 0; v < MV; ++v)
    for (int j = 0; j < kNR; ++j) acc[v][j] = hn::Zero(d);
  for (int64_t c = 0; c < k; ++c) {
    VF xv[MV];
    for (int v = 0; v < MV; ++v) xv[v] = hn::LoadU(d, xt + c * tm + v * N);
    for (int j = 0; j < kNR; ++j) {
      VF wb = hn::Set(d, wp[j * ks + c]);
      for (int v = 0; v < MV; ++v) acc[v][j] = hn::MulAdd(xv[v], wb, acc[v][j]);
    }
  }
  for (int j = 0; j < kNR; ++j)
    for (int v = 0; v < MV; ++v) hn::StoreU(acc[v][j], d, out + j * tm + v * N);
}

void MatmulGemm(const MatmulArgs& a, ThreadPool& pool) {
  if (!LanesAreFixed()) return ScalarFallback(a, pool);
  const int64_t k = a.w->cols(), n = a.w->rows(), m = a.m;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  const int64_t tm = kMV * lanes;
  const int64_t tiles = (m + tm - 1) / tm;
  thread_local std::vector<float> xt_buf;
  xt_buf.resize(static_cast<size_t>(tiles * tm * k));
  float* xt = xt_buf.data();
  pool.parallel_for(tiles, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) PackX(a.x, m, a.ldx, k, t * tm, xt + t * tm * k);
  });
  // +16 floats: panel rows 64 bytes off a power-of-two stride, so the kNR
  // broadcast streams do not all fall into the same L1 sets.
  const int64_t ks = quant::padded_cols(k) + 16;
  const int64_t panels = (n + kNR - 1) / kNR;
  WithRows(*a.w, [&](const auto& rows) {
    pool.parallel_for(panels, [&](int64_t pb, int64_t pe, int) {
      // kGroup panels are packed together and each x tile is applied to all
      // of them while it is in L2: x streams from L3 once per group.
      constexpr int64_t kPanels = 4;
      thread_local std::vector<float> wp_buf, out_buf;
      wp_buf.resize(static_cast<size_t>(kPanels * kNR * ks));
      out_buf.resize(static_cast<size_t>(kNR * tm));
      float* out = out_buf.data();
      for (int64_t g0 = pb; g0 < pe; g0 += kPanels) {
        const int64_t g1 = std::min(pe, g0 + kPanels);
        for (int64_t p = g0; p < g1; ++p) PackW(rows, n, k, p * kNR, wp_buf.data() + (p - g0) * kNR * ks, ks);
        for (int64_t t = 0; t < tiles; ++t) {
          const int64_t m0 = t * tm, valid = std::min(tm, m - m0);
          const int64_t mv = (valid + lanes - 1) / lanes;
          const float* xtt = xt + t * tm * k;
          for (int64_t p = g0; p < g1; ++p) {
            const float* wp = wp_buf.data() + (p - g0) * kNR * ks;
            const int64_t n0 = p * kNR, cols = std::min<int64_t>(kNR, n - n0);
            if (mv >= kMV)
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

}  // namespace qvl::simd
#endif
