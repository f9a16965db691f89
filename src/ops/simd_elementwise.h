// Internal: Highway element-wise kernels, reached through ops.h (elementwise.cpp).
#pragma once

#include <cstdint>

namespace qvl::simd {

void bf16_to_f32(const uint16_t* src, float* dst, int64_t n);
void f32_to_f16(const float* src, uint16_t* dst, int64_t n);
void f16_to_f32(const uint16_t* src, float* dst, int64_t n);
void rms_norm(const float* x, const float* weight, float* out, int64_t rows, int64_t dim, float eps);
void layer_norm(const float* x, const float* gamma, const float* beta, float* out, int64_t rows, int64_t dim,
                float eps);
void gelu_tanh(float* x, int64_t n);
void gelu_erf(float* x, int64_t n);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
void add(const float* a, const float* b, float* out, int64_t n);
void softmax(float* x, int64_t n);
double log_sum_exp(const float* x, int64_t n, float scale);
int64_t argmax(const float* x, int64_t n);
void rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t stride, const float* cos,
          const float* sin);

}  // namespace qvl::simd
