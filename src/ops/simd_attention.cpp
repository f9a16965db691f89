// Highway attention kernels (see simd_attention.h). Online softmax as in
// FlashAttention (Dao et al. 2022): per query row a running max m and sum l;
// a new block of scores rescales the partial output by exp(m_old - m_new).
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_attention.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/cache_control.h"
#include "hwy/contrib/math/math-inl.h"
#include "ops/simd_softmax-inl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "ops/scratch.h"
#include "ops/simd_attention.h"
#include "ops/work_pieces.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// K/V elements are f32 or IEEE f16 (uint16_t bits); f16 is widened exactly on
// load, so every kernel computes the same numbers as on widened f32 K/V.
template <class T>
HWY_INLINE VF LoadKV(DF d, const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(d, p);
  } else {
    const hn::Rebind<hwy::float16_t, DF> d16;
    return hn::PromoteTo(d, hn::LoadU(d16, reinterpret_cast<const hwy::float16_t*>(p)));
  }
}
HWY_INLINE float ScalarKV(float x) { return x; }
HWY_INLINE float ScalarKV(uint16_t x) { return f16_to_f32(x); }

// dst[0..n) = src widened to f32.
template <class T>
void Widen(const T* src, float* dst, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, sizeof(float) * n);
  } else {
    const DF d;
    const int64_t N = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = 0;
    for (; i + N <= n; i += N) hn::StoreU(LoadKV(d, src + i), d, dst + i);
    for (; i < n; ++i) dst[i] = ScalarKV(src[i]);
  }
}

#if QVL_X86_AVX512 || HWY_ARCH_ARM_A64
constexpr int kKV = 4;  // kv vectors per score micro-tile (x 4 query rows)
constexpr int kDV = 4;  // head_dim vectors per output micro-tile (x 4 query rows)
#else
constexpr int kKV = 2;
constexpr int kDV = 2;
#endif
constexpr int kRows = 4;
constexpr int64_t kBq = 32;  // query rows per work item: each pass over a head's K and V (in L2) serves 32 queries
constexpr int64_t kBlockTiles = 4;  // key tiles per softmax block

// y[0..n) = y * a + x * b  (b may be 0 to just scale)
template <class T = float>
void ScaleAdd(float* y, float a, const T* x, float b, int64_t n) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const VF va = hn::Set(d, a), vb = hn::Set(d, b);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::MulAdd(LoadKV(d, x + i), vb, hn::Mul(hn::LoadU(d, y + i), va)), d, y + i);
  for (; i < n; ++i) y[i] = y[i] * a + ScalarKV(x[i]) * b;
}

template <class T>
float Dot(const float* a, const T* b, int64_t n) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  VF s0 = hn::Zero(d), s1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    s0 = hn::MulAdd(hn::LoadU(d, a + i), LoadKV(d, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(d, a + i + N), LoadKV(d, b + i + N), s1);
  }
  for (; i + N <= n; i += N) s0 = hn::MulAdd(hn::LoadU(d, a + i), LoadKV(d, b + i), s0);
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) s += a[i] * ScalarKV(b[i]);
  return s;
}

template <class T>
HWY_INLINE void Prefetch(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 64 / static_cast<int64_t>(sizeof(T))) hwy::Prefetch(p + i);
}

// acc[g] = the lanes whose sum is q_g · k over dh's whole vectors, for the
// G query heads of one kv head (q_g at q + g·dh): two chains, then added.
template <int G, int DH, class T>
HWY_INLINE void DotLanes(const float* q, const T* k, int64_t dh_run, VF* acc) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t dh = DH > 0 ? DH : dh_run;
  VF s0[G], s1[G];
  for (int g = 0; g < G; ++g) s0[g] = s1[g] = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * N <= dh; i += 2 * N) {
    const VF k0 = LoadKV(d, k + i), k1 = LoadKV(d, k + i + N);
    for (int g = 0; g < G; ++g) {
      s0[g] = hn::MulAdd(hn::LoadU(d, q + g * dh + i), k0, s0[g]);
      s1[g] = hn::MulAdd(hn::LoadU(d, q + g * dh + i + N), k1, s1[g]);
    }
  }
  if (i + N <= dh) {
    const VF k0 = LoadKV(d, k + i);
    for (int g = 0; g < G; ++g) s0[g] = hn::MulAdd(hn::LoadU(d, q + g * dh + i), k0, s0[g]);
  }
  for (int g = 0; g < G; ++g) acc[g] = hn::Add(s0[g], s1[g]);
}

// s[g·ss] = Dot(q + g·dh, k, dh) · scale for the G query heads that share one
// kv head (GQA), each bit for bit as Dot computes it, with the key row loaded
// (and widened from f16) once for all of them instead of once per head. DH is
// dh when known at compile time (0: dh at run time).
template <int G, int DH, class T>
HWY_INLINE void DotHeads(const float* q, const T* k, int64_t dh_run, float scale, float* s, int64_t ss) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t dh = DH > 0 ? DH : dh_run;
  VF acc[G];
  DotLanes<G, DH>(q, k, dh, acc);
  for (int g = 0; g < G; ++g) {
    float sum = hn::GetLane(hn::SumOfLanes(d, acc[g]));
    for (int64_t j = dh / N * N; j < dh; ++j) sum += q[g * dh + j] * ScalarKV(k[j]);
    s[g * ss] = sum * scale;
  }
}

// Scores of key rows [0, bk) (row t at k + t·kv_stride) for kv heads
// [kv0, kv1) and their `group` query heads each: s[h·ss + t], h the query
// head, as DotHeads gives them (G = group), or Dot head by head (G = 0, any
// group). The next rows are prefetched `ahead` rows on while t + ahead <
// prefetch_end, and the value rows (row t at v + t·kv_stride) one by one as
// their key rows are scored: the block's values are read right after, and
// fetched this way they arrive while the scores compute (fetching all of
// them at once before the values' pass, 64 rows of prefetches in a burst,
// was 8-15 % slower over 300-2,000 positions). One call per block, so the
// head count and dh are constants inside and the per-row loop keeps its sums
// in registers.
template <int G, int DH, class T>
HWY_NOINLINE void ScoreRows(const float* q, const T* k, int64_t kv_stride, int64_t kv0, int64_t kv1, int64_t dh,
                            int64_t group, int64_t bk, float scale, float* s, int64_t ss, int64_t ahead,
                            int64_t prefetch_end, const T* v) {
  for (int64_t t = 0; t < bk; ++t) {
    const T* krow = k + t * kv_stride;
    if (t + ahead < prefetch_end) Prefetch(krow + ahead * kv_stride + kv0 * dh, (kv1 - kv0) * dh);
    Prefetch(v + t * kv_stride + kv0 * dh, (kv1 - kv0) * dh);
    if constexpr (G > 0) {
      for (int64_t kvh = kv0; kvh < kv1; ++kvh)
        DotHeads<G, DH>(q + kvh * G * dh, krow + kvh * dh, dh, scale, s + kvh * G * ss + t, ss);
    } else {
      for (int64_t h = kv0 * group; h < kv1 * group; ++h)
        s[h * ss + t] = Dot(q + h * dh, krow + h / group * dh, dh) * scale;
    }
  }
}

template <class T>
void ScoreGroup(const float* q, const T* k, int64_t kv_stride, int64_t kv0, int64_t kv1, int64_t dh, int64_t group,
                int64_t bk, float scale, float* s, int64_t ss, int64_t ahead, int64_t prefetch_end, const T* v) {
  auto rows = [&]<int G>() {
    return dh == 128 ? ScoreRows<G, 128>(q, k, kv_stride, kv0, kv1, dh, group, bk, scale, s, ss, ahead, prefetch_end, v)
                     : ScoreRows<G, 0>(q, k, kv_stride, kv0, kv1, dh, group, bk, scale, s, ss, ahead, prefetch_end, v);
  };
  switch (group) {
    case 1: return rows.template operator()<1>();
    case 2: return rows.template operator()<2>();
    case 4: return rows.template operator()<4>();
    case 8: return rows.template operator()<8>();
    default: return ScoreRows<0, 0>(q, k, kv_stride, kv0, kv1, dh, group, bk, scale, s, ss, ahead, prefetch_end, v);
  }
}

// o[g·dh ..] += Σ_t w[g·ws + t] · v[t·vstride ..] for the G query heads that
// share one kv head, t = 0 .. bk-1 in order: per element the operations of
// ScaleAdd(o, 1, v_t, w_t) for t = 0, 1, ..., so bit for bit the same. The
// outputs stay in registers across t (S vectors of each head at a time)
// instead of a load and a store per row, whose store-to-load chain was most
// of decode attention's time, and each v row is widened once for the G heads.
template <int G, int S, class T>
HWY_INLINE void AccumulateHeads(float* o, int64_t dh, const T* v, int64_t vstride, const float* w, int64_t ws,
                                int64_t bk) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t c = 0;
  for (; c + S * N <= dh; c += S * N) {
    VF acc[G][S];
    for (int g = 0; g < G; ++g)
      for (int j = 0; j < S; ++j) acc[g][j] = hn::LoadU(d, o + g * dh + c + j * N);
    for (int64_t t = 0; t < bk; ++t) {
      VF vv[S];
      for (int j = 0; j < S; ++j) vv[j] = LoadKV(d, v + t * vstride + c + j * N);
      for (int g = 0; g < G; ++g) {
        const VF wb = hn::Set(d, w[g * ws + t]);
        for (int j = 0; j < S; ++j) acc[g][j] = hn::MulAdd(vv[j], wb, acc[g][j]);
      }
    }
    for (int g = 0; g < G; ++g)
      for (int j = 0; j < S; ++j) hn::StoreU(acc[g][j], d, o + g * dh + c + j * N);
  }
  if (c < dh)  // columns short of a whole slab (c is a multiple of N): as before
    for (int g = 0; g < G; ++g)
      for (int64_t t = 0; t < bk; ++t) ScaleAdd(o + g * dh + c, 1.0f, v + t * vstride + c, w[g * ws + t], dh - c);
}

template <class T>
void AccumulateGroup(float* o, int64_t dh, const T* v, int64_t vstride, const float* w, int64_t ws, int64_t bk,
                     int64_t group) {
  switch (group) {
    case 2: return AccumulateHeads<2, 4>(o, dh, v, vstride, w, ws, bk);
    case 4: return AccumulateHeads<4, 2>(o, dh, v, vstride, w, ws, bk);
    case 8: return AccumulateHeads<8, 1>(o, dh, v, vstride, w, ws, bk);
    default:
      for (int64_t g = 0; g < group; ++g) AccumulateHeads<1, 4>(o + g * dh, dh, v, vstride, w + g * ws, ws, bk);
  }
}

// ------------------------------------------------------------ tiled

// 2^x for x <= 0: half the work of a general exp, which is a tenth of the
// attention's time otherwise. x = n + f with n = round(x), |f| <= 1/2; 2^f
// from its Taylor series to degree 7 (truncation < 6e-9 relative, below f32
// rounding); 2^n added to the exponent bits. x is clamped at -126, so anything
// smaller (including -inf) gives 2^-126 instead of 0: negligible beside the
// row maximum, which contributes 1.
HWY_INLINE VF Exp2NonPositive(DF d, VF x) {
  const hn::RebindToSigned<DF> di;
  x = hn::Max(x, hn::Set(d, -126.0f));
  const VF n = hn::Round(x);
  const VF f = hn::Sub(x, n);
  VF p = hn::Set(d, 1.5252733804059841e-05f);  // ln2^7 / 7!
  p = hn::MulAdd(p, f, hn::Set(d, 1.5403530393381608e-04f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.3333558146428443e-03f));
  p = hn::MulAdd(p, f, hn::Set(d, 9.6181291076284772e-03f));
  p = hn::MulAdd(p, f, hn::Set(d, 5.5504108664821580e-02f));
  p = hn::MulAdd(p, f, hn::Set(d, 2.4022650695910071e-01f));
  p = hn::MulAdd(p, f, hn::Set(d, 6.9314718055994531e-01f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
  const auto bits = hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::ConvertTo(di, n)));
  return hn::BitCast(d, bits);
}

// x[0..n) = 2^(x - m) (n > 0), x[n .. RoundUp(n, lanes)) = 0; returns the sum.
float Exp2SubSum(float* x, int64_t n, float m) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const VF vm = hn::Set(d, m);
  VF sum = hn::Zero(d);
  int64_t i = 0;
  for (; i + N <= n; i += N) {
    const VF e = Exp2NonPositive(d, hn::Sub(hn::LoadU(d, x + i), vm));
    hn::StoreU(e, d, x + i);
    sum = hn::Add(sum, e);
  }
  if (i < n) {
    const VF e = hn::IfThenElseZero(hn::FirstN(d, static_cast<size_t>(n - i)),
                                    Exp2NonPositive(d, hn::Sub(hn::LoadU(d, x + i), vm)));
    hn::StoreU(e, d, x + i);
    sum = hn::Add(sum, e);
  }
  return hn::GetLane(hn::SumOfLanes(d, sum));
}

// Keys are packed per kv head in tiles of kTile = kKV·lanes positions, each
// tile [dh][kTile] contiguous (16 KB for dh 64 on AVX-512): a score micro-tile
// reads one sequential stream instead of dh rows a whole key row apart.
//
// S[r][0 .. KV·N) = Σ_c Qs[r][c] · Kt[c][..]   for R query rows (R <= kRows).
template <int R, int KV>
HWY_INLINE void ScoreTile(const float* qs, int64_t dh, const float* kt, float* s, int64_t ss) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const int64_t tile = kKV * static_cast<int64_t>(N);
  VF acc[R][KV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < KV; ++v) acc[r][v] = hn::Zero(d);
  for (int64_t c = 0; c < dh; ++c) {
    VF kv[KV];
    for (int v = 0; v < KV; ++v) kv[v] = hn::LoadU(d, kt + c * tile + v * N);
    for (int r = 0; r < R; ++r) {
      const VF qb = hn::Set(d, qs[r * dh + c]);
      for (int v = 0; v < KV; ++v) acc[r][v] = hn::MulAdd(qb, kv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < KV; ++v) hn::StoreU(acc[r][v], d, s + r * ss + v * N);
}

// One key tile against `rows` query rows; only the first `cols` keys are
// needed (the last tile of a head may be partial).
template <int KV>
HWY_INLINE void ScoreTileRows(const float* qs, int64_t rows, int64_t dh, const float* kt, float* s, int64_t ss) {
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) ScoreTile<kRows, KV>(qs + r * dh, dh, kt, s + r * ss, ss);
  for (; r < rows; ++r) ScoreTile<1, KV>(qs + r * dh, dh, kt, s + r * ss, ss);
}

void ScoreKeys(const float* qs, int64_t rows, int64_t dh, const float* kt, int64_t cols, float* s, int64_t ss) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  const int64_t vecs = (cols + N - 1) / N;
  if (vecs >= kKV) return ScoreTileRows<kKV>(qs, rows, dh, kt, s, ss);
  if constexpr (kKV > 2)
    if (vecs == 3) return ScoreTileRows<3 < kKV ? 3 : 1>(qs, rows, dh, kt, s, ss);
  if constexpr (kKV > 1)
    if (vecs == 2) return ScoreTileRows<2 < kKV ? 2 : 1>(qs, rows, dh, kt, s, ss);
  ScoreTileRows<1>(qs, rows, dh, kt, s, ss);
}

// O[r][c0 .. c0 + DV·N) += Σ_t P[r][t] · V[t][c0 ..]   for R rows.
template <int R, int DV>
HWY_INLINE void OutTile(const float* p, int64_t ps, int64_t bk, const float* v, int64_t vs, float* o, int64_t os) {
  const DF d;
  const size_t N = hn::Lanes(d);
  VF acc[R][DV];
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < DV; ++x) acc[r][x] = hn::LoadU(d, o + r * os + x * N);
  for (int64_t t = 0; t < bk; ++t) {
    VF vv[DV];
    for (int x = 0; x < DV; ++x) vv[x] = hn::LoadU(d, v + t * vs + x * N);
    for (int r = 0; r < R; ++r) {
      VF pb = hn::Set(d, p[r * ps + t]);
      for (int x = 0; x < DV; ++x) acc[r][x] = hn::MulAdd(pb, vv[x], acc[r][x]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < DV; ++x) hn::StoreU(acc[r][x], d, o + r * os + x * N);
}

template <int R>
void OutRows(const float* p, int64_t ps, int64_t bk, const float* v, int64_t vs, float* o, int64_t os, int64_t dh) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t c = 0;
  for (; c + kDV * N <= dh; c += kDV * N) OutTile<R, kDV>(p, ps, bk, v + c, vs, o + c, os);
  for (; c + N <= dh; c += N) OutTile<R, 1>(p, ps, bk, v + c, vs, o + c, os);
  for (; c < dh; ++c)
    for (int r = 0; r < R; ++r) {
      float acc = o[r * os + c];
      for (int64_t t = 0; t < bk; ++t) acc += p[r * ps + t] * v[t * vs + c];
      o[r * os + c] = acc;
    }
}

// Scores are kept in base 2: queries are pre-multiplied by scale·log2(e), so
// softmax weights are 2^(s - max) (the same numbers as e^(scale·q·k - max)).
template <class T>
void AttentionTiledT(const float* q, const T* k, const T* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t tile = kKV * N;  // key positions per packed tile / score micro-tile
  const int64_t dh = p.head_dim, group = p.q_heads / p.kv_heads;
  const int64_t tiles = (p.nkv + tile - 1) / tile;
  // Key blocks of kBlockTiles tiles share one softmax rescale. They start at
  // fixed positions (multiples of bk_max), never sized from nkv: a row's max
  // and sum are then taken over the same blocks in the same order whatever
  // the call's length, so a prompt prefilled in pieces gets the bits of one
  // whole call (the engine cuts prompts where it likes).
  const int64_t bk_max = kBlockTiles * tile;
  // Kt [kv_heads][tiles][dh][tile], zero past nkv. Vp [kv_heads][nkv][dh]:
  // each head's value rows packed densely, so a block of rows is not
  // kv_stride (often a multiple of 4 KB) apart, where they would share L1 sets.
  thread_local ScratchVector<float> kt_buf, vp_buf;
  fit_scratch(kt_buf, static_cast<size_t>(p.kv_heads * tiles * dh * tile));
  fit_scratch(vp_buf, static_cast<size_t>(p.kv_heads * p.nkv * dh));
  float* kt = kt_buf.data();
  float* vp = vp_buf.data();
  // One item per tile of positions, all heads: the rows of a tile (a few
  // hundred KB) stay in L2 while each head's 16 KB tile is written in L1.
  pool.parallel_for(tiles, [&](int64_t b, int64_t e, int) {
    thread_local ScratchVector<float> krow_buf;  // one K row widened (f16 K/V)
    krow_buf.resize(static_cast<size_t>(dh));
    for (int64_t jt = b; jt < e; ++jt) {
      const int64_t j0 = jt * tile, j1 = std::min(p.nkv, j0 + tile);
      for (int64_t h = 0; h < p.kv_heads; ++h) {
        float* dst = kt + (h * tiles + jt) * dh * tile;
        for (int64_t j = j0; j < j1; ++j) {
          const T* ksrc = k + j * p.kv_stride + h * dh;
          const float* src;
          if constexpr (std::is_same_v<T, float>) {
            src = ksrc;
          } else {
            Widen(ksrc, krow_buf.data(), dh);
            src = krow_buf.data();
          }
          for (int64_t c = 0; c < dh; ++c) dst[c * tile + (j - j0)] = src[c];
          Widen(v + j * p.kv_stride + h * dh, vp + (h * p.nkv + j) * dh, dh);
        }
        if (j1 - j0 < tile)
          for (int64_t c = 0; c < dh; ++c) std::fill(dst + c * tile + (j1 - j0), dst + (c + 1) * tile, 0.0f);
      }
    }
  });
  const float qscale = p.scale * 1.4426950408889634f;  // log2(e)
  const int64_t qblocks = (p.nq + kBq - 1) / kBq;
  pool.parallel_for(p.q_heads * qblocks, [&](int64_t b, int64_t e, int) {
    thread_local ScratchVector<float> scratch;
    scratch.resize(static_cast<size_t>(2 * kBq * dh + kBq * bk_max + 2 * kBq));
    float* qs = scratch.data();       // [kBq][dh] scaled queries
    float* o = qs + kBq * dh;         // [kBq][dh] unnormalised output
    float* s = o + kBq * dh;          // [kBq][bk_max] scores, then probabilities
    float* m = s + kBq * bk_max;      // [kBq] running max
    float* l = m + kBq;               // [kBq] running sum
    // Query and output rows are a token stride apart (cache misses the
    // hardware prefetcher does not predict): fetch the next item's queries
    // and this item's output lines while the tiles compute.
    auto prefetch_rows = [&](const float* base, int64_t stride, int64_t it) {
      const int64_t hh = it / qblocks, r0 = (it % qblocks) * kBq, nr = std::min(kBq, p.nq - r0);
      for (int64_t r = 0; r < nr; ++r) Prefetch(base + (r0 + r) * stride + hh * dh, dh);
    };
    for (int64_t item = b; item < e; ++item) {
      const int64_t h = item / qblocks, i0 = (item % qblocks) * kBq, rows = std::min(kBq, p.nq - i0);
      const int64_t kvh = h / group;
      if (item + 1 < e) prefetch_rows(q, p.q_stride, item + 1);
      prefetch_rows(out, p.out_stride, item);
      for (int64_t r = 0; r < rows; ++r) {
        const float* src = q + (i0 + r) * p.q_stride + h * dh;
        for (int64_t c = 0; c < dh; ++c) qs[r * dh + c] = src[c] * qscale;
        m[r] = kNegInf;
        l[r] = 0;
      }
      std::fill(o, o + kBq * dh, 0.0f);
      const int64_t kv_end = p.causal ? std::min(p.nkv, p.q_pos0 + i0 + rows) : p.nkv;
      const float* kth = kt + kvh * tiles * dh * tile;
      const float* vh = vp + kvh * p.nkv * dh;
      for (int64_t j0 = 0; j0 < kv_end; j0 += bk_max) {
        const int64_t bk = std::min(bk_max, kv_end - j0);
        for (int64_t jt = 0; jt < bk; jt += tile)
          ScoreKeys(qs, rows, dh, kth + (j0 + jt) * dh, bk - jt, s + jt, bk_max);
        for (int64_t r = 0; r < rows; ++r) {
          float* sr = s + r * bk_max;
          const int64_t valid = p.causal ? std::clamp<int64_t>(p.q_pos0 + i0 + r + 1 - j0, 0, bk) : bk;
          if (valid == 0) {  // row fully masked in this block: contributes nothing
            std::fill(sr, sr + bk, 0.0f);
            continue;
          }
          const float m_new = std::max(m[r], MaxOf(sr, valid));
          const float corr = std::exp2(m[r] - m_new);  // 2^-inf = 0 on the first block
          const float sum = Exp2SubSum(sr, valid, m_new);
          // Causal tail: Exp2SubSum zeroed up to the next whole vector.
          for (int64_t t = (valid + N - 1) / N * N; t < bk; ++t) sr[t] = 0.0f;
          l[r] = l[r] * corr + sum;
          m[r] = m_new;
          if (corr != 1.0f) ScaleAdd(o + r * dh, corr, o + r * dh, 0.0f, dh);
        }
        const float* vb = vh + j0 * dh;
        int64_t r = 0;
        for (; r + kRows <= rows; r += kRows) OutRows<kRows>(s + r * bk_max, bk_max, bk, vb, dh, o + r * dh, dh, dh);
        for (; r < rows; ++r) OutRows<1>(s + r * bk_max, bk_max, bk, vb, dh, o + r * dh, dh, dh);
      }
      for (int64_t r = 0; r < rows; ++r) {
        float* dst = out + (i0 + r) * p.out_stride + h * dh;
        const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
        for (int64_t c = 0; c < dh; ++c) dst[c] = o[r * dh + c] * inv;
      }
    }
  });
}

// ------------------------------------------------------------ rows (decode)

constexpr int64_t kAhead = 8;  // K rows prefetched ahead
constexpr int64_t kRowsBlock = 64, kRowsChunk = 128;
constexpr int64_t kMaxLanes = static_cast<int64_t>(hn::MaxLanes(DF()));

// Split-KV ("flash decoding"): each work item is one query x one chunk of
// up to kRowsChunk positions x one group of kv heads, and walks K and V rows in memory
// order. Items leave partial (max, sum, unnormalised output) per head, merged
// at the end. Chunks are short, so that a context of a few hundred positions
// already gives every thread items of whole rows: one sequential stream of K
// and one of V per item, which the hardware prefetchers follow. (Splitting a
// 512-position chunk by kv heads instead, each thread reading half of every
// row, was 1.3x slower at 300 positions and 1.9x at 1,000: 28 layers of f16
// K/V, 16 query and 8 kv heads of 128, 2 threads on a Zen 5 VM, /tmp
// harness.) Only when chunks are fewer than the threads are heads split into
// groups too. A query's chunks depend on the positions it sees alone (its
// causal end, else nkv) and each head's arithmetic is the same whichever
// group it is in, so the output depends neither on the thread count nor on
// the other queries: a query of a short causal piece equals that query
// decoded alone, bit for bit (kAttentionRowQueries). Nor on the other
// sequences of a batched decode step, whose items share the step's threads
// (AttentionRowsBatchT): one parallel step for all of them, not two each.

// Chunks of up to kRowsChunk positions, an even number of them when there are
// several: three equal items on two threads (257-384 positions, where a
// chat's first answer decodes) left one thread idle for a third of the
// time. Still a function of the positions seen alone.
inline int64_t RowsChunksFor(int64_t seen) {
  const int64_t n = std::max<int64_t>(1, (seen + kRowsChunk - 1) / kRowsChunk);
  return n > 1 ? n + n % 2 : n;
}

// One sequence's share of a rows step: its queries and its own K/V.
template <class T>
struct RowsSeq {
  const float* q;
  const T* k;
  const T* v;
  float* out;
  AttentionParams p;
  int64_t nchunks = 0;     // the most any of its queries has (RowsChunksFor grows with what it sees)
  float* parts = nullptr;  // [nq * nchunks][q_heads * (head_dim + 2)]: o [qh][dh], m [qh], l [qh]
  int64_t part() const { return p.q_heads * (p.head_dim + 2); }
  int64_t seen_by(int64_t i) const { return p.causal ? std::clamp<int64_t>(p.q_pos0 + i + 1, 0, p.nkv) : p.nkv; }
};

// Work item `item` (query x chunk x head group) of one sequence; s: [qh][kRowsBlock] scratch.
template <class T>
void RowsItem(const RowsSeq<T>& sq, int64_t hgroups, int64_t item, float* s) {
  const AttentionParams& p = sq.p;
  const int64_t dh = p.head_dim, group = p.q_heads / p.kv_heads, qh_n = p.q_heads;
  const int64_t qc = item / hgroups, hg = item % hgroups;
  const int64_t i = qc / sq.nchunks, c = qc % sq.nchunks;
  const int64_t kv0 = hg * p.kv_heads / hgroups, kv1 = (hg + 1) * p.kv_heads / hgroups;
  const int64_t h0 = kv0 * group, h1 = kv1 * group;  // this item's query heads
  const int64_t kv_end = sq.seen_by(i);
  const int64_t chunk = (kv_end + RowsChunksFor(kv_end) - 1) / RowsChunksFor(kv_end);
  const int64_t lo = std::min(kv_end, c * chunk), hi = std::min(kv_end, lo + chunk);  // empty past its chunks
  float* o = sq.parts + qc * sq.part();
  float* m = o + qh_n * dh;
  float* l = m + qh_n;
  std::fill(o + h0 * dh, o + h1 * dh, 0.0f);
  for (int64_t h = h0; h < h1; ++h) m[h] = kNegInf, l[h] = 0;
  const float* qi = sq.q + i * p.q_stride;
  for (int64_t j0 = lo; j0 < hi; j0 += kRowsBlock) {
    const int64_t bk = std::min(kRowsBlock, hi - j0);
    ScoreGroup(qi, sq.k + j0 * p.kv_stride, p.kv_stride, kv0, kv1, dh, group, bk, p.scale, s, kRowsBlock, kAhead,
               kv_end - j0,  // on into the next chunk: usually this thread's next item
               sq.v + j0 * p.kv_stride);
    for (int64_t h = h0; h < h1; ++h) {
      float* sh = s + h * kRowsBlock;
      const float m_new = std::max(m[h], MaxOf(sh, bk));
      const float corr = std::exp(m[h] - m_new);
      l[h] = l[h] * corr + ExpSubSum(sh, bk, m_new);
      m[h] = m_new;
      if (corr != 1.0f) ScaleAdd(o + h * dh, corr, o + h * dh, 0.0f, dh);
    }
    for (int64_t kvh = kv0; kvh < kv1; ++kvh)
      AccumulateGroup(o + kvh * group * dh, dh, sq.v + j0 * p.kv_stride + kvh * dh, p.kv_stride,
                      s + kvh * group * kRowsBlock, kRowsBlock, bk, group);
  }
}

// ---- rows, scores laid out [key row][query head]
//
// ScoreRows ends each of its dot products in a reduction across lanes, 16
// per key row with 16 query heads, and in perf of decode at 8 streams x 1,024
// positions (an AMX Xeon, 2 cores) those shuffles were most of its time when
// K/V stayed in L2, and ScoreRows twice AccumulateGroup's time. Here one
// transpose-reduce gives the scores of a row's heads as one vector, and the
// block's softmax runs across heads, lane by lane.

#if HWY_TARGET != HWY_SCALAR
// Horizontal sums of kN vectors at once (a transpose-reduce): lane L of the
// result is the sum of the lanes of x[ReduceSlot(kN, L)], each vector's by
// the same tree whichever slot it is in: halves (lane l + lane l + kN/2),
// then 128-bit blocks' halves, then within a block (0 + 2, 1 + 3), then the
// pair. So a head's score is the same bits whatever heads share its vector,
// and 16 sums cost 15 shuffle-and-add steps instead of 16 reductions.
constexpr int ReduceSlot(int n, int lane) {
  return n == 16  ? 4 * (lane % 4) + (lane / 4 == 1   ? 2
                                      : lane / 4 == 2 ? 1
                                                      : lane / 4)
         : n == 8 ? 2 * (lane % 4) + lane / 4
                  : lane;
}

template <int kN>
HWY_INLINE VF SumsOfLanes(DF d, VF* x) {
  if constexpr (kN >= 8) {
    for (int i = 0; i < kN / 2; ++i)
      x[i] = hn::Add(hn::ConcatLowerLower(d, x[2 * i + 1], x[2 * i]), hn::ConcatUpperUpper(d, x[2 * i + 1], x[2 * i]));
  }
  if constexpr (kN == 16) {
    for (int i = 0; i < 4; ++i) {
      const VF a = x[2 * i], b = x[2 * i + 1];
      x[i] = hn::Add(hn::OddEvenBlocks(hn::SwapAdjacentBlocks(b), a), hn::OddEvenBlocks(b, hn::SwapAdjacentBlocks(a)));
    }
  }
  const hn::Repartition<uint64_t, DF> d64;
  const VF p = hn::Add(hn::InterleaveLower(d, x[0], x[1]), hn::InterleaveUpper(d, x[0], x[1]));
  const VF r = hn::Add(hn::InterleaveLower(d, x[2], x[3]), hn::InterleaveUpper(d, x[2], x[3]));
  const auto p64 = hn::BitCast(d64, p), r64 = hn::BitCast(d64, r);
  return hn::Add(hn::BitCast(d, hn::InterleaveLower(d64, p64, r64)),
                 hn::BitCast(d, hn::InterleaveUpper(d64, p64, r64)));
}

// Lanes per vector when the transpose-reduce applies (4, 8 or 16), else 0.
constexpr int ReduceLanes() {
#if HWY_HAVE_SCALABLE
  return 0;
#else
  constexpr int n = static_cast<int>(hn::MaxLanes(DF()));
  return n == 4 || n == 8 || n == 16 ? n : 0;
#endif
}

// Scores of key rows [0, bk) (row t at k + t·kv_stride) for kv heads
// [kv0, kv1) and their G query heads each: s[t·ss + h - kv0·G] for query
// head h, lanes past the last head 0. Prefetches as ScoreRows.
template <int G, int DH, class T>
HWY_NOINLINE void ScoreRowsT(const float* q, const T* k, int64_t kv_stride, int64_t kv0, int64_t kv1, int64_t dh_run,
                             int64_t bk, float scale, float* s, int64_t ss, int64_t ahead, int64_t prefetch_end,
                             const T* v) {
  constexpr int kN = ReduceLanes(), KVB = kN / G;  // kv heads per vector of scores
  const DF d;
  const int64_t N = kN, dh = DH > 0 ? DH : dh_run, tail = dh % N;
  const VF vscale = hn::Set(d, scale);
  for (int64_t t = 0; t < bk; ++t) {
    const T* krow = k + t * kv_stride;
    if (t + ahead < prefetch_end) Prefetch(krow + ahead * kv_stride + kv0 * dh, (kv1 - kv0) * dh);
    Prefetch(v + t * kv_stride + kv0 * dh, (kv1 - kv0) * dh);
    for (int64_t kb = kv0; kb < kv1; kb += KVB) {
      VF x[kN];
      if (kb + KVB <= kv1) {
        for (int kk = 0; kk < KVB; ++kk) {
          VF a[G];
          DotLanes<G, DH>(q + (kb + kk) * G * dh, krow + (kb + kk) * dh, dh, a);
          for (int g = 0; g < G; ++g) x[ReduceSlot(kN, kk * G + g)] = a[g];
        }
      } else {
        for (int j = 0; j < kN; ++j) x[j] = hn::Zero(d);
        for (int64_t kk = 0; kk < kv1 - kb; ++kk) {
          VF a[G];
          DotLanes<G, DH>(q + (kb + kk) * G * dh, krow + (kb + kk) * dh, dh, a);
          for (int g = 0; g < G; ++g) x[ReduceSlot(kN, static_cast<int>(kk) * G + g)] = a[g];
        }
      }
      VF r = SumsOfLanes<kN>(d, x);
      if (DH == 0 && tail != 0) {  // the columns short of a whole vector, after the lanes
        HWY_ALIGN float rest[kN] = {};
        for (int64_t kk = 0; kk < std::min<int64_t>(KVB, kv1 - kb); ++kk)
          for (int g = 0; g < G; ++g)
            for (int64_t j = dh - tail; j < dh; ++j)
              rest[kk * G + g] += q[((kb + kk) * G + g) * dh + j] * ScalarKV(krow[(kb + kk) * dh + j]);
        r = hn::Add(r, hn::Load(d, rest));
      }
      hn::StoreU(hn::Mul(r, vscale), d, s + t * ss + (kb - kv0) * G);
    }
  }
}

// AccumulateHeadsT on the S vectors of columns at o, v (one slab).
template <int G, int S, class T>
HWY_INLINE void AccumulateSlab(float* o, int64_t dh, const T* v, int64_t vstride, const float* w, int64_t wt,
                               int64_t bk) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  VF acc[G][S];
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < S; ++j) acc[g][j] = hn::LoadU(d, o + g * dh + j * N);
  for (int64_t t = 0; t < bk; ++t) {
    VF vv[S];
    for (int j = 0; j < S; ++j) vv[j] = LoadKV(d, v + t * vstride + j * N);
    for (int g = 0; g < G; ++g) {
      const VF wb = hn::Set(d, w[t * wt + g]);
      for (int j = 0; j < S; ++j) acc[g][j] = hn::MulAdd(vv[j], wb, acc[g][j]);
    }
  }
  for (int g = 0; g < G; ++g)
    for (int j = 0; j < S; ++j) hn::StoreU(acc[g][j], d, o + g * dh + j * N);
}

// o[g·dh ..] += Σ_t w[t·wt + g] · v[t·vstride ..] for the G query heads that
// share one kv head, t = 0 .. bk-1 in order: AccumulateHeads with the
// weights laid out [t][head] (ScoreRowsT's), the outputs in registers across
// t, S vectors of each head at a time.
template <int G, int S, class T>
HWY_INLINE void AccumulateHeadsT(float* o, int64_t dh, const T* v, int64_t vstride, const float* w, int64_t wt,
                                 int64_t bk) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(DF()));
  int64_t c = 0;
  for (; c + S * N <= dh; c += S * N) AccumulateSlab<G, S>(o + c, dh, v + c, vstride, w, wt, bk);
  for (; c + N <= dh; c += N) AccumulateSlab<G, 1>(o + c, dh, v + c, vstride, w, wt, bk);
  if (c < dh)
    for (int g = 0; g < G; ++g)
      for (int64_t t = 0; t < bk; ++t)
        for (int64_t j = c; j < dh; ++j) o[g * dh + j] += ScalarKV(v[t * vstride + j]) * w[t * wt + g];
}

// RowsItem when the transpose-reduce applies (G <= lanes): the block's
// scores [t][head], and its softmax taken across heads, lane by lane.
template <int G, int DH, class T>
void RowsItemT(const RowsSeq<T>& sq, int64_t hgroups, int64_t item, float* scratch) {
  constexpr int kN = ReduceLanes();
  const DF d;
  const AttentionParams& p = sq.p;
  const int64_t dh = p.head_dim, qh_n = p.q_heads;
  const int64_t qc = item / hgroups, hg = item % hgroups;
  const int64_t i = qc / sq.nchunks, c = qc % sq.nchunks;
  const int64_t kv0 = hg * p.kv_heads / hgroups, kv1 = (hg + 1) * p.kv_heads / hgroups;
  const int64_t h0 = kv0 * G, nh = (kv1 - kv0) * G;  // this item's query heads h0 .. h0 + nh
  const int64_t hp = (nh + kN - 1) / kN * kN;        // padded to whole vectors
  const int64_t kv_end = sq.seen_by(i);
  const int64_t chunk = (kv_end + RowsChunksFor(kv_end) - 1) / RowsChunksFor(kv_end);
  const int64_t lo = std::min(kv_end, c * chunk), hi = std::min(kv_end, lo + chunk);
  float* s = scratch;                              // [kRowsBlock][hp] scores, then weights
  float* m = s + kRowsBlock * hp;                  // [hp] running max
  float* l = m + hp;                               // [hp] running sum
  float* corr = l + hp;                            // [hp] this block's rescale
  float* o = sq.parts + qc * sq.part() + h0 * dh;  // [nh][dh]
  std::fill(o, o + nh * dh, 0.0f);
  std::fill(m, m + hp, kNegInf);
  std::fill(l, l + hp, 0.0f);
  const float* qi = sq.q + i * p.q_stride + h0 * dh;
  const VF neg_inf = hn::Set(d, kNegInf);
  for (int64_t j0 = lo; j0 < hi; j0 += kRowsBlock) {
    const int64_t bk = std::min(kRowsBlock, hi - j0);
    const T* kb = sq.k + j0 * p.kv_stride;
    const T* vb = sq.v + j0 * p.kv_stride;
    ScoreRowsT<G, DH>(qi - kv0 * G * dh, kb, p.kv_stride, kv0, kv1, dh, bk, p.scale, s, hp, kAhead, kv_end - j0, vb);
    for (int64_t hc = 0; hc < hp; hc += kN) {
      VF bm = neg_inf;
      for (int64_t t = 0; t < bk; ++t) bm = hn::Max(bm, hn::LoadU(d, s + t * hp + hc));
      const VF m_old = hn::LoadU(d, m + hc), m_new = hn::Max(m_old, bm);
      VF sum = hn::Zero(d);
      for (int64_t t = 0; t < bk; ++t) {
        const VF e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + t * hp + hc), m_new));
        hn::StoreU(e, d, s + t * hp + hc);
        sum = hn::Add(sum, e);
      }
      const VF cr = hn::IfThenZeroElse(hn::Eq(m_old, neg_inf), hn::Exp(d, hn::Sub(m_old, m_new)));
      hn::StoreU(hn::Add(hn::Mul(hn::LoadU(d, l + hc), cr), sum), d, l + hc);
      hn::StoreU(m_new, d, m + hc);
      hn::StoreU(cr, d, corr + hc);
    }
    for (int64_t h = 0; h < nh; ++h)
      if (corr[h] != 1.0f) ScaleAdd(o + h * dh, corr[h], o + h * dh, 0.0f, dh);
    for (int64_t kvh = kv0; kvh < kv1; ++kvh) {
      const int64_t r = (kvh - kv0) * G;
      float* oh = o + r * dh;
      const T* vh = vb + kvh * dh;
      if constexpr (G == 1) AccumulateHeadsT<1, 4>(oh, dh, vh, p.kv_stride, s + r, hp, bk);
      else if constexpr (G == 2) AccumulateHeadsT<2, 4>(oh, dh, vh, p.kv_stride, s + r, hp, bk);
      else if constexpr (G == 4) AccumulateHeadsT<4, 2>(oh, dh, vh, p.kv_stride, s + r, hp, bk);
      else AccumulateHeadsT<G, 1>(oh, dh, vh, p.kv_stride, s + r, hp, bk);
    }
  }
  float* pm = sq.parts + qc * sq.part() + qh_n * dh;
  float* pl = pm + qh_n;
  for (int64_t h = 0; h < nh; ++h) pm[h0 + h] = m[h], pl[h0 + h] = l[h];
}

#endif  // HWY_TARGET != HWY_SCALAR

// The work item by the rows kernel that fits its GQA group.
template <class T>
void RowsItemAny(const RowsSeq<T>& sq, int64_t hgroups, int64_t item, float* s) {
#if HWY_TARGET != HWY_SCALAR
  constexpr int kN = ReduceLanes();
  const int64_t group = sq.p.q_heads / sq.p.kv_heads;
  auto fast = [&]<int G>() {
    return sq.p.head_dim == 128 ? RowsItemT<G, 128>(sq, hgroups, item, s) : RowsItemT<G, 0>(sq, hgroups, item, s);
  };
  if constexpr (kN > 0) {
    if (group == 1) return fast.template operator()<1>();
    if (group == 2) return fast.template operator()<2>();
    if (group == 4) return fast.template operator()<4>();
    if constexpr (kN >= 8)
      if (group == 8) return fast.template operator()<8>();
  }
#endif
  RowsItem(sq, hgroups, item, s);
}

// Merges the chunks of (query, head) `item` of one sequence: weights exp(m_c - M).
template <class T>
void RowsMerge(const RowsSeq<T>& sq, int64_t item) {
  const AttentionParams& p = sq.p;
  const int64_t dh = p.head_dim, qh_n = p.q_heads, part = sq.part(), nchunks = sq.nchunks;
  const float* parts = sq.parts;
  const int64_t i = item / qh_n, h = item % qh_n;
  float mx = kNegInf;
  for (int64_t c = 0; c < nchunks; ++c) mx = std::max(mx, parts[(i * nchunks + c) * part + qh_n * dh + h]);
  float* dst = sq.out + i * p.out_stride + h * dh;
  std::fill(dst, dst + dh, 0.0f);
  if (mx == kNegInf) return;  // no visible position
  float total = 0;
  for (int64_t c = 0; c < nchunks; ++c) {
    const float* pc = parts + (i * nchunks + c) * part;
    const float mc = pc[qh_n * dh + h];
    if (mc == kNegInf) continue;
    const float w = std::exp(mc - mx);
    total += w * pc[qh_n * dh + qh_n + h];
    ScaleAdd(dst, 1.0f, pc + h * dh, w, dh);
  }
  ScaleAdd(dst, 1.0f / total, dst, 0.0f, dh);
}

// Every sequence's items in one run over the threads, then every merge in
// one more: a batched decode step's attention costs two parallel steps per
// layer whatever the number of streams.
template <class T>
void AttentionRowsBatchT(std::span<RowsSeq<T>> seqs, ThreadPool& pool) {
  int64_t units = 0, parts_size = 0, min_kv_heads = std::numeric_limits<int64_t>::max();
  for (RowsSeq<T>& sq : seqs) {
    sq.nchunks = RowsChunksFor(sq.p.nkv);
    units += sq.nchunks * sq.p.nq;
    parts_size += sq.p.nq * sq.nchunks * sq.part();
    min_kv_heads = std::min(min_kv_heads, sq.p.kv_heads);
  }
  if (units == 0) return;
  const int64_t hgroups = std::clamp<int64_t>((pool.size() + units - 1) / units, 1, min_kv_heads);
  thread_local ScratchVector<float> parts_buf;
  parts_buf.resize(static_cast<size_t>(parts_size));
  thread_local std::vector<WorkPiece> items;
  thread_local std::vector<int64_t> merge_start;  // [seqs + 1] first merge of each sequence
  items.clear();
  merge_start.assign(1, 0);
  float* parts = parts_buf.data();
  for (size_t si = 0; si < seqs.size(); ++si) {
    RowsSeq<T>& sq = seqs[si];
    sq.parts = parts;
    parts += sq.p.nq * sq.nchunks * sq.part();
    // Items of unequal cost (the last chunk is short, a causal query's later
    // chunks empty): shared out as the threads go.
    for (int64_t i = 0; i < sq.p.nq * sq.nchunks * hgroups; ++i) items.push_back({static_cast<int>(si), i, i + 1});
    merge_start.push_back(merge_start.back() + sq.p.nq * sq.p.q_heads);
  }
  run_pieces(pool, items, [&](const WorkPiece& piece) {
    const RowsSeq<T>& sq = seqs[static_cast<size_t>(piece.product)];
    thread_local ScratchVector<float> scratch;
    scratch.resize(static_cast<size_t>((sq.p.q_heads + kMaxLanes) * (kRowsBlock + 3)));  // RowsItemT's
    RowsItemAny(sq, hgroups, piece.begin, scratch.data());
  });
  // The caller's thread_local, by reference: named in the lambda, each
  // thread would see its own.
  const std::vector<int64_t>& starts = merge_start;
  pool.parallel_for(starts.back(), [&](int64_t b, int64_t e, int) {
    size_t si = 0;
    for (int64_t item = b; item < e; ++item) {
      while (item >= starts[si + 1]) ++si;
      RowsMerge(seqs[si], item - starts[si]);
    }
  });
}

template <class T>
void AttentionRowsT(const float* q, const T* k, const T* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  RowsSeq<T> one{q, k, v, out, p};
  AttentionRowsBatchT(std::span<RowsSeq<T>>(&one, 1), pool);
}

// The jobs by K/V type, each type's in one batch.
void AttentionRowsBatch(const AttentionJob* jobs, int64_t n, ThreadPool& pool) {
  thread_local std::vector<RowsSeq<float>> f32;
  thread_local std::vector<RowsSeq<uint16_t>> f16;
  f32.clear();
  f16.clear();
  for (int64_t i = 0; i < n; ++i) {
    const AttentionJob& j = jobs[i];
    if (j.k16) f16.push_back({j.q, j.k16, j.v16, j.out, j.p});
    else f32.push_back({j.q, j.k, j.v, j.out, j.p});
  }
  if (!f32.empty()) AttentionRowsBatchT(std::span<RowsSeq<float>>(f32), pool);
  if (!f16.empty()) AttentionRowsBatchT(std::span<RowsSeq<uint16_t>>(f16), pool);
}

void AttentionTiled(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                    ThreadPool& pool) {
  AttentionTiledT(q, k, v, out, p, pool);
}
void AttentionTiledF16(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                       ThreadPool& pool) {
  AttentionTiledT(q, k, v, out, p, pool);
}
void AttentionRows(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                   ThreadPool& pool) {
  AttentionRowsT(q, k, v, out, p, pool);
}
void AttentionRowsF16(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                      ThreadPool& pool) {
  AttentionRowsT(q, k, v, out, p, pool);
}

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qvl::simd {

HWY_EXPORT(AttentionTiled);
HWY_EXPORT(AttentionRows);
HWY_EXPORT(AttentionTiledF16);
HWY_EXPORT(AttentionRowsF16);
HWY_EXPORT(AttentionRowsBatch);

void attention_rows_batch(std::span<const AttentionJob> jobs, ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(AttentionRowsBatch)(jobs.data(), static_cast<int64_t>(jobs.size()), pool);
}

void attention_tiled(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                     ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(AttentionTiled)(q, k, v, out, p, pool);
}
void attention_rows(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                    ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(AttentionRows)(q, k, v, out, p, pool);
}

void attention_tiled(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                     ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(AttentionTiledF16)(q, k, v, out, p, pool);
}
void attention_rows(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                    ThreadPool& pool) {
  HWY_DYNAMIC_DISPATCH(AttentionRowsF16)(q, k, v, out, p, pool);
}

}  // namespace qvl::simd
#endif
