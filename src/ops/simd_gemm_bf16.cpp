// The fast bf16 GEMM (MatmulPrecision::Fast): y = round_bf16(x) · Wᵀ with
// AVX-512 BF16. vdpbf16ps multiplies 16 lanes of bf16 pairs and adds both
// products to f32 accumulators: 32 multiply-adds per instruction where an f32
// FMA does 16, at the same rate on Zen 4.
//
// Same shape as MatmulGemm (simd_matmul.cpp), with k taken in pairs:
//   x, rounded to bf16 once per call, is packed transposed in tiles of TM rows,
//     xt[p][TM], one 32-bit word per (row, pair p) = elements 2p (low half)
//     and 2p + 1;
//   a panel of kNR weight rows is copied as is (a bf16 row is already its
//     pairs), wp[kNR][ks] words, an odd k padded with a zero (x's pad is zero
//     too);
//   the micro-kernel keeps kMV x kNR accumulators: per pair, kMV x loads, kNR
//     weight broadcasts and kMV·kNR vdpbf16ps.
// kPanels panels are packed together and every x tile is applied to all of
// them while they sit in L2; threads claim groups of panels one at a time.
//
// Highway 1.0.3 has no vdpbf16ps, so this is hand intrinsics in functions
// compiled for AVX512-BF16, called only when the CPU has it
// (gemm_bf16_supported); elsewhere matmul() takes the exact path.
#include "ops/simd_gemm_bf16.h"

#include "ops/cpu_features.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "ops/scratch.h"
#include "ops/neon_gemm_bf16.h"
#include "util/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QVL_HAVE_GEMM_BF16 1
#include <immintrin.h>
#else
#define QVL_HAVE_GEMM_BF16 0
#endif

namespace qvl::simd {

#if QVL_HAVE_GEMM_BF16
namespace {

#define QVL_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

constexpr int64_t kLanes = 16;  // f32 accumulators (and bf16 pairs) per zmm
constexpr int kMV = 3;          // x vectors per tile: 24 accumulators + 3 x + 1 broadcast of 32 registers
constexpr int kNR = 8;          // weight rows per panel
constexpr int64_t kPanels = 4;  // panels per group: 4·8 rows · k/2 words · 4 bytes = 128 KB at k = 2048

// Rows [m0, m0 + tm) of x rounded to bf16 (vcvtne2ps2bf16: round to nearest
// even, denormals to zero) and packed transposed, xt[p][tm]; rows past m and
// the pad half of an odd k are zero. `row` is scratch for kp + 16 words.
QVL_BF16_TARGET void PackX(const float* x, int64_t m, int64_t ldx, int64_t k, int64_t m0, int64_t tm, uint32_t* xt,
                           uint32_t* row) {
  const int64_t kp = (k + 1) / 2;
  for (int64_t r = 0; r < tm; ++r) {
    if (m0 + r >= m) {
      for (int64_t p = 0; p < kp; ++p) xt[p * tm + r] = 0;
      continue;
    }
    const float* src = x + (m0 + r) * ldx;
    int64_t c = 0;
    for (; c + 32 <= k; c += 32) {
      const __m512 lo = _mm512_loadu_ps(src + c), hi = _mm512_loadu_ps(src + c + 16);
      // The second operand fills the low 16 words: memory order is kept.
      _mm512_storeu_si512(row + c / 2, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    if (c < k) {
      const int64_t rem = k - c;
      const __mmask16 mlo = rem >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << rem) - 1);
      const __mmask16 mhi = rem > 16 ? __mmask16((1u << (rem - 16)) - 1) : __mmask16(0);
      const __m512 lo = _mm512_maskz_loadu_ps(mlo, src + c), hi = _mm512_maskz_loadu_ps(mhi, src + c + 16);
      const int64_t words = (rem + 1) / 2;  // an odd k's last word: its pad half is bf16(0) = 0
      _mm512_mask_storeu_epi32(row + c / 2, __mmask16((1u << words) - 1), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    for (int64_t p = 0; p < kp; ++p) xt[p * tm + r] = row[p];
  }
}

// Weight rows [n0, n0 + kNR) as pair words, wp[kNR][ks]; rows past n zero.
void PackW(const uint16_t* w, int64_t n, int64_t k, int64_t n0, uint32_t* wp, int64_t ks) {
  const int64_t kp = (k + 1) / 2;
  for (int64_t j = 0; j < kNR; ++j) {
    uint32_t* dst = wp + j * ks;
    if (n0 + j >= n) {
      std::memset(dst, 0, sizeof(uint32_t) * static_cast<size_t>(kp));
      continue;
    }
    dst[kp - 1] = 0;  // an odd k leaves the high half of the last word: zero
    std::memcpy(dst, w + (n0 + j) * k, sizeof(uint16_t) * static_cast<size_t>(k));
  }
}

// The micro-kernel: out[j][r] = Σ_p xt[p][r] · wp[j][p] (pairs) for MV·16
// rows r, NJ columns j. Each output is one lane summing its pairs in order,
// as scalar::matmul_bf16_fast does.
template <int MV, int NJ>
QVL_BF16_TARGET __attribute__((noinline)) void Tile(const uint32_t* __restrict xt, int64_t tm,
                                                    const uint32_t* __restrict wp, int64_t ks, int64_t kp,
                                                    float* __restrict out) {
  __m512 acc[MV][NJ];
  for (int v = 0; v < MV; ++v)
    for (int j = 0; j < NJ; ++j) acc[v][j] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kp; ++p) {
    __m512bh xv[MV];
    for (int v = 0; v < MV; ++v) xv[v] = (__m512bh)_mm512_loadu_si512(xt + p * tm + v * kLanes);
    for (int j = 0; j < NJ; ++j) {
      const __m512bh wb = (__m512bh)_mm512_set1_epi32(static_cast<int>(wp[j * ks + p]));
      for (int v = 0; v < MV; ++v) acc[v][j] = _mm512_dpbf16_ps(acc[v][j], xv[v], wb);
    }
  }
  for (int j = 0; j < NJ; ++j)
    for (int v = 0; v < MV; ++v) _mm512_storeu_ps(out + j * tm + v * kLanes, acc[v][j]);
}

// One x tile (mv vectors of rows valid) against one panel.
void RunTile(int64_t mv, const uint32_t* xt, int64_t tm, const uint32_t* wp, int64_t ks, int64_t kp, float* out) {
  if (mv == 4) {  // 49..64 rows: one tile of 4 vectors, the panel in two halves (16 accumulators each)
    Tile<4, kNR / 2>(xt, tm, wp, ks, kp, out);
    Tile<4, kNR / 2>(xt, tm, wp + kNR / 2 * ks, ks, kp, out + kNR / 2 * tm);
  } else if (mv == 3) {
    Tile<3, kNR>(xt, tm, wp, ks, kp, out);
  } else if (mv == 2) {
    Tile<2, kNR>(xt, tm, wp, ks, kp, out);
  } else {
    Tile<1, kNR>(xt, tm, wp, ks, kp, out);
  }
}

}  // namespace

bool gemm_bf16_supported() {
  // cpu_features(), not the CPU's own word: it honours QVL_SIMD_TARGET.
  return cpu_features().avx512 && cpu_features().avx512_bf16;
}

void gemm_bf16(const MatmulArgs& a, ThreadPool& pool) {
  if (!gemm_bf16_supported()) fail("gemm_bf16: this CPU has no AVX512-BF16 (matmul() takes the exact path)");
  if (a.w->format() != WeightFormat::BF16)
    fail("gemm_bf16: weights are ", weight_format_name(a.w->format()), ", not bf16");
  const int64_t k = a.w->cols(), n = a.w->rows(), m = a.m;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) a.y[i * a.ldy + j] = a.bias ? a.bias[j] : 0.0f;
    return;
  }
  const int64_t kp = (k + 1) / 2;
  // As MatmulGemm: 49..64 rows make one tile of 4 vectors rather than a full
  // tile plus a 1-vector one, which is load-bound.
  const int64_t mvt = m > 3 * kLanes && m <= 4 * kLanes ? 4 : kMV;
  const int64_t tm = mvt * kLanes;
  const int64_t tiles = (m + tm - 1) / tm;
  thread_local ScratchVector<uint32_t> xt_buf;
  xt_buf.resize(static_cast<size_t>(tiles * tm * kp));
  uint32_t* xt = xt_buf.data();
  pool.parallel_for(tiles, [&](int64_t b, int64_t e, int) {
    thread_local ScratchVector<uint32_t> row;
    row.resize(static_cast<size_t>(kp + kLanes));
    for (int64_t t = b; t < e; ++t) PackX(a.x, m, a.ldx, k, t * tm, tm, xt + t * tm * kp, row.data());
  });
  // Panel rows 64 bytes off a power-of-two stride, so the kNR broadcast
  // streams do not share L1 sets.
  const int64_t ks = (kp + kLanes - 1) / kLanes * kLanes + kLanes;
  const int64_t panels = (n + kNR - 1) / kNR;
  const int64_t groups = (panels + kPanels - 1) / kPanels;
  const uint16_t* w = static_cast<const uint16_t*>(a.w->data());
  std::atomic<int64_t> next{0};
  pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
    thread_local ScratchVector<uint32_t> wp_buf;
    thread_local ScratchVector<float> out_buf;
    wp_buf.resize(static_cast<size_t>(kPanels * kNR * ks));
    out_buf.resize(static_cast<size_t>(kNR * tm));
    float* out = out_buf.data();
    for (int64_t grp; (grp = next.fetch_add(1, std::memory_order_relaxed)) < groups;) {
      const int64_t g0 = grp * kPanels, g1 = std::min(panels, g0 + kPanels);
      for (int64_t p = g0; p < g1; ++p) PackW(w, n, k, p * kNR, wp_buf.data() + (p - g0) * kNR * ks, ks);
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t m0 = t * tm, valid = std::min(tm, m - m0);
        const int64_t mv = (valid + kLanes - 1) / kLanes;
        const uint32_t* xtt = xt + t * tm * kp;
        for (int64_t p = g0; p < g1; ++p) {
          RunTile(mv, xtt, tm, wp_buf.data() + (p - g0) * kNR * ks, ks, kp, out);
          const int64_t n0 = p * kNR, cols = std::min<int64_t>(kNR, n - n0);
          for (int64_t r = 0; r < valid; ++r) {
            float* yr = a.y + (m0 + r) * a.ldy + n0;
            for (int64_t j = 0; j < cols; ++j) yr[j] = out[j * tm + r] + (a.bias ? a.bias[n0 + j] : 0.0f);
          }
        }
      }
    }
  });
}

#elif defined(__aarch64__)  // BFMMLA where the CPU has FEAT_BF16 (neon_gemm_bf16.h)

bool gemm_bf16_supported() { return neon::bf16_kernel() != neon::Bf16Kernel::None; }

void gemm_bf16(const MatmulArgs& a, ThreadPool& pool) {
  if (!gemm_bf16_supported()) fail("gemm_bf16: this CPU has no BF16 (FEAT_BF16; matmul() takes the exact path)");
  neon::gemm_bf16(neon::bf16_kernel(), a, pool);
}

#else  // neither: the exact path serves MatmulPrecision::Fast

bool gemm_bf16_supported() { return false; }

void gemm_bf16(const MatmulArgs&, ThreadPool&) { fail("gemm_bf16: not built for this architecture (needs x86-64 or AArch64)"); }

#endif

}  // namespace qvl::simd
