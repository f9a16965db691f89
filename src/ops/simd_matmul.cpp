// Highway matmul kernels for f32 and bf16 weights (see simd_matmul.h),
// compiled once per SIMD target and chosen at run time; q8/q4 weights go to
// simd_matmul_quant.cpp.
//
// Small m (decode): each weight row is streamed once, a group of 32 weights
// at a time widened to f32 and multiplied into all m rows of x held in L1/L2
// (m = 1: one row at a time, so a thread reads one sequential stream).
// Larger m (prefill): x is packed transposed in tiles of TM rows ([k][TM]),
// a panel of NR weight rows is widened to f32 ([NR][k]), and a register
// micro-kernel keeps TM x NR accumulators (TM/lanes vectors x NR), doing
// TM·NR/lanes FMAs per k for TM/lanes + NR loads.
//
// Every output row's value depends only on its x row, never on m or on the
// other rows (same per-row operation order for m = 1..kSmallM), so requests
// decoded together get the results they would get alone.
#include "ops/simd_config.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/simd_matmul.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/cache_control.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/cpu_features.h"
#include "ops/quant.h"
#include "ops/scalar.h"
#include "ops/scratch.h"
#include "ops/simd_matmul.h"
#include "ops/work_pieces.h"

HWY_BEFORE_NAMESPACE();
namespace qvl {
namespace simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::CappedTag<float, 16>;  // <= 16 lanes so a group of 32 columns is whole vectors
using VF = hn::Vec<DF>;

#if QVL_X86_AVX512 || HWY_ARCH_ARM_A64
constexpr int kMV = 3, kNR = 8;  // 32 registers: 24 accumulators
#else
constexpr int kMV = 2, kNR = 6;  // 16 registers: 12 accumulators
#endif

// How decode prefetches f32/bf16 weights (PrefetchWeights).
enum class WeightPrefetch { NtaLines, PageStarts };

// Reads weight row r as f32 vectors: Load(r, c) for c a multiple of the lane
// count. `vec_end` is how far whole vectors go; columns past it (f32/bf16
// tails) come from Scalar(r, c).
struct F32Rows {
  static constexpr int64_t kBytes = 4;
  const float* w;
  int64_t k, n;  // [n, k]
  WeightPrefetch prefetch;  // decode's (small m)
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
  WeightPrefetch prefetch;  // decode's (small m)
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

// ---------------------------------------------------------------- small m, f32/bf16

constexpr int64_t kPrefetchBytes = 4096;

// Weights are read once per token, and how to prefetch them was measured to
// differ between microarchitectures (2 threads, 512 MB of bf16 weights
// against the read probe over the same bytes):
// - Zen 5 (a standalone harness): every line non-temporally (prefetchnta),
//   so it passes through without evicting x from L1: 0.88-0.94 (k = 2048),
//   0.82-0.87 (k = 6144, one row at a time); 0.61-0.80 with prefetcht0,
//   with one prefetcht1 per page, or with none.
// - Zen 4 (bench/ops_decode_stream --format bf16, 4 alternating runs of 5
//   rounds): prefetchnta of every line 0.63-0.67; prefetcht1 of each 4 KB
//   page's first line, as the q8/q4 kernel does everywhere, 0.84-0.88; both
//   0.64-0.70.
// So NTA lines on AMD family 0x1A and later, where they were measured best,
// and a page start into L2 elsewhere (the q8/q4 kernel's scheme, measured
// best for those formats on Zen 5 too).
WeightPrefetch ChooseWeightPrefetch() {
  const CpuFeatures& cpu = cpu_features();
  return cpu.amd && cpu.family >= 0x1A ? WeightPrefetch::NtaLines : WeightPrefetch::PageStarts;
}

// `p` is the next line of a row to prefetch (kPrefetchBytes ahead of the
// reads); with PageStarts only a line that starts a 4 KB page is fetched.
HWY_INLINE void PrefetchWeights(const uint8_t* p, WeightPrefetch how) {
  if (how == WeightPrefetch::NtaLines) return __builtin_prefetch(p, 0, 0);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t page = (a + 63) & ~uintptr_t{4095};
  if (page >= a) __builtin_prefetch(reinterpret_cast<const void*>(page), 0, 2);
}

// Accumulators per (x row, weight row) pair: four. A row multiplied alone
// (m = 1) is a chain of FMAs, each waiting on the last (4 cycles on Zen 5):
// with two chains the AVX-512 kernel ran at 60-71 GB/s a core from L2, too
// close to the 40+ a core must draw from memory to keep up; with four (two
// groups of 32 columns per step), at 90-93. The AVX2 kernel with one chain
// ran bf16 decode at 30 GB/s on 2 cores (the loop is 4 FMAs into one
// register per 64 bytes).
constexpr int kAcc = 4;
constexpr int kV = static_cast<int>(quant::kGroup / hn::MaxLanes(DF()));  // vectors per group of 32
// Groups per step of SmallBlock's loop, each feeding its own chains.
constexpr int kGroupsPerStep = kAcc > kV ? kAcc / kV : 1;

// Columns [c, c + 32) of weight rows [n, n + R) against M rows of x into
// acc, vector u of the group to chain (G·V + u) mod kAcc. `pf` is the
// address to prefetch for row n; row n + r's is r·row_bytes further.
template <int M, int R, int G, class Rows>
HWY_INLINE void SmallGroup(const Rows& rows, const float* x, int64_t xs, int64_t n, int64_t c, const uint8_t* pf,
                           int64_t row_bytes, VF (&acc)[M][R][kAcc]) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  VF w[R][kV];
  for (int r = 0; r < R; ++r) {
    PrefetchWeights(pf + r * row_bytes, rows.prefetch);
    rows.template LoadGroup<kV>(d, n + r, c, w[r]);
  }
  for (int u = 0; u < kV; ++u) {
    const int a = (G * kV + u) % kAcc;
    for (int i = 0; i < M; ++i) {
      const VF xv = hn::LoadU(d, x + i * xs + c + u * N);
      for (int r = 0; r < R; ++r) acc[i][r][a] = hn::MulAdd(xv, w[r][u], acc[i][r][a]);
    }
  }
}

constexpr int64_t kStep = kGroupsPerStep * quant::kGroup;  // columns per step of SmallBlock's loop

// Columns [lo, hi) of the weight rows, for x too large for L1 (SmallRange):
// lo a multiple of kStep, hi too or k, and each chain's partial sums carried
// from slice to slice in `carry` (M·R·kAcc vectors), so every sum is added
// in the same order as in one pass over the whole row.
struct ColumnSlice {
  int64_t lo = 0, hi = 0;  // hi 0: the whole row
  float* carry = nullptr;
};

// R weight rows [n, n+R) against M rows of x (padded with zeros to xs floats
// per row). Accumulators: M·R·kAcc vectors. Each (x row, weight row) pair
// sums in the same order whatever M and R are: vector u of group g goes to
// chain (g·V + u) mod kAcc.
template <int M, int R, class Rows>
HWY_INLINE void SmallBlock(const Rows& rows, const float* x, int64_t xs, int64_t k, int64_t n, const float* bias,
                           float* y, int64_t ldy, const ColumnSlice& slice = {}) {
  const DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const bool sliced = slice.hi != 0, first = slice.lo == 0, last = !sliced || slice.hi >= k;
  VF acc[M][R][kAcc];
  for (int i = 0; i < M; ++i)
    for (int r = 0; r < R; ++r)
      for (int a = 0; a < kAcc; ++a)
        acc[i][r][a] = first ? hn::Zero(d) : hn::LoadU(d, slice.carry + ((i * R + r) * kAcc + a) * N);
  // Each row is its own short stream (a page for k = 2048 bf16); run ahead
  // of the hardware prefetcher, kPrefetchBytes into the row, then past its
  // end into the same row of the next block (rows are contiguous: R - 1
  // rows further on), so a new block does not start cold. A slice instead
  // prefetches the same columns of the next row: the row's next columns
  // are read a whole pass of rows later.
  const int64_t end = rows.group_end(), row_bytes = k * Rows::kBytes;
  const int64_t slice_end = last ? end : slice.hi;
  const uint8_t* row0 = static_cast<const uint8_t*>(rows.Addr(n, 0));
  const int64_t c_next =
      sliced ? 0 : std::max<int64_t>(0, (row_bytes - kPrefetchBytes) / Rows::kBytes);  // prefetch leaves the row
  int64_t c = slice.lo;
  for (int phase = 0; phase < 2; ++phase) {
    const int64_t stop = phase == 0 ? std::min(slice_end, c_next) / kStep * kStep : slice_end / kStep * kStep;
    const uint8_t* pf = sliced ? row0 + R * row_bytes : row0 + kPrefetchBytes + (phase == 0 ? 0 : (R - 1) * row_bytes);
    for (; c < stop; c += kStep) {
      SmallGroup<M, R, 0>(rows, x, xs, n, c, pf + c * Rows::kBytes, row_bytes, acc);
      if constexpr (kGroupsPerStep > 1)
        SmallGroup<M, R, 1>(rows, x, xs, n, c + quant::kGroup, pf + (c + quant::kGroup) * Rows::kBytes, row_bytes,
                            acc);
    }
  }
  if (!last) {
    for (int i = 0; i < M; ++i)
      for (int r = 0; r < R; ++r)
        for (int a = 0; a < kAcc; ++a) hn::StoreU(acc[i][r][a], d, slice.carry + ((i * R + r) * kAcc + a) * N);
    return;
  }
  if (c < end)  // an odd last group (kGroupsPerStep 2)
    SmallGroup<M, R, 0>(rows, x, xs, n, c, row0 + kPrefetchBytes + (R - 1) * row_bytes + c * Rows::kBytes, row_bytes,
                        acc);
  // Remaining whole vectors, then single columns.
  const int64_t vend = std::max(end, rows.vec_end(static_cast<size_t>(N)));
  for (int64_t c = end; c < vend; c += N)
    for (int r = 0; r < R; ++r) {
      const VF wv = rows.Load(d, n + r, c);
      for (int i = 0; i < M; ++i) acc[i][r][0] = hn::MulAdd(hn::LoadU(d, x + i * xs + c), wv, acc[i][r][0]);
    }
  for (int r = 0; r < R; ++r) {
    float tail[M] = {};
    for (int64_t c = vend; c < k; ++c) {
      float wt = rows.Scalar(n + r, c);
      for (int i = 0; i < M; ++i) tail[i] += x[i * xs + c] * wt;
    }
    const float b = bias ? bias[n + r] : 0.0f;
    for (int i = 0; i < M; ++i) {
      VF sum = acc[i][r][0];
      for (int a = 1; a < kAcc; ++a) sum = hn::Add(sum, acc[i][r][a]);
      y[i * ldy + n + r] = hn::GetLane(hn::SumOfLanes(d, sum)) + tail[i] + b;
    }
  }
}

// x rows held at once against one weight row: M·kAcc accumulators and a
// group's weight vectors must fit the register file.
constexpr int kMaxX = kMV == 3 ? 4 : 2;

// Weight rows [n0, n1) against all M rows of x, kMaxX rows of x at a time,
// over the columns of `slice`: each group of x rows meets every weight row
// of the range before the next group starts, so the group's x stays in L1
// and the range's weight rows wait in L2 for the next group. `carry` holds
// kCarry floats per group and weight row. Same products in the same order:
// the same bits.
constexpr int64_t kCarry = int64_t{kMaxX} * kAcc * hn::MaxLanes(DF());
template <int M, class Rows>
HWY_INLINE void RowsAgainstAllX(const Rows& rows, const float* x, int64_t xs, int64_t k, int64_t n0, int64_t n1,
                                const float* bias, float* y, int64_t ldy, int64_t lo, int64_t hi, float* carry) {
  constexpr int G = M < kMaxX ? M : kMaxX;
  for (int64_t n = n0; n < n1; ++n)
    SmallBlock<G, 1>(rows, x, xs, k, n, bias, y, ldy, {lo, hi, carry ? carry + (n - n0) * kCarry : nullptr});
  if constexpr (M > kMaxX)
    RowsAgainstAllX<M - kMaxX>(rows, x + kMaxX * xs, xs, k, n0, n1, bias, y + kMaxX * ldy, ldy, lo, hi,
                               carry ? carry + (n1 - n0) * kCarry : nullptr);
}

// x in L1: rows of x larger than L1 (48 KB on Zen 5 and on Intel since Ice
// Lake) are read from L2 at every weight row. bf16 at m = 8, k = 2048 (two
// groups of 4 rows, 32 KB each, taking turns per weight row) read 7 GB/s a
// core against m = 4's 27, and m = 4 at k = 6144 (one 96 KB group) 12
// (ops_report gemv, Zen 5, one thread). Such x is taken in groups of kMaxX
// rows and slices of columns of at most 32 KB. Two threads, GB/s: m = 8, k =
// 2048: 12.6-13.9 -> 23.7-24.8; m = 8, k = 6144: 12.7-13.2 -> 18.1-20.7; m =
// 4, k = 6144: 22.1-22.6 -> 24.4-25.1 (there the strided reads of the
// slices cost about what L1 gains). m = 2 at k = 6144 (48 KB) stays whole:
// taken one row of x at a time instead, it read 22-24 against 25-27 (one
// thread).
constexpr int64_t kL1Bytes = int64_t{48} << 10;
constexpr int64_t kSliceCols = std::max<int64_t>(kStep, (int64_t{32} << 10) / (kMaxX * 4) / kStep * kStep);
constexpr int64_t kPassBytes = int64_t{64} << 10;  // weight rows per pass: what L2 keeps for the later groups

template <int M, class Rows>
void SmallRange(const Rows& rows, const float* x, int64_t xs, int64_t k, int64_t n0, int64_t n1, const float* bias,
                float* y, int64_t ldy) {
  if (M > 1 && (M > kMaxX || (kMV == 3 && M * k * int64_t{sizeof(float)} > kL1Bytes))) {
    const int64_t pass = std::max<int64_t>(1, kPassBytes / (k * Rows::kBytes));
    // Partial sums between slices: needed only when a row takes more than
    // one (k > kSliceCols), so a pass has at most kPassBytes / (2 bytes ·
    // kSliceCols) rows.
    constexpr int64_t kMaxPass = kPassBytes / kSliceCols / 2 + 1;
    constexpr int kGroups = (M + kMaxX - 1) / kMaxX;
    HWY_ALIGN float carry[kGroups * kMaxPass * kCarry];
    for (int64_t n = n0; n < n1; n += pass) {
      const int64_t n_end = std::min(n1, n + pass);
      if (k <= kSliceCols || kMV != 3) {  // slices measured on AVX-512 only
        RowsAgainstAllX<M>(rows, x, xs, k, n, n_end, bias, y, ldy, 0, 0, nullptr);
        continue;
      }
      HWY_DASSERT(n_end - n <= kMaxPass);
      for (int64_t lo = 0; lo < k; lo += kSliceCols)
        RowsAgainstAllX<M>(rows, x, xs, k, n, n_end, bias, y, ldy, lo, std::min(k, lo + kSliceCols), carry);
    }
  } else if (kMV != 3 || (std::is_same_v<Rows, Bf16Rows> && (M == 1 || M * k <= 4096))) {
    // One row at a time: the thread's rows are one sequential stream (rows
    // are contiguous), which the prefetchers serve best, while x stays in
    // L1 (the weights, prefetched non-temporally, do not evict it); the
    // kAcc FMA chains per row are faster than memory. Measured at m = 1
    // against 4 rows at a time: 0.82-0.87 of the read probe against 0.72
    // at k = 6144 (Zen 5, 2 threads); slower for f32 weights. With 16
    // registers, the only block that fits.
    for (int64_t n = n0; n < n1; ++n) SmallBlock<M, 1>(rows, x, xs, k, n, bias, y, ldy);
  } else {
    // Rows per block: M·R·kAcc accumulators + R·(32/lanes) weight vectors must fit the register file.
    constexpr int R = M == 1 ? 4 : M == 2 ? 2 : 1;
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

// F32 or BF16 weights (q8/q4 never get here: matmul_quant).
template <class F>
void WithRows(const WeightMatrix& w, const F& f) {
  static const WeightPrefetch prefetch = ChooseWeightPrefetch();
  if (w.format() == WeightFormat::F32)
    return f(F32Rows{static_cast<const float*>(w.data()), w.cols(), w.rows(), prefetch});
  f(Bf16Rows{static_cast<const uint16_t*>(w.data()), w.cols(), w.rows(), prefetch});
}

// Scalable vectors (SVE, RVV) may hold fewer lanes than the tag's bound, which
// the group arithmetic assumes; such targets use the scalar twin.
bool LanesAreFixed() { return hn::Lanes(DF()) == hn::MaxLanes(DF()); }

void ScalarFallback(const MatmulArgs& a, ThreadPool& pool) {
  pool.parallel_for(a.w->rows(), [&](int64_t b, int64_t e, int) {
    scalar::matmul_rows(a.x, a.m, a.ldx, *a.w, a.bias, a.y, a.ldy, b, e);
  });
}

void MatmulSmallMTasks(std::span<const MatmulTask> tasks, ThreadPool& pool) {
  if (!LanesAreFixed()) {
    for (const MatmulTask& t : tasks)
      ScalarFallback({t.x, t.m, t.ldx, t.out.w, t.out.bias, t.out.y, t.out.ldy}, pool);
    return;
  }
  const int64_t k = tasks[0].out.w->cols();
  // Each distinct x copied once, zero-padded to whole groups.
  // Row stride padded 64 bytes off a power of two so x rows do not share L1 sets.
  const int64_t xs = quant::padded_cols(k) + 16;
  int64_t rows_total = 0;
  const std::vector<int64_t> first = task_x_rows(tasks, rows_total);
  thread_local ScratchVector<float> xpad;
  xpad.assign(static_cast<size_t>(rows_total * xs), 0.0f);
  float* const x = xpad.data();  // the caller's buffer (in the lambda a thread_local is the worker's own)
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (i > 0 && first[i] == first[i - 1]) continue;
    for (int64_t r = 0; r < tasks[i].m; ++r)
      std::memcpy(x + (first[i] + r) * xs, tasks[i].x + r * tasks[i].ldx, sizeof(float) * k);
  }
  // Pieces of whole 4-row blocks, so each block is computed as one.
  std::vector<int64_t> blocks;
  for (const MatmulTask& t : tasks) blocks.push_back((t.out.w->rows() + 3) / 4);
  const std::vector<WorkPiece> pieces = split_work(blocks, pool.size());
  run_pieces(pool, pieces, [&](const WorkPiece& p) {
    const MatmulTask& t = tasks[static_cast<size_t>(p.product)];
    const MatmulOutput& o = t.out;
    WithRows(*o.w, [&](const auto& rows) {
      SmallDispatch(rows, x + first[static_cast<size_t>(p.product)] * xs, t.m, xs, k, p.begin * 4,
                    std::min(o.w->rows(), p.end * 4), o.bias, o.y, o.ldy);
    });
  });
}

// ---------------------------------------------------------------- gemm

// x rows [m0, m0 + tm) transposed to xt [k][tm], rows past m zero; tm a
// multiple of the lane count. A whole vector of rows is gathered column by
// column, so xt is written in sequence: written row by row instead, each
// store went to a new line of xt (tm·4 bytes past the last). A copy: the
// same values whichever way.
void PackX(const float* x, int64_t m, int64_t ldx, int64_t k, int64_t m0, int64_t tm, float* xt) {
  const DF d;
  const hn::RebindToSigned<DF> di;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const bool gather = ldx <= std::numeric_limits<int32_t>::max() / N;  // int32 lane offsets
  const auto rows_apart = hn::Mul(hn::Iota(di, 0), hn::Set(di, static_cast<int32_t>(gather ? ldx : 0)));
  for (int64_t r0 = 0; r0 < tm; r0 += N) {
    const int64_t valid = std::clamp<int64_t>(m - (m0 + r0), 0, N);
    const float* src = x + std::min(m0 + r0, m) * ldx;
    if (valid == N && gather) {
      for (int64_t c = 0; c < k; ++c) hn::StoreU(hn::GatherIndex(d, src + c, rows_apart), d, xt + c * tm + r0);
      continue;
    }
    for (int64_t c = 0; c < k; ++c)
      for (int64_t r = 0; r < N; ++r) xt[c * tm + r0 + r] = r < valid ? src[r * ldx + c] : 0.0f;
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
  thread_local ScratchVector<float> xt_buf;
  xt_buf.resize(static_cast<size_t>(tiles * tm * k));
  float* xt = xt_buf.data();
  pool.parallel_for(tiles, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) PackX(a.x, m, a.ldx, k, t * tm, tm, xt + t * tm * k);
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
      thread_local ScratchVector<float> wp_buf, out_buf;
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

}  // namespace HWY_NAMESPACE
}  // namespace simd
}  // namespace qvl
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace qvl::simd {

HWY_EXPORT(MatmulSmallMTasks);
HWY_EXPORT(MatmulGemm);

static bool IsQuant(const MatmulArgs& a) { return a.w->format() == WeightFormat::Q8 || a.w->format() == WeightFormat::Q4; }

void matmul_small_m(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool) {
  const WeightFormat f = outs[0].w->format();
  if (f == WeightFormat::Q8 || f == WeightFormat::Q4) return matmul_quant_small_m(x, m, ldx, outs, pool);
  std::vector<MatmulTask> tasks;
  for (const MatmulOutput& o : outs) tasks.push_back({x, m, ldx, o});
  HWY_DYNAMIC_DISPATCH(MatmulSmallMTasks)(tasks, pool);
}
void matmul_small_m_tasks(std::span<const MatmulTask> tasks, ThreadPool& pool) {
  const WeightFormat f = tasks[0].out.w->format();
  if (f == WeightFormat::Q8 || f == WeightFormat::Q4) return matmul_quant_small_m_tasks(tasks, pool);
  HWY_DYNAMIC_DISPATCH(MatmulSmallMTasks)(tasks, pool);
}
std::vector<int64_t> task_x_rows(std::span<const MatmulTask> tasks, int64_t& rows) {
  std::vector<int64_t> first(tasks.size());
  rows = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const MatmulTask& t = tasks[i];
    const bool shared = i > 0 && t.x == tasks[i - 1].x && t.m == tasks[i - 1].m && t.ldx == tasks[i - 1].ldx;
    first[i] = shared ? first[i - 1] : rows;
    if (!shared) rows += t.m;
  }
  return first;
}
void matmul_gemm(const MatmulArgs& a, ThreadPool& pool) {
  if (IsQuant(a)) return matmul_quant(a, pool);
  HWY_DYNAMIC_DISPATCH(MatmulGemm)(a, pool);
}

}  // namespace qvl::simd
#endif
