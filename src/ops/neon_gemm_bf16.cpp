// The fast bf16 GEMM on AArch64 (neon_gemm_bf16.h): y = round_bf16(x) · Wᵀ
// with BFMMLA (or BFDOT), the shape of the x86 kernel (simd_gemm_bf16.cpp):
//   x, rounded to bf16 once per call, is packed in tiles of kMR = 8 rows;
//   a panel of kNR = 8 weight rows is packed by the kernel's layout;
//   threads claim groups of kPanels panels and apply every x tile to them.
// BFMMLA layout: k in chunks of 4; x tile [chunk][row pair][2 rows × 4], the
//   panel the same by weight row pairs, so one 16-byte load is an operand.
// BFDOT layout: x rows as they are (bf16, zero-padded), the panel by pairs of
//   k, [pair][8 rows][2], so lane r of a product is weight row r and x's pair
//   comes by element.
// Compiled for FEAT_BF16 alone (a target attribute) and called only where
// cpu_features().arm_bf16. Speed is untested (only qemu here).
#include "ops/neon_gemm_bf16.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "ops/cpu_features.h"
#include "ops/scalar.h"
#include "ops/scratch.h"
#include "util/error.h"

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_neon.h>
#define QVL_NEON_BF16 1
#else
#define QVL_NEON_BF16 0
#endif

namespace qvl::neon {

bool bf16_kernel_available(Bf16Kernel k) { return QVL_NEON_BF16 && k != Bf16Kernel::None && cpu_features().arm_bf16; }

Bf16Kernel bf16_kernel() { return bf16_kernel_available(Bf16Kernel::Bfmmla) ? Bf16Kernel::Bfmmla : Bf16Kernel::None; }

const char* bf16_kernel_name(Bf16Kernel k) {
  switch (k) {
    case Bf16Kernel::Bfmmla: return "BFMMLA";
    case Bf16Kernel::Bfdot: return "BFDOT";
    case Bf16Kernel::None: return "none";
  }
  return "none";
}

#if QVL_NEON_BF16
namespace {

#define QVL_BF16_TARGET __attribute__((target("arch=armv8.2-a+bf16")))

constexpr int64_t kMR = 8;      // x rows per tile
constexpr int64_t kNR = 8;      // weight rows per panel
constexpr int64_t kPanels = 4;  // panels per group a thread claims

// Sizes for k: k4 = k padded to a multiple of 4 (the twin's pad), C chunks of
// 4, P pairs, and the bf16 words of an x tile or a panel (either layout).
struct Dims {
  int64_t k, k4, C, P, k8, words;
  explicit Dims(int64_t k_) : k(k_), k4((k_ + 3) / 4 * 4), C(k4 / 4), P(k4 / 2), k8((k4 + 7) / 8 * 8), words(8 * k8) {}
};

uint16_t XAt(const float* row, int64_t col, int64_t k) { return row && col < k ? scalar::round_bf16(row[col]) : 0; }
uint16_t WAt(const uint16_t* row, int64_t col, int64_t k) { return row && col < k ? row[col] : 0; }

// ---- BFMMLA --------------------------------------------------------------
void PackXMmla(const float* x, int64_t m, int64_t ldx, int64_t m0, const Dims& d, uint16_t* xt) {
  for (int64_t r = 0; r < kMR; ++r) {
    const float* src = m0 + r < m ? x + (m0 + r) * ldx : nullptr;
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t e = 0; e < 4; ++e) xt[(c * 4 + r / 2) * 8 + (r % 2) * 4 + e] = XAt(src, 4 * c + e, d.k);
  }
}

void PackWMmla(const uint16_t* w, int64_t n, int64_t n0, const Dims& d, uint16_t* wp) {
  for (int64_t j = 0; j < kNR; ++j) {
    const uint16_t* src = n0 + j < n ? w + (n0 + j) * d.k : nullptr;
    for (int64_t c = 0; c < d.C; ++c)
      for (int64_t e = 0; e < 4; ++e) wp[(c * 4 + j / 2) * 8 + (j % 2) * 4 + e] = WAt(src, 4 * c + e, d.k);
  }
}

// T x row pairs (of 4) against the panel's 4 weight row pairs. Lanes of
// acc[t][u]: x_2t·w_2u, x_2t·w_2u+1, x_2t+1·w_2u, x_2t+1·w_2u+1; each adds
// its chunks in order, and BFMMLA a chunk's two pairs in order.
template <int T>
QVL_BF16_TARGET void TileMmla(const uint16_t* xt, const uint16_t* wp, int64_t C, float* out) {
  float32x4_t acc[T][4];
  for (int t = 0; t < T; ++t)
    for (int u = 0; u < 4; ++u) acc[t][u] = vdupq_n_f32(0.0f);
  for (int64_t c = 0; c < C; ++c) {
    bfloat16x8_t b[4];
    for (int u = 0; u < 4; ++u) b[u] = vreinterpretq_bf16_u16(vld1q_u16(wp + (c * 4 + u) * 8));
    for (int t = 0; t < T; ++t) {
      const bfloat16x8_t a = vreinterpretq_bf16_u16(vld1q_u16(xt + (c * 4 + t) * 8));
      for (int u = 0; u < 4; ++u) acc[t][u] = vbfmmlaq_f32(acc[t][u], a, b[u]);
    }
  }
  for (int t = 0; t < T; ++t)
    for (int u = 0; u < 4; ++u) {
      float lanes[4];
      vst1q_f32(lanes, acc[t][u]);
      out[(2 * t) * kNR + 2 * u] = lanes[0];
      out[(2 * t) * kNR + 2 * u + 1] = lanes[1];
      out[(2 * t + 1) * kNR + 2 * u] = lanes[2];
      out[(2 * t + 1) * kNR + 2 * u + 1] = lanes[3];
    }
}

// ---- BFDOT ---------------------------------------------------------------
void PackXDot(const float* x, int64_t m, int64_t ldx, int64_t m0, const Dims& d, uint16_t* xt) {
  for (int64_t r = 0; r < kMR; ++r) {
    const float* src = m0 + r < m ? x + (m0 + r) * ldx : nullptr;
    for (int64_t c = 0; c < d.k8; ++c) xt[r * d.k8 + c] = XAt(src, c, d.k);
  }
}

void PackWDot(const uint16_t* w, int64_t n, int64_t n0, const Dims& d, uint16_t* wp) {
  for (int64_t j = 0; j < kNR; ++j) {
    const uint16_t* src = n0 + j < n ? w + (n0 + j) * d.k : nullptr;
    for (int64_t p = 0; p < d.P; ++p)
      for (int64_t e = 0; e < 2; ++e) wp[(p * kNR + j) * 2 + e] = WAt(src, 2 * p + e, d.k);
  }
}

// Pair q + L of every x row (lane L of its vector of 4 pairs) into rows' acc.
template <int R, int L>
QVL_BF16_TARGET inline void DotPair(const uint16_t* wq, const bfloat16x8_t (&xv)[R], float32x4_t (&acc)[R][2]) {
  const bfloat16x8_t w0 = vreinterpretq_bf16_u16(vld1q_u16(wq)), w1 = vreinterpretq_bf16_u16(vld1q_u16(wq + 8));
  for (int r = 0; r < R; ++r) {
    acc[r][0] = vbfdotq_laneq_f32(acc[r][0], w0, xv[r], L);
    acc[r][1] = vbfdotq_laneq_f32(acc[r][1], w1, xv[r], L);
  }
}

// R x rows against the panel's 8 weight rows, k's pairs in order (P is even:
// the last vector of 4 pairs may hold 2).
template <int R>
QVL_BF16_TARGET void TileDot(const uint16_t* xt, int64_t k8, const uint16_t* wp, int64_t P, float* out) {
  float32x4_t acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
  for (int64_t q = 0; q < P; q += 4) {
    bfloat16x8_t xv[R];
    for (int r = 0; r < R; ++r) xv[r] = vreinterpretq_bf16_u16(vld1q_u16(xt + r * k8 + 2 * q));
    const uint16_t* wq = wp + q * kNR * 2;
    DotPair<R, 0>(wq, xv, acc);
    DotPair<R, 1>(wq + kNR * 2, xv, acc);
    if (q + 2 < P) {
      DotPair<R, 2>(wq + 2 * kNR * 2, xv, acc);
      DotPair<R, 3>(wq + 3 * kNR * 2, xv, acc);
    }
  }
  for (int r = 0; r < R; ++r) {
    vst1q_f32(out + r * kNR, acc[r][0]);
    vst1q_f32(out + r * kNR + 4, acc[r][1]);
  }
}

template <int... I>
void TileDotRows(int64_t rows, const uint16_t* xt, int64_t k8, const uint16_t* wp, int64_t P, float* out,
                 std::integer_sequence<int, I...>) {
  ((rows == I + 1 ? TileDot<I + 1>(xt, k8, wp, P, out) : void()), ...);
}

// One x tile of `rows` valid rows against one panel: out[kMR][kNR].
void RunTile(Bf16Kernel kern, int64_t rows, const uint16_t* xt, const uint16_t* wp, const Dims& d, float* out) {
  if (kern == Bf16Kernel::Bfdot) return TileDotRows(rows, xt, d.k8, wp, d.P, out, std::make_integer_sequence<int, 8>{});
  switch ((rows + 1) / 2) {
    case 1: return TileMmla<1>(xt, wp, d.C, out);
    case 2: return TileMmla<2>(xt, wp, d.C, out);
    case 3: return TileMmla<3>(xt, wp, d.C, out);
    default: return TileMmla<4>(xt, wp, d.C, out);
  }
}

}  // namespace

void gemm_bf16(Bf16Kernel kern, const simd::MatmulArgs& a, ThreadPool& pool) {
  if (!bf16_kernel_available(kern)) fail("neon::gemm_bf16: ", bf16_kernel_name(kern), " is not available on this CPU");
  if (a.w->format() != WeightFormat::BF16)
    fail("neon::gemm_bf16: weights are ", weight_format_name(a.w->format()), ", not bf16");
  const int64_t k = a.w->cols(), n = a.w->rows(), m = a.m;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) a.y[i * a.ldy + j] = a.bias ? a.bias[j] : 0.0f;
    return;
  }
  const Dims d(k);
  const bool mmla = kern == Bf16Kernel::Bfmmla;
  const int64_t tiles = (m + kMR - 1) / kMR;
  thread_local ScratchVector<uint16_t> xt_buf;
  xt_buf.resize(static_cast<size_t>(tiles * d.words));
  uint16_t* xt = xt_buf.data();
  pool.parallel_for(tiles, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) {
      if (mmla)
        PackXMmla(a.x, m, a.ldx, t * kMR, d, xt + t * d.words);
      else
        PackXDot(a.x, m, a.ldx, t * kMR, d, xt + t * d.words);
    }
  });
  const int64_t panels = (n + kNR - 1) / kNR;
  const int64_t groups = (panels + kPanels - 1) / kPanels;
  const uint16_t* w = static_cast<const uint16_t*>(a.w->data());
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    thread_local ScratchVector<uint16_t> wp_buf;
    wp_buf.resize(static_cast<size_t>(kPanels * d.words));
    alignas(64) float out[kMR * kNR];
    for (int64_t grp; (grp = next.fetch_add(1, std::memory_order_relaxed)) < groups;) {
      const int64_t g0 = grp * kPanels, g1 = std::min(panels, g0 + kPanels);
      for (int64_t p = g0; p < g1; ++p) {
        uint16_t* wp = wp_buf.data() + (p - g0) * d.words;
        if (mmla)
          PackWMmla(w, n, p * kNR, d, wp);
        else
          PackWDot(w, n, p * kNR, d, wp);
      }
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t m0 = t * kMR, rows = std::min(kMR, m - m0);
        for (int64_t p = g0; p < g1; ++p) {
          RunTile(kern, rows, xt + t * d.words, wp_buf.data() + (p - g0) * d.words, d, out);
          const int64_t n0 = p * kNR, cols = std::min(kNR, n - n0);
          for (int64_t r = 0; r < rows; ++r) {
            float* yr = a.y + (m0 + r) * a.ldy + n0;
            for (int64_t j = 0; j < cols; ++j) yr[j] = out[r * kNR + j] + (a.bias ? a.bias[n0 + j] : 0.0f);
          }
        }
      }
    }
  });
}

#else  // not AArch64

void gemm_bf16(Bf16Kernel kern, const simd::MatmulArgs&, ThreadPool&) {
  fail("neon::gemm_bf16: ", bf16_kernel_name(kern), " needs AArch64");
}

#endif

}  // namespace qvl::neon
