// The AArch64 q8/q4 kernels (neon_matmul_quant.h), SDOT and SMMLA, against
// their scalar twin (scalar::matmul_rows) bit for bit: the integer sums are
// exact and the f32 steps the same (one fused multiply-add per group), so any
// difference is a bug. A kernel the CPU lacks is skipped with a message (under
// qemu: -cpu cortex-a76 has SDOT only, -cpu max both; see docs/platforms.md).
#include "ops/neon_matmul_quant.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "ops/quant.h"
#include "ops/scalar.h"
#include "ops/simd_matmul.h"
#include "test_util.h"

namespace qvl {
namespace {

using neon::Int8Kernel;
using testing::random_bf16;
using testing::random_floats;

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// m rows of x (row stride ldx) rounded as the kernels' callers round them
// (quant::XRow per row; corr = -offset · Σ codes, offset 128 for q8 and 8
// for q4, as simd_matmul_quant.cpp passes), row-major.
struct RoundedX {
  std::vector<int8_t> codes;
  std::vector<float> scales;
  std::vector<int32_t> corrs;
  neon::QuantX view;
  RoundedX(const float* x, int64_t m, int64_t ldx, int64_t k, bool q8) {
    const int64_t G = quant::groups(k);
    codes.resize(static_cast<size_t>(m * G * quant::kGroup));
    scales.resize(static_cast<size_t>(m * G));
    corrs.resize(static_cast<size_t>(m * G));
    for (int64_t i = 0; i < m; ++i) {
      quant::quantize_x_scalar(x + i * ldx, k,
                               {codes.data() + i * G * quant::kGroup, scales.data() + i * G, corrs.data() + i * G});
      for (int64_t g = 0; g < G; ++g) corrs[static_cast<size_t>(i * G + g)] *= -(q8 ? 128 : 8);
    }
    view = {codes.data(), scales.data(), corrs.data(), G * quant::kGroup, quant::kGroup, G, 1};
  }
};

std::string skip_reason(Int8Kernel k) {
#if defined(__aarch64__)
  return std::string("this CPU has no ") + (k == Int8Kernel::Smmla ? "I8MM (SMMLA)" : "dot product (SDOT)");
#else
  (void)k;
  return "not AArch64";
#endif
}

// Every m the kernels take (1..8), q8 and q4, n across block edges (a
// partial last block), k across group edges (a zero-padded last group), bias
// or none, y with a row stride past n; the twin's bits exactly, nothing
// written past n.
void expect_twin_bits(Int8Kernel kernel) {
  ThreadPool pool(0);
  uint32_t seed = 4000;
  for (int64_t n : {1, 16, 37})
    for (int64_t k : {5, 32, 100, 300})
      for (auto f : {WeightFormat::Q8, WeightFormat::Q4}) {
        const auto wsrc = random_bf16(n * k, ++seed);
        const WeightMatrix w = WeightMatrix::from_bf16(wsrc.data(), n, k, f, &pool);
        const quant::View v = quant::view(w);
        const int64_t ldx = k + 3, ldy = n + 5;
        const auto x = random_floats(8 * ldx, ++seed, -2, 2);
        const auto bias = random_floats(n, ++seed);
        for (int64_t m = 1; m <= 8; ++m) {
          const float* b = m % 2 ? bias.data() : nullptr;
          const RoundedX xq(x.data(), m, ldx, k, f == WeightFormat::Q8);
          std::vector<float> y(static_cast<size_t>(m * ldy), -5.0f), twin(y.size(), -5.0f);
          neon::quant_range(kernel, m, v, xq.view, 0, quant::row_blocks(n), n, b, y.data(), ldy);
          scalar::matmul(x.data(), m, ldx, w, b, twin.data(), ldy);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldy; ++j) {
              const size_t at = static_cast<size_t>(i * ldy + j);
              ASSERT_EQ(bits(y[at]), bits(twin[at]))
                  << neon::int8_kernel_name(kernel) << " " << weight_format_name(f) << " m=" << m << " n=" << n
                  << " k=" << k << " row " << i << " col " << j << ": " << y[at] << " vs twin " << twin[at];
            }
        }
      }
}

TEST(NeonMatmulQuant, SdotIsItsTwinBitForBit) {
  if (!neon::int8_kernel_available(Int8Kernel::Sdot)) GTEST_SKIP() << skip_reason(Int8Kernel::Sdot);
  expect_twin_bits(Int8Kernel::Sdot);
}

TEST(NeonMatmulQuant, SmmlaIsItsTwinBitForBit) {
  if (!neon::int8_kernel_available(Int8Kernel::Smmla)) GTEST_SKIP() << skip_reason(Int8Kernel::Smmla);
  expect_twin_bits(Int8Kernel::Smmla);
}

// Which kernel runs follows what the CPU has, and matmul_kernel() says so.
TEST(NeonMatmulQuant, ChoiceFollowsTheCpuAndIsNamed) {
  const CpuFeatures& c = cpu_features();
  const Int8Kernel one = neon::int8_kernel(1), many = neon::int8_kernel(8);
#if defined(__aarch64__)
  EXPECT_EQ(one, c.arm_dotprod ? Int8Kernel::Sdot : c.arm_i8mm ? Int8Kernel::Smmla : Int8Kernel::None);
  EXPECT_EQ(many, c.arm_i8mm ? Int8Kernel::Smmla : c.arm_dotprod ? Int8Kernel::Sdot : Int8Kernel::None);
#else
  EXPECT_FALSE(c.arm_dotprod || c.arm_i8mm || c.arm_bf16 || c.arm_sve);
  EXPECT_EQ(one, Int8Kernel::None);
  EXPECT_EQ(many, Int8Kernel::None);
#endif
  const std::vector<uint16_t> wsrc = random_bf16(32 * 64, 1);
  const WeightMatrix q4 = WeightMatrix::from_bf16(wsrc.data(), 32, 64, WeightFormat::Q4);
  // The dispatched target's kernel (the portable target forced by a test runs none of these).
  for (int64_t m : {1, 8, 300}) {
    const char* arm = simd::matmul_quant_arm_instruction(m);
    if (!arm) continue;
    EXPECT_STREQ(arm, neon::int8_kernel_name(neon::int8_kernel(m)));
    const MatmulKernel kernel = matmul_kernel(q4, m);
    EXPECT_NE(kernel.name.find(std::string(" int8 ") + arm + " ("), std::string::npos) << kernel.name;
    EXPECT_EQ(kernel.unit, MatmulUnit::Int8Dot);
  }
}

// Through matmul(): decode (m <= 8) and the GEMM's chunks (m > 8) on the
// dispatched kernel, every target compiled in, give the twin's bits where an
// Arm kernel runs.
TEST(NeonMatmulQuant, MatmulIsTheTwinBitForBitOnEveryTarget) {
  if (neon::int8_kernel(1) == Int8Kernel::None) GTEST_SKIP() << skip_reason(Int8Kernel::Sdot);
  ThreadPool pool(2);
  testing::for_each_target([&](const std::string& target) {
    uint32_t seed = 5000;
    for (auto f : {WeightFormat::Q8, WeightFormat::Q4}) {
      const int64_t n = 45, k = 200;
      const auto wsrc = random_bf16(n * k, ++seed);
      const WeightMatrix w = WeightMatrix::from_bf16(wsrc.data(), n, k, f, &pool);
      for (int64_t m : {1, 3, 8, 9, 33, 100}) {
        if (!simd::matmul_quant_arm_instruction(m)) return;  // the portable target: tests/ops/matmul_test.cpp
        const auto x = random_floats(m * k, ++seed, -2, 2);
        const auto bias = random_floats(n, ++seed);
        std::vector<float> y(static_cast<size_t>(m * n)), twin(y.size());
        matmul(x.data(), m, w, bias.data(), y.data(), pool);
        scalar::matmul(x.data(), m, k, w, bias.data(), twin.data(), n);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_EQ(bits(y[i]), bits(twin[i])) << target << " " << weight_format_name(f) << " m=" << m << " at " << i;
      }
    }
  });
}

}  // namespace
}  // namespace qvl
