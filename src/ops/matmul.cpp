// The matmul dispatch point: picks the kernel for the weight format and the
// number of activation rows, and splits the output columns across threads.
#include "ops/matmul.h"

#include <algorithm>
#include <limits>

#include "ops/amx_matmul.h"
#include "ops/machine_limits.h"
#include "ops/scalar.h"
#include "ops/simd_gemm_bf16.h"
#include "ops/simd_matmul.h"
#include "util/error.h"

namespace qvl {

const char* matmul_simd_target() { return simd::matmul_target(); }

static bool quantized(WeightFormat format) { return format == WeightFormat::Q8 || format == WeightFormat::Q4; }

int64_t matmul_row_exact_rows(WeightFormat format) {
  return quantized(format) ? std::numeric_limits<int64_t>::max() : simd::kSmallM;
}

bool matmul_fast_bf16_supported() { return simd::gemm_bf16_supported() || amx::bf16_usable(); }

bool matmul_fast_bf16_pays() {
  static const bool pays =
      amx::bf16_usable() || (simd::gemm_bf16_supported() && measure_bf16_dot_vs_fma() >= 1.25);
  return pays;
}

MatmulKernel matmul_kernel(const WeightMatrix& w, int64_t m) {
  const char* shape = m <= simd::kSmallM ? "gemv" : "gemm";
  if (w.format() == WeightFormat::Q8 || w.format() == WeightFormat::Q4) {
    if (m > simd::kSmallM && simd::matmul_quant_gemm_on_amx())
      return {"gemm int8 AMX tdpbssd, scaled with AVX-512", MatmulUnit::AmxInt8};
    // neon_matmul_quant.h: SDOT or SMMLA (by m) where an AArch64 CPU has them.
    if (const char* arm = simd::matmul_quant_arm_instruction(m))
      return {cat(shape, " int8 ", arm, " (", matmul_simd_target(), ")"), MatmulUnit::Int8Dot};
    // simd_matmul_quant.cpp: vpdpbusd on its VNNI targets, else vpmaddubsw +
    // vpmaddwd (a benchmark may hold dispatch to AVX2 on a VNNI CPU).
    const simd::QuantInstruction q = simd::matmul_quant_instruction();
    return {cat(shape, " int8 ", q.name, " (", matmul_simd_target(), ")"), q.unit};
  }
  if (m > simd::kSmallM && w.format() == WeightFormat::BF16 && amx::bf16_usable())
    return {w.precision() == MatmulPrecision::Fast ? "gemm bf16 AMX tdpbf16ps"
                                                   : "gemm bf16 AMX tdpbf16ps, x in 3 bf16 parts (exact; 3x the operations)",
            MatmulUnit::AmxBf16};
  if (m > simd::kSmallM && w.format() == WeightFormat::BF16 && w.precision() == MatmulPrecision::Fast &&
      simd::gemm_bf16_supported())
#if defined(__aarch64__)
    return {"gemm bf16 BFMMLA (FEAT_BF16)", MatmulUnit::Bf16Dot};
#else
    return {"gemm bf16 vdpbf16ps (AVX512-BF16)", MatmulUnit::Bf16Dot};
#endif
  return {cat(shape, " f32 FMA", w.format() == WeightFormat::BF16 ? ", bf16 weights widened" : "", " (",
              simd_target_name(), ")"),
          MatmulUnit::FmaF32};
}

const char* matmul_unit_name(MatmulUnit unit) {
  switch (unit) {
    case MatmulUnit::FmaF32: return "fma_f32";
    case MatmulUnit::Int8Dot: return "int8_dot";
    case MatmulUnit::Int16Madd: return "int16_madd";
    case MatmulUnit::Bf16Dot: return "bf16_dot";
    case MatmulUnit::AmxInt8: return "amx_int8";
    case MatmulUnit::AmxBf16: return "amx_bf16";
  }
  return "?";
}

AmxStatus matmul_amx_status() { return {amx::int8_status(), amx::bf16_status()}; }

static void check_strides(int64_t ldx, const WeightMatrix& w, int64_t ldy) {
  if (ldx < w.cols() || ldy < w.rows())
    fail("matmul: stride too small (ldx ", ldx, " < k ", w.cols(), " or ldy ", ldy, " < n ", w.rows(), ")");
}

void matmul(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
            int64_t ldy, ThreadPool& pool, MatmulRows rows) {
  if (m <= 0 || w.rows() == 0) return;
  check_strides(ldx, w, ldy);
  // Prompt rows of f32/bf16 take the GEMM at any m (matmul.h, MatmulRows);
  // q8/q4 rows are the same bits on either path, so they keep the small-m one.
  if (m <= simd::kSmallM && (rows == MatmulRows::Decode || quantized(w.format()))) {
    const MatmulOutput out{&w, bias, y, ldy};
    return simd::matmul_small_m(x, m, ldx, {&out, 1}, pool);  // memory-bound: always exact
  }
  simd::MatmulArgs a{x, m, ldx, &w, bias, y, ldy};
  if (w.format() == WeightFormat::BF16 && amx::bf16_usable())
    amx::gemm_bf16(a, pool);  // fast or exact, by w.precision()
  else if (w.format() == WeightFormat::BF16 && w.precision() == MatmulPrecision::Fast && simd::gemm_bf16_supported())
    simd::gemm_bf16(a, pool);
  else
    simd::matmul_gemm(a, pool);
}

void matmul_each(const float* x, int64_t m, int64_t ldx, std::span<const MatmulOutput> outs, ThreadPool& pool,
                 MatmulRows rows) {
  const auto shares = [&](const MatmulOutput& o) {
    return o.w->format() == outs[0].w->format() && o.w->cols() == outs[0].w->cols() && o.w->rows() > 0;
  };
  if (m <= 0 || outs.empty()) return;
  const bool quant = quantized(outs[0].w->format());
  const bool gemm = m > simd::kSmallM || rows == MatmulRows::Prompt;
  if ((gemm && !quant) || !std::all_of(outs.begin(), outs.end(), shares)) {
    for (const MatmulOutput& o : outs) matmul(x, m, ldx, *o.w, o.bias, o.y, o.ldy, pool, rows);
    return;
  }
  for (const MatmulOutput& o : outs) check_strides(ldx, *o.w, o.ldy);
  if (m > simd::kSmallM)
    simd::matmul_quant_each(x, m, ldx, outs, pool);  // x rounded once for all the products
  else
    simd::matmul_small_m(x, m, ldx, outs, pool);
}

void matmul_many(std::span<const MatmulTask> tasks, ThreadPool& pool) {
  if (tasks.empty()) return;
  const WeightMatrix& w0 = *tasks[0].out.w;
  const bool together = std::all_of(tasks.begin(), tasks.end(), [&](const MatmulTask& t) {
    return t.m >= 1 && t.m <= simd::kSmallM && t.out.w->format() == w0.format() && t.out.w->cols() == w0.cols() &&
           t.out.w->rows() > 0;
  });
  if (!together) {
    for (const MatmulTask& t : tasks) matmul_each(t.x, t.m, t.ldx, {&t.out, 1}, pool);
    return;
  }
  for (const MatmulTask& t : tasks) check_strides(t.ldx, *t.out.w, t.out.ldy);
  simd::matmul_small_m_tasks(tasks, pool);
}

}  // namespace qvl
