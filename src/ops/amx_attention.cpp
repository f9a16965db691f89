// Tiled attention on the AMX unit (amx_attention.h), FlashAttention's online
// softmax (Dao et al. 2022) with the two products on tiles:
//
//   per work item (one query head, 16 query rows), per block of 32 keys:
//     S [16][32] = Q·Kᵀ          two C tiles, head_dim in steps of 32 along k
//     m, l, P = 2^(S - m)        AVX-512, rows rescaled by 2^(m_old - m_new)
//     O [16][dh] += P·V          C tiles of 16 columns, the 32 keys as k
//
// Scores are in base 2 (queries pre-multiplied by scale·log2 e), as the
// AVX-512 tiled kernel keeps them. K and V are repacked once per call into
// tdpbf16ps's B layout (B row kk holds, for each of 16 columns, the pair of
// k positions 2kk, 2kk + 1): Kᵀ per (kv head, 16 keys, 32 of head_dim), V
// per (kv head, 32 keys, 16 of head_dim), each part of the split apart. A
// query item's A tiles (Q, then P) are row-major bf16 [16][32] as they are.
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

// kT: rows of every tile (queries per item, keys per Kᵀ tile, pair rows per
// B tile); kStep: bf16 per tile row (head_dim per Q·Kᵀ step, keys per block,
// one P·V step). The AVX-512 steps between the tile products are shared
// with the AVX512-BF16 kernel (attention_steps.h).
using attention_steps::kNegInf;
using attention_steps::kStep;
using attention_steps::kT;
using attention_steps::load_16;
using attention_steps::pack_queries;
using attention_steps::softmax_block;
using attention_steps::split_regs;
constexpr int64_t kTile = kT * kT;  // uint32 pairs per B tile, bf16 pairs per A tile (1 KB)

// The products of parts (a of Q or P, b of K or V) that are added: Exact
// all with a + b <= 2, Fast the one.
struct PartPair {
  int a, b;
};
constexpr PartPair kExactPairs[] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {2, 0}};
constexpr PartPair kFastPairs[] = {{0, 0}};

// Tiles 0-3: C (S's two halves; then four column tiles of P·V); 4: A (a Q
// step or P); 5, 6: B (Kᵀ halves; V column tiles).
TileConfig attention_config() {
  TileConfig c;
  for (int t = 0; t < 7; ++t) c.set(t, kT, 64);
  return c;
}

// K and V of every kv head in B tiles, zero past nkv (keys padded to a
// multiple of 32).
struct PackedKV {
  const uint32_t* k;  // [kv head][key tile of 16][step of 32 dims][part][kk][key]
  const uint32_t* v;  // [kv head][key block of 32][column tile of 16][part][kk][column]
  int64_t key_tiles, steps, blocks, col_tiles, parts;
  const uint32_t* k_tile(int64_t h, int64_t kt, int64_t s, int64_t part) const {
    return k + (((h * key_tiles + kt) * steps + s) * parts + part) * kTile;
  }
  const uint32_t* v_tile(int64_t h, int64_t kb, int64_t ct, int64_t part) const {
    return v + (((h * blocks + kb) * col_tiles + ct) * parts + part) * kTile;
  }
};

// The B tiles of kv head h, keys [32 kb, 32 kb + 32) (zeros past nkv).
// Kᵀ: a key's 32 dims of one step, split, are its 16 pairs in order: one
// vector, scattered down the key's column. V: rows 2kk and 2kk + 1
// interleaved are B row kk.
template <class T>
QVL_AVX512 void pack_kv_block(const T* k, const T* v, const AttentionParams& p, int parts, int64_t h, int64_t kb,
                              const PackedKV& kv, uint32_t* kd, uint32_t* vd) {
  const int64_t dh = p.head_dim;
  const __m512i down = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                          _mm512_set1_epi32(kT));  // B row kk, same column
  for (int64_t key = 0; key < kStep; ++key) {
    const int64_t j = kb * kStep + key;
    const T* row = j < p.nkv ? k + j * p.kv_stride + h * dh : nullptr;
    for (int64_t st = 0; st < kv.steps; ++st) {
      __m256i lo[3] = {}, hi[3] = {};
      if (row) {
        split_regs(load_16(row + st * kStep), parts, lo);
        split_regs(load_16(row + st * kStep + 16), parts, hi);
      }
      for (int part = 0; part < parts; ++part) {
        uint32_t* tile = kd + (((h * kv.key_tiles + 2 * kb + key / kT) * kv.steps + st) * parts + part) * kTile;
        _mm512_i32scatter_epi32(tile + key % kT, down,
                                _mm512_inserti64x4(_mm512_castsi256_si512(lo[part]), hi[part], 1), 4);
      }
    }
  }
  for (int64_t kk = 0; kk < kT; ++kk) {
    const int64_t j = kb * kStep + 2 * kk;
    const T* r0 = j < p.nkv ? v + j * p.kv_stride + h * dh : nullptr;
    const T* r1 = j + 1 < p.nkv ? v + (j + 1) * p.kv_stride + h * dh : nullptr;
    for (int64_t c = 0; c < dh; c += kT) {
      __m256i even[3] = {}, odd[3] = {};
      if (r0) split_regs(load_16(r0 + c), parts, even);
      if (r1) split_regs(load_16(r1 + c), parts, odd);
      for (int part = 0; part < parts; ++part) {
        const __m512i pairs =
            _mm512_or_si512(_mm512_cvtepu16_epi32(even[part]), _mm512_slli_epi32(_mm512_cvtepu16_epi32(odd[part]), 16));
        _mm512_storeu_si512(vd + (((h * kv.blocks + kb) * kv.col_tiles + c / kT) * parts + part) * kTile + kk * kT,
                            pairs);
      }
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
  pool.parallel_for(p.kv_heads * blocks, [&](int64_t b0, int64_t b1, int) {
    for (int64_t item = b0; item < b1; ++item) pack_kv_block(k, v, p, parts, item / blocks, item % blocks, kv, kd, vd);
  });
  return kv;
}

// o [16][dh] rows += c [16][cols] (cols a multiple of 16, c's row stride 64 floats).
QVL_AVX512 void add_columns(float* o, int64_t dh, int64_t col0, const float* c, int64_t cols) {
  for (int64_t r = 0; r < kT; ++r)
    for (int64_t j = 0; j < cols; j += 16) {
      float* dst = o + r * dh + col0 + j;
      _mm512_storeu_ps(dst, _mm512_add_ps(_mm512_loadu_ps(dst), _mm512_loadu_ps(c + r * 64 + j)));
    }
}

// C tile `c` (0-3) of the P·V pass: the tile number must be a constant.
template <class Tiles>
void pv_product(Tiles& t, int c) {
  switch (c) {
    case 0: return t.template dpbf16ps<0, 4, 5>();
    case 1: return t.template dpbf16ps<1, 4, 5>();
    case 2: return t.template dpbf16ps<2, 4, 5>();
    default: return t.template dpbf16ps<3, 4, 5>();
  }
}
template <class Tiles>
void store_c(Tiles& t, int c, float* dst) {
  switch (c) {
    case 0: return t.template store<0>(dst, 256);
    case 1: return t.template store<1>(dst, 256);
    case 2: return t.template store<2>(dst, 256);
    default: return t.template store<3>(dst, 256);
  }
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
  const TileConfig config = attention_config();
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    Tiles t(config);
    ScratchVector<uint16_t> qa(static_cast<size_t>(kv.steps * parts * kT * kStep)),
        pa(static_cast<size_t>(parts * kT * kStep));
    ScratchVector<float> o(static_cast<size_t>(kT * dh)), s(static_cast<size_t>(kT * kStep)),
        c(static_cast<size_t>(kT * 64));
    for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const int64_t h = item / qblocks, i0 = item % qblocks * kT, rows = std::min(kT, p.nq - i0), kvh = h / group;
      pack_queries(q + i0 * p.q_stride + h * dh, rows, p.q_stride, dh, qscale, parts, qa.data());
      // Keys each row sees; rows past nq see what the last one does (their
      // output is dropped, but they must not be empty).
      int64_t end[kT], item_end = 0;
      for (int64_t r = 0; r < kT; ++r) {
        const int64_t i = i0 + std::min(r, rows - 1);
        end[r] = p.causal ? std::clamp<int64_t>(p.q_pos0 + i + 1, 0, p.nkv) : p.nkv;
        item_end = std::max(item_end, end[r]);
      }
      float m[kT], l[kT];
      std::fill(m, m + kT, kNegInf);
      std::fill(l, l + kT, 0.0f);
      std::fill(o.begin(), o.end(), 0.0f);
      for (int64_t j0 = 0; j0 < item_end; j0 += kStep) {
        const int64_t kb = j0 / kStep;
        t.template zero<0>();
        t.template zero<1>();
        for (int64_t st = 0; st < kv.steps; ++st)
          for (int e = 0; e < npairs; ++e) {
            if (e == 0 || pairs[e].a != pairs[e - 1].a)
              t.template load<4>(qa.data() + (st * parts + pairs[e].a) * kTile * 2, 64);
            t.template load<5>(kv.k_tile(kvh, 2 * kb, st, pairs[e].b), 64);
            t.template load<6>(kv.k_tile(kvh, 2 * kb + 1, st, pairs[e].b), 64);
            t.template dpbf16ps<0, 4, 5>();
            t.template dpbf16ps<1, 4, 6>();
          }
        t.template store<0>(s.data(), kStep * 4);
        t.template store<1>(s.data() + kT, kStep * 4);
        int64_t valid[kT];
        for (int64_t r = 0; r < kT; ++r) valid[r] = end[r] - j0;
        softmax_block(s.data(), valid, parts, m, l, o.data(), dh, pa.data());
        for (int64_t ct0 = 0; ct0 < kv.col_tiles; ct0 += 4) {
          const int nc = static_cast<int>(std::min<int64_t>(4, kv.col_tiles - ct0));
          t.template zero<0>();
          t.template zero<1>();
          t.template zero<2>();
          t.template zero<3>();
          for (int e = 0; e < npairs; ++e) {
            if (e == 0 || pairs[e].a != pairs[e - 1].a) t.template load<4>(pa.data() + pairs[e].a * kTile * 2, 64);
            for (int ci = 0; ci < nc; ++ci) {
              t.template load<5>(kv.v_tile(kvh, kb, ct0 + ci, pairs[e].b), 64);
              pv_product(t, ci);
            }
          }
          for (int ci = 0; ci < nc; ++ci) store_c(t, ci, c.data() + ci * kT);
          add_columns(o.data(), dh, ct0 * kT, c.data(), nc * kT);
        }
      }
      for (int64_t r = 0; r < rows; ++r) {
        float* dst = out + (i0 + r) * p.out_stride + h * dh;
        const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
        for (int64_t j = 0; j < dh; ++j) dst[j] = o[r * dh + j] * inv;
      }
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
