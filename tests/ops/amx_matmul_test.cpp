// The AMX int8 kernel: its tile emulation against hand-computed products,
// and the kernel (emulated on every AVX-512 CPU, on the unit where AMX runs)
// bit for bit against the AVX-512 kernel, across sizes, odd m/n/k,
// misaligned pointers and thread counts.
#include "ops/amx_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ops/amx_tiles.h"
#include "ops/cpu_features.h"
#include "ops/ops.h"
#include "ops/scalar.h"
#include "test_util.h"
#include "util/error.h"

namespace qvl {
namespace {

// The bf16 kernel's emulation runs its tile steps with AVX-512 intrinsics:
// it is built on x86-64 only (amx_matmul_bf16.cpp).
#if defined(__x86_64__)
#define QVL_SKIP_OFF_X86()
#else
#define QVL_SKIP_OFF_X86() GTEST_SKIP() << "the AMX bf16 kernel and its emulation are x86-64 only"
#endif

using testing::Misaligned;
using testing::random_bf16;
using testing::random_floats;

TEST(EmulatedTiles, DpbssdMultipliesSignedBytesInVnniLayout) {
  // C [2][3] += A [2][8 bytes] · B [2 rows][3 · 4 bytes]: C[i][j] = Σ_k A[i][k] · B[k / 4][4j + k % 4].
  amx::TileConfig cfg;
  cfg.set(0, 2, 12).set(1, 2, 8).set(2, 2, 12);
  amx::EmulatedTiles t(cfg);
  const int8_t a[2][8] = {{1, -2, 3, -4, 5, -6, 7, -8}, {-128, 127, 0, 1, 2, 3, 4, 5}};
  int8_t b[2][12];
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 12; ++c) b[r][c] = static_cast<int8_t>((r * 12 + c) * 7 % 255 - 127);
  int32_t c[2][3] = {{10, 20, 30}, {-1, -2, -3}};
  t.load<0>(c, sizeof c[0]);
  t.load<1>(a, sizeof a[0]);
  t.load<2>(b, sizeof b[0]);
  t.dpbssd<0, 1, 2>();
  int32_t got[2][3];
  t.store<0>(got, sizeof got[0]);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      int32_t want = c[i][j];
      for (int k = 0; k < 8; ++k) want += a[i][k] * b[k / 4][4 * j + k % 4];
      EXPECT_EQ(got[i][j], want) << i << "," << j;
    }
}

TEST(EmulatedTiles, RefusesWhatTheUnitRefuses) {
  amx::TileConfig cfg;
  cfg.set(0, 16, 64).set(1, 16, 32).set(2, 16, 64);  // B must have colsb(A) / 4 = 8 rows
  amx::EmulatedTiles t(cfg);
  EXPECT_THROW((t.dpbssd<0, 1, 2>()), Error);
  EXPECT_THROW(t.zero<3>(), Error);  // not configured
  amx::TileConfig too_wide;
  too_wide.set(0, 16, 68);
  EXPECT_THROW(amx::EmulatedTiles{too_wide}, Error);
  amx::TileConfig rows_only;
  rows_only.set(0, 16, 64).set(1, 4, 0);
  EXPECT_THROW(amx::EmulatedTiles{rows_only}, Error);
  amx::TileConfig ninth;
  ninth.set(8, 16, 64);
  EXPECT_THROW(amx::EmulatedTiles{ninth}, Error);
  amx::TileConfig fine;
  fine.set(0, 16, 64).set(1, 16, 64).set(2, 16, 64);
  amx::EmulatedTiles u(fine);
  EXPECT_THROW((u.dpbssd<0, 0, 1>()), Error);  // the same tile twice
  EXPECT_THROW((u.dpbf16ps<0, 1, 1>()), Error);
  EXPECT_NO_THROW((u.dpbssd<0, 1, 2>()));
}

// The kernel, run by `kernel`, against simd::matmul_quant (the AVX-512
// kernel; for m <= 8 it never hands over to AMX), bit for bit: m from one
// partial 16-row chunk to many (with one chunk past a panel's worth at
// k = 2048), n and k off 16 and 32, bias or none, x and y misaligned with
// strides past k and n, 1 to 3 threads.
void expect_bit_identical_to_avx512(void (*kernel)(const simd::MatmulArgs&, ThreadPool&)) {
  uint32_t seed = 4000;
  struct Shape {
    int64_t n, k;
  };
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (Shape s : {Shape{16, 32}, Shape{40, 200}, Shape{17, 96}, Shape{100, 2048}, Shape{272, 64}})
      for (WeightFormat f : {WeightFormat::Q8, WeightFormat::Q4}) {
        auto wsrc = random_bf16(s.n * s.k, ++seed);
        const WeightMatrix w = WeightMatrix::from_bf16(wsrc.data(), s.n, s.k, f);
        auto bias = random_floats(s.n, ++seed);
        for (int64_t m : {9, 16, 33, 130}) {
          if (s.k == 2048 && m == 130 && threads != 2) continue;  // the big case once
          const int64_t ldx = s.k + 5, ldy = s.n + 3;
          Misaligned<float> x(random_floats(m * ldx, ++seed, -3, 3), 1);
          const float* b = (m + s.n) % 2 ? bias.data() : nullptr;
          Misaligned<float> y(std::vector<float>(static_cast<size_t>(m * ldy), -7.0f), 3), want(y.copy(m * ldy), 3);
          kernel({x.data(), m, ldx, &w, b, y.data(), ldy}, pool);
          // Row by row through the small-m path: the AVX-512 kernel itself.
          for (int64_t i = 0; i < m; ++i)
            simd::matmul_quant({x.data() + i * ldx, 1, ldx, &w, b, want.data() + i * ldy, ldy}, pool);
          ASSERT_EQ(std::memcmp(y.data(), want.data(), static_cast<size_t>(m * ldy) * sizeof(float)), 0)
              << weight_format_name(f) << " m=" << m << " n=" << s.n << " k=" << s.k << " threads=" << threads
              << (b ? " bias" : "");
        }
      }
  }
}

TEST(AmxInt8, EmulatedKernelIsBitIdenticalToAvx512) {
  if (!cpu_features().avx512) GTEST_SKIP() << "the kernel scales its sums with AVX-512, which this CPU lacks";
  expect_bit_identical_to_avx512(amx::matmul_quant_emulated);
}

TEST(AmxInt8, KernelOnTheUnitIsBitIdenticalToAvx512) {
  if (!cpu_features().amx_int8) GTEST_SKIP() << "this CPU has no AMX-INT8 (grep amx_int8 /proc/cpuinfo)";
  ASSERT_TRUE(amx_tile_state_granted()) << "the CPU has AMX but Linux did not grant the tile state";
  ASSERT_TRUE(amx::int8_usable()) << "the AMX kernel disagreed with its emulation on this CPU";
  expect_bit_identical_to_avx512(amx::matmul_quant);
}

TEST(AmxInt8, MatmulUsesTheUnitExactlyWhereItRuns) {
  auto wsrc = random_bf16(64 * 64, 7);
  const WeightMatrix q8 = WeightMatrix::from_bf16(wsrc.data(), 64, 64, WeightFormat::Q8);
  const bool amx = amx::int8_usable();
  EXPECT_EQ(amx, cpu_features().amx_int8 && cpu_features().avx512 && amx_tile_state_granted());
  EXPECT_EQ(matmul_kernel(q8, 9).unit == MatmulUnit::AmxInt8, amx) << matmul_kernel(q8, 9).name;
  EXPECT_NE(matmul_kernel(q8, 8).unit, MatmulUnit::AmxInt8);  // decode stays on the vector units
  ThreadPool pool(1);
  if (!amx) {
    EXPECT_THROW(amx::matmul_quant({nullptr, 9, 64, &q8, nullptr, nullptr, 64}, pool), Error);
  }
}

TEST(EmulatedTiles, Dpbf16psAddsPairsInOrderWithDazAndFtz) {
  // C [1][2] += A [1][4 bf16] · B [2 rows][2 · 2 bf16].
  amx::TileConfig cfg;
  cfg.set(0, 1, 8).set(1, 1, 8).set(2, 2, 8);
  amx::EmulatedTiles t(cfg);
  auto bf = [](float v) { return f32_to_bf16(v); };
  const uint16_t a[4] = {bf(1.0f), bf(3.0f), bf(0.5f), 0x0001};  // the last a bf16 denormal: read as 0
  const uint16_t b[2][4] = {{bf(2.0f), bf(-1.0f), bf(1e30f), bf(1.0f)}, {bf(4.0f), bf(1.0f), bf(-1e30f), bf(1.0f)}};
  const float c[2] = {100.0f, 1e-39f};  // the 1e-39 is absorbed by 1e30, flushed or not
  t.load<0>(c, sizeof c);
  t.load<1>(a, sizeof a);
  t.load<2>(b, sizeof b[0]);
  t.dpbf16ps<0, 1, 2>();
  float got[2];
  t.store<0>(got, sizeof got);
  // Column 0: 100 + 1·2 + 3·(-1) + 0.5·4 + 0 = 101. Column 1: 1e30 + 3 - 5e29 + 0 in f32 order.
  EXPECT_EQ(got[0], 101.0f);
  float want = 1e-39f;
  for (float p : {bf16_to_f32(bf(1e30f)), 3.0f, 0.5f * bf16_to_f32(bf(-1e30f)), 0.0f}) want = want + p;
  EXPECT_EQ(got[1], want);
  // FTZ: a sum below 2^-126 is flushed.
  amx::EmulatedTiles u(cfg);
  const uint16_t tiny[4] = {0x0080, 0, 0, 0};  // 2^-126
  const uint16_t half[2][4] = {{0x3f00, 0, 0, 0}, {}};  // 0.5
  const float zero[2] = {0, 0};
  u.load<0>(zero, sizeof zero);
  u.load<1>(tiny, sizeof tiny);
  u.load<2>(half, sizeof half[0]);
  u.dpbf16ps<0, 1, 2>();
  u.store<0>(got, sizeof got);
  EXPECT_EQ(got[0], 0.0f);
}

// C [1][1] += A [1][2 pairs] · B [2][1 pair] with products 2^24, 1, -2^24, 1
// (true sum 2): pair by pair, 2^24 + 1 rounds back to 2^24 and the result
// is 1; even and odd products summed apart give 0 + 2 = 2; a unit that
// loses the last product gets 0.
TEST(EmulatedTiles, Dpbf16psAddsInTheOrderAsked) {
  amx::TileConfig cfg;
  cfg.set(0, 1, 4).set(1, 1, 8).set(2, 2, 4);
  const uint16_t one = f32_to_bf16(1.0f);
  const uint16_t a[4] = {one, one, one, one};
  const uint16_t b[2][2] = {{f32_to_bf16(0x1p24f), one}, {f32_to_bf16(-0x1p24f), one}};
  auto run = [&](auto tiles) {
    const float zero = 0;
    tiles.template load<0>(&zero, 4);
    tiles.template load<1>(a, sizeof a);
    tiles.template load<2>(b, sizeof b[0]);
    tiles.template dpbf16ps<0, 1, 2>();
    float got;
    tiles.template store<0>(&got, 4);
    return got;
  };
  EXPECT_EQ(run(amx::EmulatedTilesIn<amx::Bf16Order::PairByPair>(cfg)), 1.0f);
  EXPECT_EQ(run(amx::EmulatedTilesIn<amx::Bf16Order::EvenOdd>(cfg)), 2.0f);
  EXPECT_EQ(run(amx::EmulatedTilesIn<amx::Bf16Order::LosesAProduct>(cfg)), 0.0f);
}

// The check that admits the bf16 unit (bf16_status) accepts a unit adding in
// the SDM's other order, and refuses one that loses a product per
// instruction: its bound is f32 rounding, not the bits of one order.
TEST(AmxBf16, SelfCheckAcceptsAnotherAdditionOrderAndRefusesALostProduct) {
  QVL_SKIP_OFF_X86();
  EXPECT_EQ(amx::bf16_check_excess(amx::Bf16Order::PairByPair), 0.0);
  const double other_order = amx::bf16_check_excess(amx::Bf16Order::EvenOdd);
  EXPECT_GT(other_order, 0.0);  // other bits
  EXPECT_LT(other_order, 1.0);
  EXPECT_GT(amx::bf16_check_excess(amx::Bf16Order::LosesAProduct), 1.0);
  std::printf("bf16 self-check, as a multiple of its bound: other order %.3g, lost product %.3g\n", other_order,
              amx::bf16_check_excess(amx::Bf16Order::LosesAProduct));
}

// The bf16 kernel, run by `kernel`, on matrices of either precision:
// exact against the f32 FMA kernel and the double reference within the
// exact contract's f32 rounding; fast against its scalar twin
// (scalar::matmul_bf16_fast) within f32 rounding; and every row of an m-row
// call bit-identical to the same row of a 100-row call. Odd n and k,
// bias, misaligned x and y with strides, 1 to 3 threads.
void expect_bf16_kernel_right(void (*kernel)(const simd::MatmulArgs&, ThreadPool&)) {
  uint32_t seed = 5000;
  struct Shape {
    int64_t n, k;
  };
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (Shape s : {Shape{32, 32}, Shape{40, 200}, Shape{17, 70}, Shape{64, 1024}})
      for (MatmulPrecision p : {MatmulPrecision::Exact, MatmulPrecision::Fast}) {
        auto wsrc = random_bf16(s.n * s.k, ++seed);
        WeightMatrix w = WeightMatrix::view_bf16(wsrc.data(), s.n, s.k);
        w.set_precision(p);
        auto bias = random_floats(s.n, ++seed);
        const int64_t ldx = s.k + 3, ldy = s.n + 1, mmax = 100;
        Misaligned<float> x(random_floats(mmax * ldx, ++seed, -3, 3), 1);
        std::vector<float> whole(static_cast<size_t>(mmax * ldy));
        kernel({x.data(), mmax, ldx, &w, bias.data(), whole.data(), ldy}, pool);
        std::vector<float> twin(whole.size());
        if (p == MatmulPrecision::Fast)
          scalar::matmul_bf16_fast(x.data(), mmax, ldx, w, bias.data(), twin.data(), ldy);
        else
          scalar::matmul(x.data(), mmax, ldx, w, bias.data(), twin.data(), ldy);
        for (int64_t i = 0; i < mmax; ++i) {
          double dot_scale = 0;  // Σ |x·w|: the size f32 rounding scales with
          for (int64_t j = 0; j < s.n; ++j) {
            dot_scale = 0;
            for (int64_t c = 0; c < s.k; ++c)
              dot_scale += std::fabs(double(x.data()[i * ldx + c]) * bf16_to_f32(wsrc[j * s.k + c]));
            ASSERT_NEAR(whole[i * ldy + j], twin[i * ldy + j], 4e-7 * std::sqrt(double(s.k)) * dot_scale + 1e-6)
                << (p == MatmulPrecision::Fast ? "fast" : "exact") << " row " << i << " col " << j << " n=" << s.n
                << " k=" << s.k;
          }
        }
        for (int64_t m : {1, 2, 8, 9, 16, 33}) {  // prompt pieces of any length (matmul.h, MatmulRows)
          const int64_t start = 100 - m;  // off any 32-row boundary
          Misaligned<float> y(std::vector<float>(static_cast<size_t>(m * ldy), -7.0f), 2);
          kernel({x.data() + start * ldx, m, ldx, &w, bias.data(), y.data(), ldy}, pool);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldy; ++j)
              ASSERT_EQ(y.data()[i * ldy + j], j < s.n ? whole[(start + i) * ldy + j] : -7.0f)
                  << "m=" << m << " row " << i << " col " << j << " n=" << s.n << " k=" << s.k;
        }
      }
  }
}

TEST(AmxBf16, EmulatedKernelAgreesWithTheExactAndFastContracts) {
  QVL_SKIP_OFF_X86();
  expect_bf16_kernel_right(amx::gemm_bf16_emulated);
}

TEST(AmxBf16, KernelOnTheUnitAgreesWithTheExactAndFastContracts) {
  if (!cpu_features().amx_bf16) GTEST_SKIP() << "this CPU has no AMX-BF16 (grep amx_bf16 /proc/cpuinfo)";
  ASSERT_TRUE(amx_tile_state_granted()) << "the CPU has AMX but Linux did not grant the tile state";
  ASSERT_TRUE(amx::bf16_usable()) << "the AMX bf16 kernel disagreed with its emulation on this CPU";
  expect_bf16_kernel_right(amx::gemm_bf16);
}

// The exact split loses nothing: with x exactly representable parts, the
// kernel's result equals the double reference to f32 summation error, far
// below what rounding x to bf16 (fast) costs.
TEST(AmxBf16, ExactSplitCarriesAll24BitsOfX) {
  QVL_SKIP_OFF_X86();
  const int64_t m = 16, n = 16, k = 64;
  auto wsrc = random_bf16(n * k, 11);
  WeightMatrix w = WeightMatrix::view_bf16(wsrc.data(), n, k);
  auto x = random_floats(m * k, 12, -1, 1);
  std::vector<float> exact(static_cast<size_t>(m * n)), fast(exact.size());
  ThreadPool pool(1);
  amx::gemm_bf16_emulated({x.data(), m, k, &w, nullptr, exact.data(), n}, pool);
  w.set_precision(MatmulPrecision::Fast);
  amx::gemm_bf16_emulated({x.data(), m, k, &w, nullptr, fast.data(), n}, pool);
  double err_exact = 0, err_fast = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t c = 0; c < k; ++c) ref += double(x[i * k + c]) * bf16_to_f32(wsrc[j * k + c]);
      err_exact = std::max(err_exact, std::fabs(exact[i * n + j] - ref));
      err_fast = std::max(err_fast, std::fabs(fast[i * n + j] - ref));
    }
  EXPECT_LT(err_exact, 1e-5);
  EXPECT_GT(err_fast, 100 * err_exact);
}

TEST(AmxBf16, MatmulUsesTheUnitExactlyWhereItRuns) {
  auto wsrc = random_bf16(64 * 64, 7);
  WeightMatrix w = WeightMatrix::view_bf16(wsrc.data(), 64, 64);
  const bool amx = amx::bf16_usable();
  EXPECT_EQ(amx, cpu_features().amx_bf16 && amx_tile_state_granted());
  EXPECT_EQ(matmul_kernel(w, 9).unit == MatmulUnit::AmxBf16, amx) << matmul_kernel(w, 9).name;
  EXPECT_NE(matmul_kernel(w, 8).unit, MatmulUnit::AmxBf16);
  if (amx) {
    EXPECT_TRUE(matmul_fast_bf16_pays());
  }
}

}  // namespace
}  // namespace qvl
