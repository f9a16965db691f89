// The AMX bf16 kernel for bf16 weights (amx_matmul.h).
//
// Roles are swapped against y = x·Wᵀ: C = W·xᵀ, so the weights are the A
// tiles and load as they sit in the checkpoint (16 rows × 32 bf16, row
// stride k), and only x is repacked, once per call, into tdpbf16ps's B
// layout (B row kk holds, for each of 16 x rows, the pair of k positions
// 2kk, 2kk + 1). Each C tile [16 weight rows][16 x rows] is transposed into
// y when its sum over k is complete. Register blocking 2 × 2: four C tiles
// (two weight tiles × two x tiles) share two A and two B loads per step of
// 32 along k.
//
// Fast: x rounded to bf16 (scalar::round_bf16, as the vdpbf16ps kernel).
// Exact: x cut into three bf16 parts by truncation, hi = x's top 8
// significand bits, mid = the next 8 of x - hi, lo = the rest (exact: x has
// 24). Each part times a bf16 weight is exact in f32, and C sums the three
// products in f32, so the exact contract of matmul.h holds: f32 activations,
// exact products, f32 sums (in another order than the FMA kernel's). Parts
// below 2^-126 are lost to the unit's DAZ: an absolute error under 2^-126
// per product.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/amx_matmul.h"
#include "ops/amx_tiles.h"
#include "ops/cpu_features.h"
#include "ops/ops.h"
#include "ops/scratch.h"

namespace qvl::amx {

#if QVL_AMX
namespace {

constexpr int64_t kT = 16;    // rows of every tile; x rows per B tile; weight rows per A tile
constexpr int64_t kStep = 32;  // bf16 along k per tile row (64 bytes)
constexpr int64_t kPairRows = 2 * kT;
// Weights, and x, per work item: both held in L2 (2 MB per core on Sapphire
// Rapids and later), so each weight byte fetched from L3 serves up to 8 x
// pairs (256 rows) and each x byte up to 8 weight pairs. Tiles still load
// from L2, 2 KB per 4 tdpbf16ps; k is not sliced to keep them in L1 (not
// measured on AMX yet: issue 15).
constexpr int64_t kItemBytes = 512 << 10;

// Tiles 0-3: C, (weight tile a, x tile b) at 2a + b; 4, 5: A (weights);
// 6, 7: B (x).
TileConfig bf16_config() {
  TileConfig c;
  for (int t = 0; t < kTiles; ++t) c.set(t, kT, 64);
  return c;
}

// x as B tiles: [part][x tile][step][kk][row] pairs of bf16 (uint32), rows
// padded with zeros to a multiple of 32, k to a multiple of 32. The pairs
// live in the calling thread's scratch, kept across calls as the VNNI
// kernel keeps its own: a large image's x is tens of MB, and fresh pages
// on every call would be faulted in and cleared by the kernel each time.
struct XTiles {
  const uint32_t* pairs;
  int64_t parts, tiles, steps;
  const uint32_t* tile(int64_t part, int64_t t, int64_t s) const {
    return pairs + ((part * tiles + t) * steps + s) * kT * kT;
  }
};

// Every element is written, padding included (zeros), so the scratch needs
// no clearing.
XTiles pack_x(const simd::MatmulArgs& a, int parts, ThreadPool& pool) {
  const int64_t k = a.w->cols();
  const int64_t tiles = (a.m + kPairRows - 1) / kPairRows * 2, steps = (k + kStep - 1) / kStep;
  thread_local ScratchVector<uint32_t> scratch;
  scratch.resize(static_cast<size_t>(parts * tiles * steps * kT * kT));
  uint32_t* pairs = scratch.data();  // the caller's: in the lambda, `scratch` would be the worker's own
  pool.parallel_for(tiles * kT, [&](int64_t i0, int64_t i1, int) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* row = i < a.m ? a.x + i * a.ldx : nullptr;  // rows past m are zeros
      for (int64_t c = 0; c < steps * kStep; c += 2) {
        uint16_t even[3] = {0, 0, 0}, odd[3] = {0, 0, 0};
        if (row && c < k) split_bf16(row[c], parts, even);
        if (row && c + 1 < k) split_bf16(row[c + 1], parts, odd);
        for (int p = 0; p < parts; ++p)
          pairs[((p * tiles + i / kT) * steps + c / kStep) * kT * kT + (c % kStep / 2) * kT + i % kT] =
              uint32_t(even[p]) | uint32_t(odd[p]) << 16;
      }
    }
  });
  return {pairs, parts, tiles, steps};
}

// c[2a + b] [16 weight rows][16 x rows] = weight tile a (rows at w[a], row
// stride ws bytes) · x tile xt + b, over all of k.
template <class Tiles>
void pair_times_pair(Tiles& t, const XTiles& x, int64_t xt, const uint16_t* const w[2], int64_t ws, float* c) {
  t.template zero<0>();
  t.template zero<1>();
  t.template zero<2>();
  t.template zero<3>();
  for (int64_t s = 0; s < x.steps; ++s) {
    t.template load<4>(w[0] + s * kStep, ws);
    t.template load<5>(w[1] + s * kStep, ws);
    for (int64_t p = 0; p < x.parts; ++p) {
      t.template load<6>(x.tile(p, xt, s), 64);
      t.template load<7>(x.tile(p, xt + 1, s), 64);
      t.template dpbf16ps<0, 4, 6>();
      t.template dpbf16ps<1, 4, 7>();
      t.template dpbf16ps<2, 5, 6>();
      t.template dpbf16ps<3, 5, 7>();
    }
  }
  t.template store<0>(c + 0 * kT * kT, 64);
  t.template store<1>(c + 1 * kT * kT, 64);
  t.template store<2>(c + 2 * kT * kT, 64);
  t.template store<3>(c + 3 * kT * kT, 64);
}

template <class Tiles>
void gemm_bf16_tiles(const simd::MatmulArgs& a, ThreadPool& pool) {
  const int64_t k = a.w->cols(), n = a.w->rows(), m = a.m;
  const int parts = a.w->precision() == MatmulPrecision::Fast ? 1 : 3;
  const XTiles x = pack_x(a, parts, pool);
  const uint16_t* wd = static_cast<const uint16_t*>(a.w->data());
  const int64_t x_pairs = x.tiles / 2, w_pairs = (n + kPairRows - 1) / kPairRows;
  const int64_t kp = x.steps * kStep;  // k padded
  // Items: (up to `wt` weight pairs, up to `xp` x pairs), each side ~kItemBytes.
  const int64_t wt = std::clamp<int64_t>(kItemBytes / (kPairRows * kp * 2), 1, 8);
  const int64_t xp = std::clamp<int64_t>(kItemBytes / (kPairRows * kp * 2 * parts), 1, 8);
  const int64_t wtiles = (w_pairs + wt - 1) / wt, items = (x_pairs + xp - 1) / xp * wtiles;
  const TileConfig config = bf16_config();
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    Tiles t(config);
    std::vector<uint16_t> padded;  // a weight pair cut short by n or k, zero-filled
    alignas(64) float c[4 * kT * kT];
    for (int64_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < items;) {
      const int64_t w0 = item % wtiles * wt, w1 = std::min(w_pairs, w0 + wt);
      const int64_t x0 = item / wtiles * xp, x1 = std::min(x_pairs, x0 + xp);
      for (int64_t wp = w0; wp < w1; ++wp) {
        const int64_t r0 = wp * kPairRows, rows = std::min(kPairRows, n - r0);
        const uint16_t* w[2];
        int64_t ws;
        if (rows == kPairRows && k % kStep == 0) {  // as stored
          w[0] = wd + r0 * k, w[1] = wd + (r0 + kT) * k, ws = k * 2;
        } else {
          padded.assign(static_cast<size_t>(kPairRows * kp), 0);
          for (int64_t r = 0; r < rows; ++r) std::memcpy(padded.data() + r * kp, wd + (r0 + r) * k, k * 2);
          w[0] = padded.data(), w[1] = padded.data() + kT * kp, ws = kp * 2;
        }
        for (int64_t xq = x0; xq < x1; ++xq) {
          pair_times_pair(t, x, 2 * xq, w, ws, c);
          for (int64_t b = 0; b < 2; ++b)
            for (int64_t j = 0; j < kT && (2 * xq + b) * kT + j < m; ++j) {
              float* y = a.y + ((2 * xq + b) * kT + j) * a.ldy + r0;
              for (int64_t r = 0; r < rows; ++r)
                y[r] = c[(r / kT * 2 + b) * kT * kT + r % kT * kT + j] + (a.bias ? a.bias[r0 + r] : 0.0f);
            }
        }
      }
    }
  });
}

// A fast and an exact product with odd sizes (m, n off 32; k off 32), on
// the unit and emulated. Each output may differ by twice the worst-case
// error of an f32 sum of its products in any order (n·2^-24·Σ|x·w| per
// sum, Higham, Accuracy and Stability, 2nd ed., eq. 4.4; n = k products,
// 3k for the exact split), and otherwise the unit is not used. Returns the
// worst difference as a multiple of that bound.
template <class Unit>
double unit_excess_over_emulation() {
  const int64_t m = 37, n = 40, k = 200;
  std::vector<uint16_t> w(static_cast<size_t>(n * k));
  std::vector<float> x(static_cast<size_t>(m * k));
  uint32_t s = 777;
  auto next = [&] { return (s = s * 1664525u + 1013904223u) >> 8; };
  for (auto& e : w) e = f32_to_bf16(static_cast<float>(next() % 2001) / 1000.0f - 1.0f);
  for (auto& e : x) e = static_cast<float>(next() % 20001) / 10000.0f - 1.0f;
  std::vector<double> abs_dot(static_cast<size_t>(m * n));  // Σ |x·w| per output
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t c = 0; c < k; ++c) abs_dot[i * n + j] += std::fabs(double(x[i * k + c]) * bf16_to_f32(w[j * k + c]));
  ThreadPool one(1);
  double worst = 0;
  for (MatmulPrecision p : {MatmulPrecision::Fast, MatmulPrecision::Exact}) {
    WeightMatrix wm = WeightMatrix::view_bf16(w.data(), n, k);
    wm.set_precision(p);
    std::vector<float> unit(static_cast<size_t>(m * n)), emulated(unit.size());
    gemm_bf16_tiles<Unit>({x.data(), m, k, &wm, nullptr, unit.data(), n}, one);
    gemm_bf16_tiles<EmulatedTiles>({x.data(), m, k, &wm, nullptr, emulated.data(), n}, one);
    const double terms = (p == MatmulPrecision::Exact ? 3 : 1) * double(k);
    std::vector<double> bound(abs_dot.size());
    for (size_t i = 0; i < bound.size(); ++i) bound[i] = 2 * terms * 0x1p-24 * abs_dot[i] + 1e-30;
    worst = std::max(worst, excess_over_emulation(unit, emulated, bound));
  }
  return worst;
}

}  // namespace

const char* bf16_status() {
  static const std::string status = []() -> std::string {
    if (!cpu_features().amx_bf16) return "no AMX-BF16 on this CPU";
    if (!amx_tile_state_granted()) return "tile state not granted by Linux";
    return verdict_on_unit(unit_excess_over_emulation<AmxTiles>());
  }();
  return status.c_str();
}

bool bf16_usable() {
  static const bool used = std::strcmp(bf16_status(), "used") == 0;
  return used;
}

void gemm_bf16(const simd::MatmulArgs& a, ThreadPool& pool) {
  if (!bf16_usable()) fail("matmul: the AMX bf16 kernel is not usable on this machine");
  gemm_bf16_tiles<AmxTiles>(a, pool);
}

void gemm_bf16_emulated(const simd::MatmulArgs& a, ThreadPool& pool) { gemm_bf16_tiles<EmulatedTiles>(a, pool); }

double bf16_check_excess(Bf16Order unit_order) {
  return with_emulated_order(unit_order, []<class Unit>() { return unit_excess_over_emulation<Unit>(); });
}

#else  // not x86-64

const char* bf16_status() { return "not an x86-64 build"; }
bool bf16_usable() { return false; }
void gemm_bf16(const simd::MatmulArgs&, ThreadPool&) { fail("matmul: AMX is x86-64 only"); }
void gemm_bf16_emulated(const simd::MatmulArgs&, ThreadPool&) { fail("matmul: AMX is x86-64 only"); }
double bf16_check_excess(Bf16Order) { fail("matmul: AMX is x86-64 only"); }

#endif

}  // namespace qvl::amx
