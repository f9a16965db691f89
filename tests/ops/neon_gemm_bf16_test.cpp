// MatmulPrecision::Fast on AArch64: Arm's BFDotAdd (scalar::bfdot_add, the
// twin's step) on cases whose bits say which arithmetic it is, the twin
// against the exact product, and the BFMMLA and BFDOT kernels
// (neon_gemm_bf16.h) against the twin bit for bit. The kernels need FEAT_BF16
// and are skipped with a message without it (qemu -cpu cortex-a76; -cpu max
// has it). The twin's tests run on every architecture.
#include "ops/neon_gemm_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "ops/scalar.h"
#include "ops/scalar_arm.h"
#include "test_util.h"

namespace qvl {
namespace {

using neon::Bf16Kernel;
using testing::Misaligned;
using testing::random_bf16;
using testing::random_floats;

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint16_t bf(float v) { return f32_to_bf16(v); }  // exact for the powers of two below

TEST(BfdotAdd, ExactSumsAreExact) {
  EXPECT_EQ(scalar::bfdot_add(1.0f, bf(1.0f), bf(2.0f), bf(3.0f), bf(4.0f)), 12.0f);
  EXPECT_EQ(scalar::bfdot_add(-2.5f, bf(0.5f), bf(-1.5f), bf(5.0f), bf(2.0f)), -3.0f);
  EXPECT_EQ(bits(scalar::bfdot_add(0.0f, bf(0.0f), bf(0.0f), bf(0.0f), bf(0.0f))), 0u);
}

// Rounding is to odd: the truncated value with its last bit set when inexact.
TEST(BfdotAdd, RoundsToOdd) {
  const float t = std::ldexp(1.0f, -12);  // t·t = 2^-24: half an ulp of 1
  // 1 + 2^-24: to nearest (a tie) 1, to odd 1 + 2^-23.
  EXPECT_EQ(bits(scalar::bfdot_add(1.0f, bf(t), bf(0.0f), bf(t), bf(0.0f))), 0x3f800001u);
  EXPECT_EQ(bits(scalar::bfdot_add(-1.0f, bf(-t), bf(0.0f), bf(t), bf(0.0f))), 0xbf800001u);
  // 1 - 2^-25: to nearest (a tie) 1, to odd the float below 1 (0x3f7fffff).
  const float h = std::ldexp(1.0f, -13);
  EXPECT_EQ(bits(scalar::bfdot_add(1.0f, bf(-h), bf(0.0f), bf(std::ldexp(1.0f, -12)), bf(0.0f))), 0x3f7fffffu);
  // The pair is summed (and rounded) before the accumulator is added:
  // 1 + 2^-30 rounds to odd 1 + 2^-23, then 0 + that is exact.
  EXPECT_EQ(bits(scalar::bfdot_add(0.0f, bf(1.0f), bf(std::ldexp(1.0f, -15)), bf(1.0f), bf(std::ldexp(1.0f, -15)))),
            0x3f800001u);
}

TEST(BfdotAdd, DenormalsAreZero) {
  // A denormal bf16 input reads as zero (2^-133 · 2^100 would be normal).
  EXPECT_EQ(scalar::bfdot_add(0.0f, 0x0001, bf(0.0f), bf(std::ldexp(1.0f, 100)), bf(0.0f)), 0.0f);
  // A product or sum below the smallest normal is a zero of its sign.
  const float tiny = std::ldexp(1.0f, -70);
  EXPECT_EQ(bits(scalar::bfdot_add(0.0f, bf(tiny), bf(0.0f), bf(tiny), bf(0.0f))), 0u);
  // 2^-120 - (1 + 2^-7)·2^-120 = -2^-127: a negative zero.
  EXPECT_EQ(bits(scalar::bfdot_add(std::ldexp(1.0f, -120), bf(-(1.0f + std::ldexp(1.0f, -7))), bf(0.0f),
                                   bf(std::ldexp(1.0f, -120)), bf(0.0f))),
            0x80000000u);
  // A denormal accumulator reads as zero.
  EXPECT_EQ(scalar::bfdot_add(from_bits(0x00000100), bf(0.0f), bf(0.0f), bf(0.0f), bf(0.0f)), 0.0f);
}

// y = x·Wᵀ + bias in double, x exact.
std::vector<double> exact(const float* x, int64_t m, int64_t ldx, const std::vector<uint16_t>& w, int64_t n, int64_t k,
                          const float* bias) {
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t c = 0; c < k; ++c) acc += double(x[i * ldx + c]) * bf16_to_f32(w[j * k + c]);
      y[i * n + j] = acc;
    }
  return y;
}

// Rounding x to bf16 costs ~0.15 % (tests/ops/matmul_bf16_fast_test.cpp,
// kFastRelL2); rounding each step to odd adds an ulp at most.
TEST(MatmulBf16FastArm, TwinAgainstExactProduct) {
  const int64_t m = 9, n = 33, k = 301;
  auto x = random_floats(m * k, 2);
  auto w = random_bf16(n * k, 3, 0.05f);
  std::vector<float> y(static_cast<size_t>(m * n));
  scalar::matmul_bf16_fast_arm(x.data(), m, k, WeightMatrix::view_bf16(w.data(), n, k), nullptr, y.data(), n);
  const auto ref = exact(x.data(), m, k, w, n, k, nullptr);
  double num = 0, den = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    num += (y[i] - ref[i]) * (y[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  EXPECT_GT(std::sqrt(num / den), 1e-4);  // x really is rounded
  EXPECT_LT(std::sqrt(num / den), 3e-3);
}

std::string skip_reason() {
#if defined(__aarch64__)
  return "this CPU has no BF16 (FEAT_BF16: BFDOT, BFMMLA)";
#else
  return "not AArch64";
#endif
}

// m across tile sizes (partial row pairs, odd m), n across panels, k odd (a
// padded pair), k % 4 != 0 (a padded chunk) and k % 8 (BFDOT's half vector),
// strides, misaligned x, bias or none; the twin's bits exactly.
void expect_twin_bits(Bf16Kernel kernel) {
  ThreadPool pool(2);
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 7, 1},   {2, 9, 3},     {7, 37, 64},  {9, 5, 31},  {16, 64, 33},
                          {33, 8, 96}, {57, 19, 100}, {100, 33, 65}, {3, 70, 4}, {64, 1, 130}};
  for (const Shape& s : shapes)
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(::testing::Message() << neon::bf16_kernel_name(kernel) << " m=" << s.m << " n=" << s.n
                                        << " k=" << s.k << " bias=" << with_bias);
      const int64_t ldx = s.k + 3, ldy = s.n + 5;
      Misaligned<float> x(random_floats(s.m * ldx, static_cast<uint32_t>(s.m * 131 + s.k)), 1);
      const auto w = random_bf16(s.n * s.k, static_cast<uint32_t>(s.n + 7), 0.05f);
      const auto bias = random_floats(s.n, 9);
      const float* b = with_bias ? bias.data() : nullptr;
      const WeightMatrix wm = WeightMatrix::view_bf16(w.data(), s.n, s.k);
      std::vector<float> got(static_cast<size_t>(s.m * ldy), 12345.0f), want(got.size(), 12345.0f);
      neon::gemm_bf16(kernel, {x.data(), s.m, ldx, &wm, b, got.data(), ldy}, pool);
      scalar::matmul_bf16_fast_arm(x.data(), s.m, ldx, wm, b, want.data(), ldy);
      for (size_t at = 0; at < got.size(); ++at)
        ASSERT_EQ(bits(got[at]), bits(want[at])) << "row " << at / ldy << " col " << at % ldy << ": " << got[at]
                                                 << " vs twin " << want[at];
    }
}

TEST(NeonGemmBf16, BfmmlaIsItsTwinBitForBit) {
  if (!neon::bf16_kernel_available(Bf16Kernel::Bfmmla)) GTEST_SKIP() << skip_reason();
  expect_twin_bits(Bf16Kernel::Bfmmla);
}

TEST(NeonGemmBf16, BfdotIsItsTwinBitForBit) {
  if (!neon::bf16_kernel_available(Bf16Kernel::Bfdot)) GTEST_SKIP() << skip_reason();
  expect_twin_bits(Bf16Kernel::Bfdot);
}

// matmul() with Fast weights and m > 8 runs BFMMLA where the CPU has BF16,
// and matmul_kernel() says so.
TEST(NeonGemmBf16, MatmulRunsItAndNamesIt) {
  EXPECT_EQ(neon::bf16_kernel() != Bf16Kernel::None, cpu_features().arm_bf16);
  if (neon::bf16_kernel() == Bf16Kernel::None) GTEST_SKIP() << skip_reason();
  ThreadPool pool(2);
  const int64_t m = 40, n = 24, k = 72;
  const auto x = random_floats(m * k, 21);
  const auto w = random_bf16(n * k, 22, 0.05f);
  WeightMatrix wm = WeightMatrix::view_bf16(w.data(), n, k);
  wm.set_precision(MatmulPrecision::Fast);
  std::vector<float> y(static_cast<size_t>(m * n)), want(y.size());
  matmul(x.data(), m, wm, nullptr, y.data(), pool);
  scalar::matmul_bf16_fast_arm(x.data(), m, k, wm, nullptr, want.data(), n);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(bits(y[i]), bits(want[i])) << i;
  const MatmulKernel kernel = matmul_kernel(wm, m);
  EXPECT_EQ(kernel.unit, MatmulUnit::Bf16Dot);
  EXPECT_EQ(kernel.name, "gemm bf16 BFMMLA (FEAT_BF16)");
}

}  // namespace
}  // namespace qvl
