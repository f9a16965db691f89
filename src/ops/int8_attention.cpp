// Many-query attention with Q·Kᵀ on vpdpbusd and P·V on vpdpbusd (calls
// without a causal mask) or vdpbf16ps (causal ones) (int8_attention.h),
// FlashAttention's online softmax (Dao et al. 2022) over blocks of 32 keys:
//
//   per work item (one query head, 16 query rows), per block of 32 keys:
//     S [16][32] = Q·Kᵀ        lanes are keys: one vpdpbusd does 16 keys x
//                              4 head dims, Q's 4 (as u8) broadcast
//     non-causal:
//     m, l, P in u8            softmax_rows16_u8
//     O [16][dh] += bs·(P·V)   values_i8: lanes are head dims, one
//                              vpdpbusd does 16 dims x 4 keys, a row's 4
//                              codes of P broadcast
//     causal:
//     m, l, P = 2^(S - m)      bf16_dot_steps::softmax_rows16
//     O [16][dh] += P·V        bf16_dot_steps::values, as the bf16 kernel
//
// vpdpbusd multiplies unsigned by signed bytes, so Q is stored as n + 128
// (1..255) and each key carries the exact correction -128·Σ_c n_c, added to
// its sum; P's codes are unsigned already. Per call, K is rounded to int8
// and V to int8 (non-causal) or bf16 (causal), and both are repacked per kv
// head and block of 32 keys:
//   Kp [kv head][block] = [dh/4 quads][32 keys] int8x4, then [32] int32
//                         corrections, then [32] f32 scales
//   Vq [kv head][block][8 key quads][dh] int8x4 (pack_v_block_i8), or
//   Vp [kv head][block][16 key pairs][dh] bf16x2 (bf16_dot_steps::pack_v_block)
// Against the bf16 kernel this halves the products' instructions (4 a
// lane, not 2) and the bytes of K and V read per block.
#include "ops/int8_attention.h"

#include <algorithm>
#include <cstring>

#include "ops/amx_attention.h"
#include "ops/attention_steps.h"
#include "ops/bf16_dot_steps.h"
#include "ops/cpu_features.h"
#include "ops/scratch.h"
#include "util/error.h"

namespace qvl::int8dot {

bool attention_fits(const AttentionParams& p) { return amx::attention_fits(p); }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

bool attention_usable() {
  const CpuFeatures& f = cpu_features();
  return f.avx512 && f.avx512_vnni && f.avx512_bf16;
}

namespace {

using attention_steps::kStep;
using attention_steps::kT;
using attention_steps::load_16;

#define QVL_AVX512_VNNI \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,fma,f16c")))

constexpr int64_t kMaxDh = 256;

// One row of dh values (f32, or f16 widened), less `shift` where given,
// rounded to int8 with one scale (int8_attention.h, "rounding"): the int8
// codes plus `bias` go to codes[dh] as bytes; returns the scale and, in
// *code_sum, Σ_c n_c.
template <class T>
QVL_AVX512_VNNI float round_row_i8(const T* x, int64_t dh, float mul, const float* shift, int bias, uint8_t* codes,
                                   int32_t* code_sum) {
  __m512 y[kMaxDh / 16];
  __m512 amax = _mm512_setzero_ps();
  for (int64_t i = 0; i < dh / 16; ++i) {
    y[i] = load_16(x + 16 * i);
    if (mul != 1.0f) y[i] = _mm512_mul_ps(y[i], _mm512_set1_ps(mul));
    if (shift) y[i] = _mm512_sub_ps(y[i], _mm512_loadu_ps(shift + 16 * i));
    amax = _mm512_max_ps(amax, _mm512_abs_ps(y[i]));
  }
  const float a = _mm512_reduce_max_ps(amax);
  if (!(a > 0.0f)) {
    std::memset(codes, bias, static_cast<size_t>(dh));
    *code_sum = 0;
    return 0.0f;
  }
  const __m512 inv = _mm512_set1_ps(127.0f / a);
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127), vbias = _mm512_set1_epi32(bias);
  __m512i sum = _mm512_setzero_si512();
  for (int64_t i = 0; i < dh / 16; ++i) {
    // vcvtps2dq rounds to nearest even (MXCSR's default).
    const __m512i n = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(y[i], inv)), lo), hi);
    sum = _mm512_add_epi32(sum, n);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 16 * i), _mm512_cvtepi32_epi8(_mm512_add_epi32(n, vbias)));
  }
  *code_sum = _mm512_reduce_add_epi32(sum);
  return a / 127.0f;
}

// Kp of kv head h, block kb (zeros past nkv); see the file comment. mean is
// the head's [dh] mean key, or null.
template <class T>
QVL_AVX512_VNNI void pack_k_block(const T* k, const AttentionParams& p, int64_t h, int64_t kb, const float* mean,
                                  uint32_t* kp) {
  const int64_t dh = p.head_dim, quads = dh / 4;
  int32_t* corr = reinterpret_cast<int32_t*>(kp + quads * kStep);
  float* scale = reinterpret_cast<float*>(kp + quads * kStep + kStep);
  alignas(64) uint32_t row[kMaxDh / 4];
  for (int64_t key = 0; key < kStep; ++key) {
    const int64_t j = kb * kStep + key;
    int32_t code_sum = 0;
    if (j < p.nkv) {
      scale[key] = round_row_i8(k + j * p.kv_stride + h * dh, dh, 1.0f, mean, 0, reinterpret_cast<uint8_t*>(row),
                                &code_sum);
    } else {
      scale[key] = 0.0f;
      std::fill(row, row + quads, 0u);
    }
    corr[key] = -128 * code_sum;
    for (int64_t qd = 0; qd < quads; ++qd) kp[qd * kStep + key] = row[qd];
  }
}

// Kv head h's mean K (or V) row over the call, [dh]: f32 sums in key order,
// then divided by nkv (the twin's order).
template <class T>
QVL_AVX512_VNNI void mean_rows(const T* k, const AttentionParams& p, int64_t h, float* mean) {
  const int64_t dh = p.head_dim;
  __m512 sum[kMaxDh / 16];
  for (int64_t i = 0; i < dh / 16; ++i) sum[i] = _mm512_setzero_ps();
  for (int64_t j = 0; j < p.nkv; ++j)
    for (int64_t i = 0; i < dh / 16; ++i)
      sum[i] = _mm512_add_ps(sum[i], load_16(k + j * p.kv_stride + h * dh + 16 * i));
  const __m512 n = _mm512_set1_ps(static_cast<float>(p.nkv));
  for (int64_t i = 0; i < dh / 16; ++i) _mm512_storeu_ps(mean + 16 * i, _mm512_div_ps(sum[i], n));
}

// V's channel scales of kv head h (int8_attention.h, "values"): with a_c =
// max over the call's keys of |v[j][c] - mean_c|, sv_c = a_c / (127·255)
// (P's codes' 255 folded in) and inv_c = 127 / a_c (both 0 where a_c is 0).
template <class T>
QVL_AVX512_VNNI void v_channel_scales(const T* v, const AttentionParams& p, int64_t h, const float* mean, float* sv,
                                      float* inv) {
  const int64_t dh = p.head_dim;
  for (int64_t c = 0; c < dh; c += 16) {
    const __m512 mu = _mm512_loadu_ps(mean + c);
    __m512 a = _mm512_setzero_ps();
    for (int64_t j = 0; j < p.nkv; ++j)
      a = _mm512_max_ps(a, _mm512_abs_ps(_mm512_sub_ps(load_16(v + j * p.kv_stride + h * dh + c), mu)));
    const __mmask16 nonzero = _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_GT_OQ);
    _mm512_storeu_ps(sv + c, _mm512_div_ps(a, _mm512_set1_ps(127.0f * 255.0f)));
    _mm512_storeu_ps(inv + c, _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(127.0f), a));
  }
}

// Vq of kv head h, block kb (zeros past nkv): [8 key quads][dh] int8x4, the
// codes n = clamp(rne((v[j][c] - mean_c) · inv_c), ±127) of keys 4t .. 4t+3
// at t·dh + c, lowest byte first.
template <class T>
QVL_AVX512_VNNI void pack_v_block_i8(const T* v, const AttentionParams& p, int64_t h, int64_t kb, const float* mean,
                                     const float* inv, uint32_t* vq) {
  const int64_t dh = p.head_dim;
  const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127), byte = _mm512_set1_epi32(0xff);
  for (int64_t t = 0; t < kStep / 4; ++t)
    for (int64_t c = 0; c < dh; c += 16) {
      __m512i quad = _mm512_setzero_si512();
      for (int64_t u = 0; u < 4; ++u) {
        const int64_t j = kb * kStep + 4 * t + u;
        if (j >= p.nkv) break;
        const __m512 y = _mm512_mul_ps(_mm512_sub_ps(load_16(v + j * p.kv_stride + h * dh + c), _mm512_loadu_ps(mean + c)),
                                       _mm512_loadu_ps(inv + c));
        const __m512i n = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(y), lo), hi);
        quad = _mm512_or_si512(quad, _mm512_slli_epi32(_mm512_and_si512(n, byte), static_cast<unsigned>(8 * u)));
      }
      _mm512_storeu_si512(vq + t * dh + c, quad);
    }
}

// acc + Σ over each lane's 4 bytes of u8·s8 (vpdpbusd). In asm: GCC 12
// copies the intrinsic's accumulators between registers on every step (and
// spills one), which cost a third of the products' time.
QVL_AVX512_VNNI inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}

// 2^x for x <= 0 or -inf (int8_attention.h, kExp2Poly): 2^n applied by
// vscalefps, exact, or correctly rounded where the result is denormal. (The
// target of softmax_rows16, which inlines it.)
struct Exp2Degree4 {
  QVL_AVX512_BF16 __m512 operator()(__m512 x) const {
    const __mmask16 finite = _mm512_cmp_ps_mask(x, _mm512_set1_ps(attention_steps::kNegInf), _CMP_NEQ_OQ);
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(kExp2Poly[3]);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[2]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[1]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[0]));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps(finite, p, n);
  }
};

// One block's online softmax for the 16 rows of an item with P in u8
// (int8_attention.h, "softmax" and "values"): s [16][32] scores in base 2,
// row r seeing keys [0, valid[r]) of the block. Each row's weights are taken
// against the block's own maximum mb, P' = 2^(S - mb) in [0, 1] with the
// maximum's exactly 1, and go to pa [16][32] as the u8 codes rne(255·P');
// bs[16] gets each row's block scale 2^(mb - m_new). o [16][dh] is rescaled
// by 2^(m_old - m_new), m updated and l += bs·Σ P' (the unrounded weights,
// summed as softmax_rows16 sums its).
// Rows that see no key of the block change nothing.
QVL_AVX512_VNNI void softmax_rows16_u8(const float* s, const int64_t* valid, float* m, float* l, float* o, int64_t dh,
                                       uint8_t* pa, float* bs) {
  const Exp2Degree4 exp2;
  const __m512 ninf = _mm512_set1_ps(attention_steps::kNegInf);
  __mmask16 m0[kT], m1[kT];
  __m512 part[kT];
  bf16_dot_steps::block_row_maxima(s, valid, m0, m1, part);
  const __m512 m_old = _mm512_loadu_ps(m);
  const __m512 m_blk = bf16_dot_steps::reduce_rows16(part, bf16_dot_steps::MaxOp());
  const __m512 m_new = _mm512_max_ps(m_old, m_blk);
  const __mmask16 live = _mm512_cmp_ps_mask(m_blk, ninf, _CMP_NEQ_OQ);
  const __m512 corr = _mm512_maskz_mov_ps(live, exp2(_mm512_sub_ps(m_old, m_new)));  // 0 where m_old is -inf
  const __m512 scale = _mm512_maskz_mov_ps(live, exp2(_mm512_sub_ps(m_blk, m_new)));
  alignas(64) float mb[kT], cr[kT];
  _mm512_store_ps(mb, m_blk);
  _mm512_store_ps(cr, corr);
  _mm512_storeu_ps(bs, scale);
  const __m512 full = _mm512_set1_ps(255.0f);
  for (int r = 0; r < kT; ++r) {
    __m512 p0 = _mm512_setzero_ps(), p1 = _mm512_setzero_ps();
    if ((live >> r) & 1)
      bf16_dot_steps::row_weights(exp2, s + r * kStep, m0[r], m1[r], mb[r], cr[r], o + r * dh, dh, p0, p1);
    // To nearest even.
    const __m512i c0 = _mm512_cvtps_epi32(_mm512_mul_ps(p0, full)), c1 = _mm512_cvtps_epi32(_mm512_mul_ps(p1, full));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(pa + r * kStep), _mm512_cvtepi32_epi8(c0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(pa + r * kStep + 16), _mm512_cvtepi32_epi8(c1));
    part[r] = _mm512_add_ps(p0, p1);
  }
  const __m512 sum = bf16_dot_steps::reduce_rows16(part, bf16_dot_steps::AddOp());
  const __m512 l_old = _mm512_loadu_ps(l);
  _mm512_storeu_ps(l, _mm512_mask_mov_ps(l_old, live, _mm512_fmadd_ps(l_old, corr, _mm512_mul_ps(scale, sum))));
  _mm512_storeu_ps(m, _mm512_mask_mov_ps(m_old, live, m_new));
}

// O [R][dh] columns [c0, c0 + 16·CT) += bs · (P·V) for one block: pa the
// u8 codes [16][32] (row r's key quad t at r·8 + t as uint32), vb one block
// of Vq. The block's integer sums (|Σ| <= 32·255·127 < 2^24, so exact in
// f32) are scaled by the row's bs and added to O in one fused multiply-add.
template <int R, int CT>
QVL_AVX512_VNNI void values_i8(const uint32_t* pa, int64_t r0, const uint32_t* vb, int64_t dh, int64_t c0,
                               const float* bs, float* o) {
  __m512i acc[R][CT];
  for (int r = 0; r < R; ++r)
    for (int ct = 0; ct < CT; ++ct) acc[r][ct] = _mm512_setzero_si512();
  for (int64_t t = 0; t < kStep / 4; ++t) {
    __m512i vv[CT];
    for (int ct = 0; ct < CT; ++ct) vv[ct] = _mm512_loadu_si512(vb + t * dh + c0 + ct * 16);
    for (int r = 0; r < R; ++r) {
      const __m512i pb = _mm512_set1_epi32(static_cast<int>(pa[(r0 + r) * (kStep / 4) + t]));
      for (int ct = 0; ct < CT; ++ct) acc[r][ct] = dpbusd(acc[r][ct], pb, vv[ct]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m512 f = _mm512_set1_ps(bs[r0 + r]);
    for (int ct = 0; ct < CT; ++ct) {
      float* dst = o + (r0 + r) * dh + c0 + ct * 16;
      _mm512_storeu_ps(dst, _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][ct]), f, _mm512_loadu_ps(dst)));
    }
  }
}

// run_items_with's P·V for calls without a causal mask: P in u8, V in int8
// (Vq [kv head][block][8 key quads][dh], pack_v_block_i8, with its channel
// means and scales [kv head][dh]); out = (O · (1 / l)) · sv + mean.
struct Int8Values {
  const uint32_t* vq;
  const float* mean;
  const float* sv;
  int64_t dh;
  QVL_AVX512_VNNI void block(const float* s, const int64_t* valid, int64_t rows, int64_t block, float* m, float* l,
                             float* o, uint32_t* scratch) const {
    float* bs = reinterpret_cast<float*>(scratch + kT * kStep / 4);  // after the codes
    softmax_rows16_u8(s, valid, m, l, o, dh, reinterpret_cast<uint8_t*>(scratch), bs);
    const uint32_t* vb = vq + block * (kStep / 4 * dh);
    for (int64_t r0 = 0; r0 < rows; r0 += 4) {  // rows past nq: no output, no P·V
      int64_t c0 = 0;
      for (; c0 + 64 <= dh; c0 += 64) values_i8<4, 4>(scratch, r0, vb, dh, c0, bs, o);
      if (c0 < dh) values_i8<4, 2>(scratch, r0, vb, dh, c0, bs, o);  // dh is a multiple of 32
    }
  }
  QVL_AVX512_VNNI void finish(int64_t kvh, const float* o, float l, float* dst) const {
    const __m512 inv = _mm512_set1_ps(l > 0 ? 1.0f / l : 0.0f);
    for (int64_t c = 0; c < dh; c += 16)
      _mm512_storeu_ps(dst + c, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_loadu_ps(o + c), inv),
                                                _mm512_loadu_ps(sv + kvh * dh + c), _mm512_loadu_ps(mean + kvh * dh + c)));
  }
};

// S [R][32] (row stride kStep) = Q·Kᵀ for query rows [r0, r0 + R): qa the
// item's [16 rows][dh/4] u8x4 codes (n + 128), sq their scales; kb one block
// of Kp.
template <int R>
QVL_AVX512_VNNI void scores(const uint32_t* qa, const float* sq, int64_t r0, int64_t quads, const uint32_t* kb,
                            float* s) {
  const int32_t* corr = reinterpret_cast<const int32_t*>(kb + quads * kStep);
  const float* scale = reinterpret_cast<const float*>(kb + quads * kStep + kStep);
  // Separate arrays, started at zero: GCC kept [R][2] started from the
  // corrections on the stack.
  __m512i acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_si512();
  for (int64_t qd = 0; qd < quads; ++qd) {
    const __m512i k0 = _mm512_loadu_si512(kb + qd * kStep), k1 = _mm512_loadu_si512(kb + qd * kStep + 16);
    for (int r = 0; r < R; ++r) {
      const __m512i qb = _mm512_set1_epi32(static_cast<int>(qa[(r0 + r) * quads + qd]));
      acc0[r] = dpbusd(acc0[r], qb, k0);
      acc1[r] = dpbusd(acc1[r], qb, k1);
    }
  }
  const __m512i c0 = _mm512_loadu_si512(corr), c1 = _mm512_loadu_si512(corr + 16);
  const __m512 s0 = _mm512_loadu_ps(scale), s1 = _mm512_loadu_ps(scale + 16);
  for (int r = 0; r < R; ++r) {
    const __m512 f = _mm512_set1_ps(sq[r0 + r]);
    _mm512_storeu_ps(s + r * kStep,
                     _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc0[r], c0)), _mm512_mul_ps(f, s0)));
    _mm512_storeu_ps(s + r * kStep + 16,
                     _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(acc1[r], c1)), _mm512_mul_ps(f, s1)));
  }
}

// One thread's query rows of an item as int8 (bf16_dot_steps::run_items'
// Tile).
struct QueryTile {
  const float* q;
  const uint32_t* kp;  // Kp, all kv heads and blocks
  int64_t quads, block_u32;
  ScratchVector<uint32_t> qa;  // [16 rows][quads]
  alignas(64) float sq[kT];
  QVL_AVX512_VNNI void load(const AttentionParams& p, int64_t h, int64_t i0, int64_t rows) {
    const float qscale = p.scale * 1.4426950408889634f;  // log2(e)
    int32_t unused;
    for (int64_t r = 0; r < kT; ++r) {
      uint8_t* codes = reinterpret_cast<uint8_t*>(qa.data() + r * quads);
      if (r < rows)
        sq[r] = round_row_i8(q + (i0 + r) * p.q_stride + h * p.head_dim, p.head_dim, qscale, nullptr, 128, codes,
                             &unused);
      else
        std::memset(codes, 128, static_cast<size_t>(p.head_dim)), sq[r] = 0.0f;
    }
  }
  void scores(int64_t block, int64_t rows, float* s) const {
    const uint32_t* kb = kp + block * block_u32;
    int8dot::scores<8>(qa.data(), sq, 0, quads, kb, s);
    if (rows > 8) int8dot::scores<8>(qa.data(), sq, 8, quads, kb, s + 8 * kStep);
  }
};

template <class T>
void attention_int8(const float* q, const T* k, const T* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  if (!attention_fits(p))
    fail("attention: the int8 kernel needs head_dim a multiple of 32 up to 256, not ", p.head_dim);
  if (!attention_usable()) fail("attention: the int8 kernel needs AVX512-VNNI and AVX512-BF16, which this CPU lacks");
  if (p.nq <= 0) return;
  const int64_t dh = p.head_dim, quads = dh / 4, blocks = (p.nkv + kStep - 1) / kStep;
  // Non-causal calls take P·V in int8 (int8_attention.h, "values"); causal
  // ones, and calls without keys (no means to take), in bf16, as the bf16
  // kernel.
  const bool int8_values = !p.causal && p.nkv > 0;
  const int64_t k_block_u32 = quads * kStep + 2 * kStep, v_block_u32 = int8_values ? kStep / 4 * dh : kStep / 2 * dh;
  thread_local ScratchVector<uint32_t> kp_buf, vp_buf;  // the caller's, kept across calls
  thread_local ScratchVector<float> mean_buf;
  fit_scratch(kp_buf, static_cast<size_t>(p.kv_heads * blocks * k_block_u32));
  fit_scratch(vp_buf, static_cast<size_t>(p.kv_heads * blocks * v_block_u32));
  uint32_t* kp = kp_buf.data();
  uint32_t* vp = vp_buf.data();
  // Smoothing K, and V, only where the keys are the call's alone
  // (int8_attention.h): per kv head, K's mean, then V's mean, channel scales
  // and their inverses. (The workers reach the buffers through pointers: a
  // thread_local named in the lambda would be each worker's own.)
  float *k_mean = nullptr, *v_mean = nullptr, *v_scale = nullptr, *v_inv = nullptr;
  if (!p.causal) {
    fit_scratch(mean_buf, static_cast<size_t>(4 * p.kv_heads * dh));
    k_mean = mean_buf.data(), v_mean = k_mean + p.kv_heads * dh;
    v_scale = v_mean + p.kv_heads * dh, v_inv = v_scale + p.kv_heads * dh;
    pool.parallel_for(p.kv_heads, [&](int64_t h0, int64_t h1, int) {
      for (int64_t h = h0; h < h1; ++h) {
        mean_rows(k, p, h, k_mean + h * dh);
        if (!int8_values) continue;  // no keys: no V to round
        mean_rows(v, p, h, v_mean + h * dh);
        v_channel_scales(v, p, h, v_mean + h * dh, v_scale + h * dh, v_inv + h * dh);
      }
    });
  }
  pool.parallel_for(p.kv_heads * blocks, [&](int64_t b0, int64_t b1, int) {
    for (int64_t item = b0; item < b1; ++item) {
      const int64_t h = item / blocks, kb = item % blocks;
      pack_k_block(k, p, h, kb, k_mean ? k_mean + h * dh : nullptr, kp + item * k_block_u32);
      if (int8_values)
        pack_v_block_i8(v, p, h, kb, v_mean + h * dh, v_inv + h * dh, vp + item * v_block_u32);
      else
        bf16_dot_steps::pack_v_block(v, p, h, kb, vp + item * v_block_u32);
    }
  });
  const auto make_tile = [&] {
    return QueryTile{q, kp, quads, k_block_u32, ScratchVector<uint32_t>(static_cast<size_t>(kT * quads)), {}};
  };
  if (int8_values)
    bf16_dot_steps::run_items_with(p, out, pool, make_tile, Int8Values{vp, v_mean, v_scale, dh});
  else
    bf16_dot_steps::run_items<Exp2Degree4>(p, vp, out, pool, make_tile);
}

}  // namespace

void attention(const float* q, const float* k, const float* v, float* out, const AttentionParams& p, ThreadPool& pool) {
  attention_int8(q, k, v, out, p, pool);
}
void attention(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
               ThreadPool& pool) {
  attention_int8(q, k, v, out, p, pool);
}

#else  // not x86-64

bool attention_usable() { return false; }
void attention(const float*, const float*, const float*, float*, const AttentionParams&, ThreadPool&) {
  fail("attention: the int8 kernel is x86-64 only");
}
void attention(const float*, const uint16_t*, const uint16_t*, float*, const AttentionParams&, ThreadPool&) {
  fail("attention: the int8 kernel is x86-64 only");
}

#endif

}  // namespace qvl::int8dot
