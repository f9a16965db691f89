// Internal: the Highway matmul kernels, reached through matmul() (matmul.cpp).
#pragma once

#include <cstdint>

#include "ops/matmul.h"

namespace qvl::simd {

struct MatmulArgs {
  const float* x;  // [m, ldx]
  int64_t m, ldx;
  const WeightMatrix* w;
  const float* bias;  // [n] or null
  float* y;           // [m, ldy]
  int64_t ldy;
};

// m <= kSmallM: every weight row is read once and applied to all m rows of x
// (decode; memory-bound).
constexpr int64_t kSmallM = 8;
void matmul_small_m(const MatmulArgs& a, ThreadPool& pool);
// Larger m: register-blocked outer-product tiles (prefill; compute-bound).
void matmul_gemm(const MatmulArgs& a, ThreadPool& pool);
const char* matmul_target();  // the dispatched target's name

}  // namespace qvl::simd
