// Tiled attention on the AMX unit (amx_attention.h), FlashAttention's online
// softmax (Dao et al. 2022) with the two products on tiles, transposed so
// that query rows are the lanes of the AVX-512 steps between them:
//
//   per work item (one query head, 16 query rows), per block of 32 keys:
//     Sᵀ [32][16] = K·Qᵀ        two C tiles, head_dim in steps of 32 along k
//     m, l, Pᵀ = 2^(Sᵀ - m)     AVX-512, lane-wise (attention_steps.h)
//     Oᵀ [dh][16] += Vᵀ·Pᵀ      C tiles of 16 head dims, the 32 keys as k
//
// Oᵀ stays in C tiles across blocks where head_dim <= 64 (else it goes
// through memory each block, 64 dims at a time); the running maximum is an
// integer that grows lazily, so the rare rescale of O is exact
// (attention_steps::softmax_block_t). Scores are in base 2 (queries
// pre-multiplied by scale·log2 e). K and V are repacked once per call as A
// tiles, each part of the split apart: K row-major [16 keys][32 dims] per
// (kv head, 16 keys, step of 32 dims); Vᵀ [16 dims][16 key pairs] per (kv
// head, 32 keys, 16 dims), each uint32 the pair (v[2t][d], v[2t + 1][d]).
// A query item's B tiles (Qᵀ, then Pᵀ) are packed per item and per block.
#include "ops/amx_attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/amx_tiles.h"
#include "ops/attention_steps.h"
#include "ops/cpu_features.h"
#include "ops/scratch.h"
#include "util/error.h"

#if QVL_AMX
#include <immintrin.h>
#endif

namespace qvl::amx {

bool attention_fits(const AttentionParams& p) { return p.head_dim > 0 && p.head_dim % 32 == 0 && p.head_dim <= 256; }

#if QVL_AMX
namespace {

// kT: rows of every tile (keys per K tile, query rows per item, dims per Vᵀ
// tile); kStep: bf16 per tile row (head_dim per Q·Kᵀ step, keys per block).
// The AVX-512 steps between the tile products are shared with the
// AVX512-BF16 kernel (attention_steps.h).
using attention_steps::kNegInf;
using attention_steps::kStep;
using attention_steps::kT;
using attention_steps::load_16;
using attention_steps::pack_queries_t;
using attention_steps::pack_weights;
using attention_steps::pack_weights_cvt;
using attention_steps::split_32;
using attention_steps::split_pairs;
using attention_steps::softmax_block_t;
using attention_steps::transpose16;
constexpr int64_t kTile = kT * kT;  // uint32 per tile (1 KB)

// The products of parts (a of Q or P, b of K or V) that are added: Exact
// all with a + b <= 2, Fast the one.
struct PartPair {
  int a, b;
};
constexpr PartPair kExactPairs[] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {2, 0}};
constexpr PartPair kFastPairs[] = {{0, 0}};

// Tiles 0, 1: C, Sᵀ of a block's keys [0, 16) and [16, 32); 2-5: C, Oᵀ of
// 16 head dims each; 6: A (K or Vᵀ); 7: B (Qᵀ or Pᵀ).
TileConfig attention_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) c.set(t, kT, 64);
  return c;
}
constexpr int kOTiles = 4;  // head dims 64 at a time

// K and V of every kv head as A tiles, zero past nkv (keys padded to a
// multiple of 32).
struct PackedKV {
  const uint32_t* k;  // [kv head][key tile of 16][step of 32 dims][part][key][32 dims as 16 pairs]
  const uint32_t* v;  // [kv head][key block of 32][dim tile of 16][part][dim][16 key pairs]
  int64_t key_tiles, steps, blocks, col_tiles, parts;
  const uint32_t* k_tile(int64_t h, int64_t kt, int64_t s, int64_t part) const {
    return k + (((h * key_tiles + kt) * steps + s) * parts + part) * kTile;
  }
  const uint32_t* v_tile(int64_t h, int64_t kb, int64_t ct, int64_t part) const {
    return v + (((h * blocks + kb) * col_tiles + ct) * parts + part) * kTile;
  }
};

// The A tiles of kv head h, keys [32 kb, 32 kb + 32) (zeros past nkv). K:
// each key's 32 dims of a step, split, as they are. Vᵀ: rows 2t and 2t + 1
// paired lane by lane give [16 t][16 dims], transposed.
template <class T>
QVL_AVX512 void pack_kv_block(const T* k, const T* v, const AttentionParams& p, int parts, int64_t h, int64_t kb,
                              const PackedKV& kv, uint32_t* kd, uint32_t* vd) {
  const int64_t dh = p.head_dim;
  for (int64_t key = 0; key < kStep; ++key) {
    const int64_t j = kb * kStep + key;
    const T* row = j < p.nkv ? k + j * p.kv_stride + h * dh : nullptr;
    for (int64_t st = 0; st < kv.steps; ++st) {
      __m512i x[3] = {};
      if (row) split_32(load_16(row + st * kStep), load_16(row + st * kStep + 16), parts, x);
      for (int part = 0; part < parts; ++part) {
        uint32_t* dst = kd + (((h * kv.key_tiles + 2 * kb + key / kT) * kv.steps + st) * parts + part) * kTile;
        _mm512_storeu_si512(dst + key % kT * kT, x[part]);
      }
    }
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t c = 0; c < dh; c += kT) {
    __m512i m[3][16];
    for (int64_t t = 0; t < kT; ++t) {
      const int64_t j = kb * kStep + 2 * t;
      const __m512 even = j < p.nkv ? load_16(v + j * p.kv_stride + h * dh + c) : zero;
      const __m512 odd = j + 1 < p.nkv ? load_16(v + (j + 1) * p.kv_stride + h * dh + c) : zero;
      __m512i x[3];
      split_pairs(even, odd, parts, x);
      for (int part = 0; part < parts; ++part) m[part][t] = x[part];
    }
    for (int part = 0; part < parts; ++part) {
      transpose16(m[part]);
      uint32_t* dst = vd + (((h * kv.blocks + kb) * kv.col_tiles + c / kT) * parts + part) * kTile;
      for (int64_t d = 0; d < kT; ++d) _mm512_storeu_si512(dst + d * kT, m[part][d]);
    }
  }
}

template <class T>
PackedKV pack_kv(const T* k, const T* v, const AttentionParams& p, int parts, ThreadPool& pool) {
  const int64_t dh = p.head_dim, blocks = (p.nkv + kStep - 1) / kStep;
  PackedKV kv{nullptr, nullptr, 2 * blocks, dh / kStep, blocks, dh / kT, parts};
  const size_t per_head = static_cast<size_t>(blocks * 2 * kv.steps * parts * kTile);  // K and V alike
  thread_local ScratchVector<uint32_t> k_buf, v_buf;  // the caller's, kept across calls
  k_buf.resize(per_head * static_cast<size_t>(p.kv_heads));
  v_buf.resize(per_head * static_cast<size_t>(p.kv_heads));
  uint32_t* kd = k_buf.data();
  uint32_t* vd = v_buf.data();
  kv.k = kd, kv.v = vd;
  // Heads inner: a thread reads whole rows of K and V, page after page.
  pool.parallel_for(p.kv_heads * blocks, [&](int64_t b0, int64_t b1, int) {
    for (int64_t item = b0; item < b1; ++item)
      pack_kv_block(k, v, p, parts, item % p.kv_heads, item / p.kv_heads, kv, kd, vd);
  });
  return kv;
}

// The tile numbers must be constants: Oᵀ tile 2 + c (c < kOTiles).
template <class Tiles>
void pv_product(Tiles& t, int c) {
  switch (c) {
    case 0: return t.template dpbf16ps<2, 6, 7>();
    case 1: return t.template dpbf16ps<3, 6, 7>();
    case 2: return t.template dpbf16ps<4, 6, 7>();
    default: return t.template dpbf16ps<5, 6, 7>();
  }
}
template <class Tiles>
void store_o(Tiles& t, int c, float* dst) {
  switch (c) {
    case 0: return t.template store<2>(dst, 64);
    case 1: return t.template store<3>(dst, 64);
    case 2: return t.template store<4>(dst, 64);
    default: return t.template store<5>(dst, 64);
  }
}
template <class Tiles>
void load_o(Tiles& t, int c, const float* src) {
  switch (c) {
    case 0: return t.template load<2>(src, 64);
    case 1: return t.template load<3>(src, 64);
    case 2: return t.template load<4>(src, 64);
    default: return t.template load<5>(src, 64);
  }
}

// Oᵀ [dims][16] rows of `lanes` scaled by 2^scale_by (exact).
QVL_AVX512 void rescale_lanes(float* o, int64_t dims, __mmask16 lanes, const float* by) {
  const __m512 scale_by = _mm512_loadu_ps(by);
  for (int64_t d = 0; d < dims; ++d) {
    const __m512 x = _mm512_loadu_ps(o + d * kT);
    _mm512_storeu_ps(o + d * kT, _mm512_mask_scalef_ps(x, lanes, x, scale_by));
  }
}

// out rows [0, rows) (stride out_stride) = Oᵀ [dh][16] transposed, / l.
QVL_AVX512 void write_rows(const float* o, const float* l, int64_t dh, int64_t rows, float* out, int64_t out_stride) {
  const __m512 vl = _mm512_loadu_ps(l);
  const __m512 inv = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(vl, _mm512_setzero_ps(), _CMP_GT_OQ),
                                         _mm512_set1_ps(1.0f), vl);
  for (int64_t c = 0; c < dh; c += kT) {
    __m512i x[16];
    for (int64_t d = 0; d < kT; ++d) x[d] = _mm512_castps_si512(_mm512_mul_ps(_mm512_loadu_ps(o + (c + d) * kT), inv));
    transpose16(x);
    for (int64_t r = 0; r < rows; ++r) _mm512_storeu_ps(out + r * out_stride + c, _mm512_castsi512_ps(x[r]));
  }
}

constexpr int64_t kClaim = 4;  // work items a thread claims at once

// The query rows of item `item` (query head, 16 rows) on their way to L1: an
// item's rows are a head's slice of 16 tokens, each on a page of its own.
void prefetch_rows(const float* q, const AttentionParams& p, int64_t item, int64_t qblocks) {
  const int64_t h = item / qblocks, i0 = item % qblocks * kT, rows = std::min(kT, p.nq - i0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < p.head_dim; c += 16) __builtin_prefetch(q + (i0 + r) * p.q_stride + h * p.head_dim + c);
}

template <class Tiles, class T>
void attention_tiles(const float* q, const T* k, const T* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  if (!attention_fits(p)) fail("attention: the AMX kernel needs head_dim a multiple of 32 up to 256, not ", p.head_dim);
  if (p.nq <= 0) return;
  const bool fast = p.precision == MatmulPrecision::Fast;
  const int parts = fast ? 1 : 3;
  const PartPair* pairs = fast ? kFastPairs : kExactPairs;
  const int npairs = fast ? 1 : 6;
  const int64_t dh = p.head_dim, group = p.q_heads / p.kv_heads;
  const PackedKV kv = pack_kv(k, v, p, parts, pool);
  const float qscale = p.scale * 1.4426950408889634f;  // log2(e)
  const int64_t qblocks = (p.nq + kT - 1) / kT, items = p.q_heads * qblocks;
  const bool resident = kv.col_tiles <= kOTiles;  // Oᵀ kept in tiles 2-5 across blocks
  // Fast's weights to bf16 by vcvtne2ps2bf16 where the CPU has it (every CPU
  // with AMX): the unit and its emulation here take the same path.
  const bool cvt = cpu_features().avx512_bf16;
  const TileConfig config = attention_config();
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    Tiles t(config);
    ScratchVector<uint32_t> qt(static_cast<size_t>(kv.steps * parts * kTile)), pt(static_cast<size_t>(2 * parts * kTile));
    ScratchVector<float> o(static_cast<size_t>(dh * kT)), s(static_cast<size_t>(2 * kStep * kT)),
        w(static_cast<size_t>(kStep * kT)), m(kT), l(kT);
    // Items are claimed kClaim at a time: the atomic add waits for every
    // store before it (the last item's output, tile stores) to complete.
    for (int64_t first; (first = next.fetch_add(kClaim, std::memory_order_relaxed)) < items;)
    for (int64_t item = first; item < std::min(items, first + kClaim); ++item) {
      const int64_t h = item / qblocks, i0 = item % qblocks * kT, rows = std::min(kT, p.nq - i0), kvh = h / group;
      pack_queries_t(q + i0 * p.q_stride + h * dh, rows, p.q_stride, dh, qscale, parts, qt.data());
      if (item + 1 < std::min(items, first + kClaim)) prefetch_rows(q, p, item + 1, qblocks);
      alignas(64) int32_t end[kT];
      const auto [item_end, all_see] = attention_steps::item_keys(p.causal, p.q_pos0, p.nkv, i0, rows, end);
      std::fill(m.begin(), m.end(), kNegInf);
      std::fill(l.begin(), l.end(), 0.0f);
      std::fill(o.begin(), o.end(), 0.0f);
      if (resident)
        for (int c = 0; c < kv.col_tiles; ++c) load_o(t, c, o.data() + c * kTile);
      // Sᵀ of block kb into tiles 0 and 1.
      auto scores = [&](int64_t kb) {
        t.template zero<0>();
        t.template zero<1>();
        for (int64_t st = 0; st < kv.steps; ++st)
          for (int e = 0; e < npairs; ++e) {
            if (e == 0 || pairs[e].a != pairs[e - 1].a) t.template load<7>(qt.data() + (st * parts + pairs[e].a) * kTile, 64);
            t.template load<6>(kv.k_tile(kvh, 2 * kb, st, pairs[e].b), 64);
            t.template dpbf16ps<0, 6, 7>();
            t.template load<6>(kv.k_tile(kvh, 2 * kb + 1, st, pairs[e].b), 64);
            t.template dpbf16ps<1, 6, 7>();
          }
      };
      // Software-pipelined by a block: the next block's Sᵀ is issued to the
      // tile unit before this block's softmax, which runs on the AVX-512
      // units meanwhile (the two share no data), and stored before this
      // block's P·V, so that the next softmax need not wait for that P·V.
      // Sᵀ and Pᵀ alternate between two buffers.
      const int64_t nblocks = (item_end + kStep - 1) / kStep;  // 0 where no key is seen (nkv 0)
      if (nblocks > 0) {
        scores(0);
        t.template store<0>(s.data(), 64);
        t.template store<1>(s.data() + kTile, 64);
      }
      for (int64_t kb = 0; kb < nblocks; ++kb) {
        const int64_t j0 = kb * kStep;
        const float* sb = s.data() + kb % 2 * 2 * kTile;
        if (kb + 1 < nblocks) scores(kb + 1);
        alignas(64) float scale_by[kT];
        const bool full = j0 + kStep <= all_see;
        uint32_t* pb = pt.data() + kb % 2 * parts * kTile;
        const __mmask16 rescale =
            fast ? softmax_block_t<1>(sb, j0, end, full, m.data(), l.data(), w.data(), scale_by)
                 : softmax_block_t<3>(sb, j0, end, full, m.data(), l.data(), w.data(), scale_by);
        if (!fast) pack_weights<3>(w.data(), pb);
        else if (cvt) pack_weights_cvt(w.data(), pb);
        else pack_weights<1>(w.data(), pb);
        if (kb + 1 < nblocks) {
          float* next_s = s.data() + (kb + 1) % 2 * 2 * kTile;
          t.template store<0>(next_s, 64);
          t.template store<1>(next_s + kTile, 64);
        }
        for (int64_t ct0 = 0; ct0 < kv.col_tiles; ct0 += kOTiles) {
          const int nc = static_cast<int>(std::min<int64_t>(kOTiles, kv.col_tiles - ct0));
          float* og = o.data() + ct0 * kTile;
          if (resident && rescale) {
            for (int c = 0; c < nc; ++c) store_o(t, c, og + c * kTile);
            rescale_lanes(og, nc * kT, rescale, scale_by);
            for (int c = 0; c < nc; ++c) load_o(t, c, og + c * kTile);
          } else if (!resident) {
            if (rescale) rescale_lanes(og, nc * kT, rescale, scale_by);
            for (int c = 0; c < nc; ++c) load_o(t, c, og + c * kTile);
          }
          for (int e = 0; e < npairs; ++e) {
            if (e == 0 || pairs[e].a != pairs[e - 1].a) t.template load<7>(pb + pairs[e].a * kTile, 64);
            for (int c = 0; c < nc; ++c) {
              t.template load<6>(kv.v_tile(kvh, kb, ct0 + c, pairs[e].b), 64);
              pv_product(t, c);
            }
          }
          if (!resident)
            for (int c = 0; c < nc; ++c) store_o(t, c, og + c * kTile);
        }
      }
      if (resident)
        for (int c = 0; c < kv.col_tiles; ++c) store_o(t, c, o.data() + c * kTile);
      write_rows(o.data(), l.data(), dh, rows, out + i0 * p.out_stride + h * dh, p.out_stride);
    }
  });
}

// An exact and a fast call with odd sizes (queries and keys off 16 and 32,
// causal, GQA, f16 K/V), on the unit and emulated. Each output may differ by
// what two orders of f32 addition can make of it, and otherwise the unit is
// not used. A score sums n products (n = 6·head_dim for Exact's pairs of
// parts, head_dim for Fast), so any order is within n·2^-24·Σ|q·k| of exact
// (Higham, Accuracy and Stability, 2nd ed., eq. 4.4), with Σ|q·k| at most
// head_dim·max|q|·max|k|. A score off by δ (base 2) scales its weight by
// 2^±δ, which moves the output by at most 2·ln 2·δ·max|v|. Fast then rounds
// each weight to bf16, and a difference may flip a rounding: 2^-8 of each
// weight, at most 2·2^-8·max|v| in all. Returns the worst difference as a
// multiple of that bound.
template <class Unit>
double unit_excess_over_emulation() {
  AttentionParams p;
  p.nq = 37, p.nkv = 70, p.q_heads = 4, p.kv_heads = 2, p.head_dim = 64;
  p.q_stride = p.out_stride = 4 * 64 + 3, p.kv_stride = 2 * 64 + 5;
  p.scale = 0.125f, p.causal = true, p.q_pos0 = 33;
  uint32_t seed = 4242;
  auto next = [&] { return static_cast<float>((seed = seed * 1664525u + 1013904223u) >> 8) / 16777216.0f * 4 - 2; };
  std::vector<float> q(static_cast<size_t>(p.nq * p.q_stride));
  std::vector<uint16_t> k(static_cast<size_t>(p.nkv * p.kv_stride)), v(k.size());
  for (auto& e : q) e = next();
  for (auto& e : k) e = f32_to_f16(next());
  for (auto& e : v) e = f32_to_f16(next());
  constexpr double kMaxAbs = 2, kLn2 = 0.6931471805599453;  // next() is in [-2, 2)
  ThreadPool one(1);
  double worst = 0;
  for (MatmulPrecision precision : {MatmulPrecision::Exact, MatmulPrecision::Fast}) {
    p.precision = precision;
    std::vector<float> unit(q.size(), 0.0f), emulated(q.size(), 0.0f);
    attention_tiles<Unit>(q.data(), k.data(), v.data(), unit.data(), p, one);
    attention_tiles<EmulatedTiles>(q.data(), k.data(), v.data(), emulated.data(), p, one);
    const bool exact = precision == MatmulPrecision::Exact;
    const double n = (exact ? 6.0 : 1.0) * double(p.head_dim);
    // Scores are in base 2: q is scaled by scale·log2 e = scale / ln 2.
    const double score = 2 * n * 0x1p-24 * p.scale / kLn2 * double(p.head_dim) * kMaxAbs * kMaxAbs;
    const double bound = 2 * kLn2 * score * kMaxAbs + (exact ? 0.0 : 2 * 0x1p-8 * kMaxAbs);
    worst = std::max(worst, excess_over_emulation(unit, emulated, std::vector<double>(unit.size(), bound)));
  }
  return worst;
}

}  // namespace

const char* attention_status() {
  static const std::string status = []() -> std::string {
    if (!cpu_features().amx_bf16) return "no AMX-BF16 on this CPU";
    if (!cpu_features().avx512) return "no AVX-512 on this CPU";
    if (!amx_tile_state_granted()) return "tile state not granted by Linux";
    return verdict_on_unit(unit_excess_over_emulation<AmxTiles>());
  }();
  return status.c_str();
}

bool attention_usable() {
  static const bool used = std::strcmp(attention_status(), "used") == 0;
  return used;
}

void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  if (!attention_usable()) fail("attention: the AMX kernel is not usable on this machine");
  attention_tiles<AmxTiles>(q, k, v, out, p, pool);
}
void attention(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
               ThreadPool& pool) {
  if (!attention_usable()) fail("attention: the AMX kernel is not usable on this machine");
  attention_tiles<AmxTiles>(q, k, v, out, p, pool);
}
void attention_emulated(const float* q, const float* k, const float* v, float* out, const AttentionParams& p,
                        ThreadPool& pool) {
  attention_tiles<EmulatedTiles>(q, k, v, out, p, pool);
}
void attention_emulated(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                        ThreadPool& pool) {
  attention_tiles<EmulatedTiles>(q, k, v, out, p, pool);
}

double attention_check_excess(Bf16Order unit_order) {
  return with_emulated_order(unit_order, []<class Unit>() { return unit_excess_over_emulation<Unit>(); });
}

#else  // not x86-64

const char* attention_status() { return "not an x86-64 build"; }
bool attention_usable() { return false; }
void attention(const float*, const float*, const float*, float*, const AttentionParams&, ThreadPool&) {
  fail("attention: AMX is x86-64 only");
}
void attention(const float*, const uint16_t*, const uint16_t*, float*, const AttentionParams&, ThreadPool&) {
  fail("attention: AMX is x86-64 only");
}
void attention_emulated(const float*, const float*, const float*, float*, const AttentionParams&, ThreadPool&) {
  fail("attention: AMX is x86-64 only");
}
void attention_emulated(const float*, const uint16_t*, const uint16_t*, float*, const AttentionParams&, ThreadPool&) {
  fail("attention: AMX is x86-64 only");
}
double attention_check_excess(Bf16Order) { fail("attention: AMX is x86-64 only"); }

#endif

}  // namespace qvl::amx
