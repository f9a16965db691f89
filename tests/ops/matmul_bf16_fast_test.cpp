// MatmulPrecision::Fast: the AVX512-BF16 kernel (simd_gemm_bf16.cpp) against
// its scalar twin (scalar::matmul_bf16_fast) and against the exact product.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/amx_matmul.h"
#include "ops/matmul.h"
#include "ops/scalar.h"
#include "ops/scalar_arm.h"
#include "ops/simd_gemm_bf16.h"
#include "test_util.h"
#include "util/error.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_bf16;
using testing::random_floats;

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// y = x·Wᵀ + bias in double, x exact (not rounded).
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

double rel_l2(const std::vector<float>& y, int64_t ldy, const std::vector<double>& ref, int64_t m, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double d = y[i * ldy + j] - ref[i * n + j];
      num += d * d;
      den += ref[i * n + j] * ref[i * n + j];
    }
  return std::sqrt(num / den);
}

TEST(RoundBf16, AsVcvtne2ps2bf16) {
  EXPECT_EQ(scalar::round_bf16(1.0f), 0x3f80);
  // Ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 -> 1; 1 + 3·2^-8 -> 1 + 2^-6.
  EXPECT_EQ(scalar::round_bf16(from_bits(0x3f808000)), 0x3f80);
  EXPECT_EQ(scalar::round_bf16(from_bits(0x3f818000)), 0x3f82);
  EXPECT_EQ(scalar::round_bf16(from_bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(scalar::round_bf16(-2.5f), f32_to_bf16(-2.5f));
  EXPECT_EQ(scalar::round_bf16(from_bits(0x00400000)), 0x0000);  // denormal -> +0
  EXPECT_EQ(scalar::round_bf16(from_bits(0x80000001)), 0x8000);  // denormal -> -0
  EXPECT_EQ(scalar::round_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(scalar::round_bf16(from_bits(0x7f7fffff)), 0x7f80);  // max float rounds up to infinity
  EXPECT_EQ(scalar::round_bf16(from_bits(0x7fa00000)) & 0x7fc0, 0x7fc0);  // NaN stays NaN, quieted
  for (float v : random_floats(1000, 1, -100, 100)) ASSERT_EQ(scalar::round_bf16(v), f32_to_bf16(v)) << v;
}

TEST(MatmulPrecision, NamesRoundTrip) {
  for (auto p : {MatmulPrecision::Exact, MatmulPrecision::Fast})
    EXPECT_EQ(parse_matmul_precision(matmul_precision_name(p)), p);
  EXPECT_THROW(parse_matmul_precision("bf16"), Error);
  EXPECT_EQ(WeightMatrix().precision(), MatmulPrecision::Exact);
}

// Rounding x to bf16 (8 significant bits, relative error <= 2^-9 per
// element) gives ~0.1 % rms per product term; with random-sign terms the
// sum's relative L2 error is about that: measured 0.15 % here (uniform x,
// normal weights) and by bench/ops_report at the model's shapes. Bound: 0.3 %.
constexpr double kFastRelL2 = 3e-3;

TEST(MatmulBf16Fast, TwinAgainstExactProduct) {
  const int64_t m = 9, n = 33, k = 301;
  auto x = random_floats(m * k, 2);
  auto w = random_bf16(n * k, 3, 0.05f);
  WeightMatrix wm = WeightMatrix::view_bf16(w.data(), n, k);
  std::vector<float> y(static_cast<size_t>(m * n));
  scalar::matmul_bf16_fast(x.data(), m, k, wm, nullptr, y.data(), n);
  const double e = rel_l2(y, n, exact(x.data(), m, k, w, n, k, nullptr), m, n);
  EXPECT_GT(e, 1e-4);  // x really is rounded
  EXPECT_LT(e, kFastRelL2);
}

TEST(MatmulBf16Fast, TwinRoundsXOnly) {
  // x already bf16: the twin equals the exact product up to f32 summation.
  const int64_t m = 3, n = 5, k = 64;
  auto w = random_bf16(n * k, 4);
  auto xb = random_bf16(m * k, 5);
  std::vector<float> x(xb.size());
  for (size_t i = 0; i < xb.size(); ++i) x[i] = bf16_to_f32(xb[i]);
  std::vector<float> y(static_cast<size_t>(m * n));
  scalar::matmul_bf16_fast(x.data(), m, k, WeightMatrix::view_bf16(w.data(), n, k), nullptr, y.data(), n);
  const auto ref = exact(x.data(), m, k, w, n, k, nullptr);
  for (int64_t i = 0; i < m * n; ++i) EXPECT_NEAR(y[i], ref[i], 1e-4) << i;
}

struct Shape {
  int64_t m, n, k;
};

// The kernel against the twin over shapes that hit every edge: m across tile
// sizes (9: one partial vector; 33: 3 vectors; 100: a full tile of 48 and a
// partial one; 257), odd n (partial panels and groups), k odd (a padded pair)
// and not a multiple of 32 (masked conversion), strides and misaligned x.
// The AVX512-BF16 kernel itself, called directly: with AMX, matmul() runs
// the tile kernel instead (tests/ops/amx_matmul_test.cpp).
TEST(MatmulBf16Fast, KernelMatchesTwin) {
#if defined(__aarch64__)
  GTEST_SKIP() << "AArch64 rounds to odd: its kernels and twin are tests/ops/neon_gemm_bf16_test.cpp";
#endif
  if (!simd::gemm_bf16_supported()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  ThreadPool pool(2);
  int64_t outputs = 0, identical = 0;
  const Shape shapes[] = {{9, 7, 1},    {9, 37, 64},   {33, 5, 31},   {33, 64, 33},   {57, 9, 96},
                          {100, 37, 100}, {100, 8, 257}, {257, 33, 65}, {257, 1, 128}, {64, 70, 47}};
  for (const Shape& s : shapes) {
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k << " bias=" << with_bias);
      const int64_t ldx = s.k + 3, ldy = s.n + 5;
      auto xs = random_floats(s.m * ldx, static_cast<uint32_t>(s.m * 131 + s.k));
      Misaligned<float> x(xs, 1);
      auto w = random_bf16(s.n * s.k, static_cast<uint32_t>(s.n + 7), 0.05f);
      auto bias = random_floats(s.n, 9);
      const float* b = with_bias ? bias.data() : nullptr;
      WeightMatrix wm = WeightMatrix::view_bf16(w.data(), s.n, s.k);
      wm.set_precision(MatmulPrecision::Fast);
      const float sentinel = 12345.0f;
      std::vector<float> got(static_cast<size_t>(s.m * ldy), sentinel), want(got.size(), sentinel);
      simd::gemm_bf16({x.data(), s.m, ldx, &wm, b, got.data(), ldy}, pool);
      scalar::matmul_bf16_fast(x.data(), s.m, ldx, wm, b, want.data(), ldy);
      // Same operations in the same order (one lane per output, pairs in
      // order, vdpbf16ps's order within a pair): measured bit-identical on
      // Zen 4. Allowed: 2 ulp of the sum of |terms| (a fused pair would round once).
      for (int64_t i = 0; i < s.m; ++i)
        for (int64_t j = 0; j < ldy; ++j) {
          const size_t at = static_cast<size_t>(i * ldy + j);
          if (j >= s.n) {
            ASSERT_EQ(got[at], sentinel) << "wrote past n at row " << i;
            continue;
          }
          double mag = 0;
          for (int64_t c = 0; c < s.k; ++c)
            mag += std::fabs(bf16_to_f32(scalar::round_bf16(x.data()[i * ldx + c])) * bf16_to_f32(w[j * s.k + c]));
          ASSERT_NEAR(got[at], want[at], 2 * std::ldexp(mag, -23) + 1e-30) << "row " << i << " col " << j;
          ++outputs;
          identical += got[at] == want[at];
        }
    }
  }
  std::printf("kernel vs twin: %ld of %ld outputs bit-identical\n", long(identical), long(outputs));
}

TEST(MatmulBf16Fast, KernelAgainstExactProduct) {
  if (!matmul_fast_bf16_supported()) GTEST_SKIP() << "no AVX512-BF16 on this CPU: Fast takes the exact path";
  ThreadPool pool(2);
  for (const Shape& s : {Shape{100, 96, 512}, Shape{257, 64, 333}}) {
    SCOPED_TRACE(::testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k);
    auto x = random_floats(s.m * s.k, 11);
    auto w = random_bf16(s.n * s.k, 12, 0.02f);
    WeightMatrix wm = WeightMatrix::view_bf16(w.data(), s.n, s.k);
    wm.set_precision(MatmulPrecision::Fast);
    std::vector<float> y(static_cast<size_t>(s.m * s.n));
    matmul(x.data(), s.m, wm, nullptr, y.data(), pool);
    const double e = rel_l2(y, s.n, exact(x.data(), s.m, s.k, w, s.n, s.k, nullptr), s.m, s.n);
    std::printf("fast bf16 m=%ld n=%ld k=%ld: relative L2 error %.5f\n", long(s.m), long(s.n), long(s.k), e);
    EXPECT_GT(e, 1e-4);
    EXPECT_LT(e, kFastRelL2);
  }
}

// Decode (m <= 8) stays exact, as do other formats: bit-identical to Exact.
// And m > 8 really takes the fast kernel where the CPU has it.
TEST(MatmulBf16Fast, OnlyLargeMBf16IsAffected) {
  ThreadPool pool(2);
  const int64_t n = 40, k = 96;
  auto w = random_bf16(n * k, 13, 0.05f);
  auto x = random_floats(20 * k, 14);
  for (WeightFormat f : {WeightFormat::BF16, WeightFormat::F32, WeightFormat::Q8, WeightFormat::Q4}) {
    WeightMatrix exact_w = f == WeightFormat::BF16 ? WeightMatrix::view_bf16(w.data(), n, k)
                                                   : WeightMatrix::from_bf16(w.data(), n, k, f, &pool);
    WeightMatrix fast_w = exact_w;
    fast_w.set_precision(MatmulPrecision::Fast);
    for (int64_t m : {1, 8, 20}) {
      SCOPED_TRACE(::testing::Message() << weight_format_name(f) << " m=" << m);
      std::vector<float> a(static_cast<size_t>(m * n)), b(a.size());
      matmul(x.data(), m, exact_w, nullptr, a.data(), pool);
      matmul(x.data(), m, fast_w, nullptr, b.data(), pool);
      if (f == WeightFormat::BF16 && m > 8 && matmul_fast_bf16_supported()) {
        EXPECT_NE(a, b);
        std::vector<float> twin(a.size());
#if defined(__aarch64__)
        scalar::matmul_bf16_fast_arm(x.data(), m, k, fast_w, nullptr, twin.data(), n);  // BFMMLA rounds to odd
#else
        scalar::matmul_bf16_fast(x.data(), m, k, fast_w, nullptr, twin.data(), n);
#endif
        if (amx::bf16_usable()) {  // the tile unit adds in its own order
          for (size_t i = 0; i < b.size(); ++i) ASSERT_NEAR(b[i], twin[i], 1e-5) << i;
        } else {
          EXPECT_EQ(b, twin);
        }
      } else {
        EXPECT_EQ(a, b);
      }
    }
  }
}

TEST(MatmulBf16Fast, SameResultForAnyThreadCount) {
  if (!matmul_fast_bf16_supported()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  const int64_t m = 70, n = 200, k = 130;
  auto w = random_bf16(n * k, 15, 0.05f);
  auto x = random_floats(m * k, 16);
  WeightMatrix wm = WeightMatrix::view_bf16(w.data(), n, k);
  wm.set_precision(MatmulPrecision::Fast);
  std::vector<float> one(static_cast<size_t>(m * n)), two(one.size());
  ThreadPool p1(1), p2(2);
  matmul(x.data(), m, wm, nullptr, one.data(), p1);
  matmul(x.data(), m, wm, nullptr, two.data(), p2);
  EXPECT_EQ(one, two);
}

}  // namespace
}  // namespace qvl
