// Public element-wise and row-wise kernels: the one dispatch point to the
// Highway implementations (simd_elementwise.cpp), which pick the CPU's best
// SIMD target at run time. Scalar twins: scalar.cpp.
#include "ops/ops.h"
#include "ops/simd_elementwise.h"

namespace qvl {

void bf16_to_f32(const uint16_t* src, float* dst, int64_t n) { simd::bf16_to_f32(src, dst, n); }
void rms_norm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps) {
  simd::rms_norm(x, weight, out, rows, dim, eps);
}
void layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
                float eps) {
  simd::layer_norm(x, gamma, beta, out, rows, dim, eps);
}
void gelu_tanh(float* x, int64_t n) { simd::gelu_tanh(x, n); }
void gelu_erf(float* x, int64_t n) { simd::gelu_erf(x, n); }
void silu_mul(const float* gate, const float* up, float* out, int64_t n) { simd::silu_mul(gate, up, out, n); }
void add(const float* a, const float* b, float* out, int64_t n) { simd::add(a, b, out, n); }
void softmax(float* x, int64_t n) { simd::softmax(x, n); }
double log_sum_exp(const float* x, int64_t n, float scale) { return simd::log_sum_exp(x, n, scale); }
int64_t argmax(const float* x, int64_t n) { return simd::argmax(x, n); }
void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
          const float* sin) {
  simd::rope(x, tokens, heads, head_dim, stride, cos, sin);
}

}  // namespace qvl
