// The matmul dispatch point: picks the kernel for the weight format and the
// number of activation rows, and splits the output columns across threads.
#include "ops/matmul.h"

#include "ops/scalar.h"
#include "ops/simd_gemm_bf16.h"
#include "ops/simd_matmul.h"
#include "util/error.h"

namespace qvl {

const char* matmul_simd_target() { return simd::matmul_target(); }

bool matmul_fast_bf16_supported() { return simd::gemm_bf16_supported(); }

void matmul(const float* x, int64_t m, int64_t ldx, const WeightMatrix& w, const float* bias, float* y,
            int64_t ldy, ThreadPool& pool) {
  if (m <= 0 || w.rows() == 0) return;
  if (ldx < w.cols() || ldy < w.rows())
    fail("matmul: stride too small (ldx ", ldx, " < k ", w.cols(), " or ldy ", ldy, " < n ", w.rows(), ")");
  simd::MatmulArgs a{x, m, ldx, &w, bias, y, ldy};
  if (m <= simd::kSmallM)
    simd::matmul_small_m(a, pool);  // memory-bound: always exact
  else if (w.format() == WeightFormat::BF16 && w.precision() == MatmulPrecision::Fast && simd::gemm_bf16_supported())
    simd::gemm_bf16(a, pool);
  else
    simd::matmul_gemm(a, pool);
}

}  // namespace qvl
