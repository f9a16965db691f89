#include "ops/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ops/scalar.h"
#include "test_util.h"
#include "util/error.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_bf16;
using testing::random_floats;

// y = x·Wᵀ in double from the bf16 source weights.
std::vector<double> reference(const std::vector<float>& x, int64_t m, const std::vector<uint16_t>& w, int64_t n,
                              int64_t k, const float* bias) {
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = bias ? bias[j] : 0.0;
      for (int64_t c = 0; c < k; ++c) acc += double(x[i * k + c]) * bf16_to_f32(w[j * k + c]);
      y[i * n + j] = acc;
    }
  return y;
}

// Error of y relative to the magnitude of the exact dot products:
// max |y - ref| / (sqrt(mean ref²) ), and the relative L2 error.
struct Err {
  double max_rel = 0, l2 = 0;
};
Err error(const float* y, const std::vector<double>& ref) {
  double num = 0, den = 0, worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (y[i] - ref[i]) * (y[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  double rms = std::sqrt(den / double(ref.size()));
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]) / rms);
  return {worst, std::sqrt(num / den)};
}

TEST(WeightFormat, NamesRoundTrip) {
  for (auto f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4})
    EXPECT_EQ(parse_weight_format(weight_format_name(f)), f);
  EXPECT_THROW(parse_weight_format("q5"), Error);
}

TEST(WeightMatrix, BytesPerFormat) {
  auto w = random_bf16(64 * 100, 1);
  EXPECT_EQ(WeightMatrix::view_bf16(w.data(), 64, 100).bytes(), 64u * 100 * 2);
  EXPECT_EQ(WeightMatrix::from_bf16(w.data(), 64, 100, WeightFormat::F32).bytes(), 64u * 100 * 4);
  // 100 columns pad to 4 groups of 32: q8 128 bytes + 4 f16 scales, q4 64 bytes + 4 f16 scales per row.
  EXPECT_EQ(WeightMatrix::from_bf16(w.data(), 64, 100, WeightFormat::Q8).bytes(), 64u * (128 + 8));
  EXPECT_EQ(WeightMatrix::from_bf16(w.data(), 64, 100, WeightFormat::Q4).bytes(), 64u * (64 + 8));
  // Rows are stored in blocks of 4: 63 rows take as much as 64.
  EXPECT_EQ(WeightMatrix::from_bf16(w.data(), 63, 100, WeightFormat::Q4).bytes(), 64u * (64 + 8));
}

// Matrices of 2 MB and more get their own 2 MB-aligned mapping (huge pages
// where the kernel gives them): each copy is whole and exact whatever its size
// rounds up to, and two such copies do not overlap.
TEST(WeightMatrix, LargeMatricesAreHugePageAlignedAndExact) {
  const int64_t n = 1031, k = 1024;  // 2.01 MB of bf16: the mapping rounds up to 4 MB
  auto w = random_bf16(n * k, 3);
  WeightMatrix a = WeightMatrix::from_bf16(w.data(), n, k, WeightFormat::BF16);
  WeightMatrix b = WeightMatrix::from_bf16(w.data(), n, k, WeightFormat::BF16);
  for (const WeightMatrix* m : {&a, &b}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m->data()) % (2u << 20), 0u);
    EXPECT_EQ(std::memcmp(m->data(), w.data(), w.size() * 2), 0);
  }
  const auto* pa = static_cast<const uint8_t*>(a.data());
  const auto* pb = static_cast<const uint8_t*>(b.data());
  EXPECT_TRUE(pa + a.bytes() <= pb || pb + b.bytes() <= pa);
  // Small ones stay on the heap (64-byte aligned).
  WeightMatrix s = WeightMatrix::from_bf16(w.data(), 4, k, WeightFormat::BF16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data()) % 64, 0u);
  EXPECT_EQ(std::memcmp(s.data(), w.data(), 4 * k * 2), 0);
}

TEST(WeightMatrix, QuantizedWeightsWithinHalfAStep) {
  const int64_t n = 37, k = 83;
  auto w = random_bf16(n * k, 2);
  for (auto f : {WeightFormat::Q8, WeightFormat::Q4}) {
    ThreadPool pool(0);
    WeightMatrix q = WeightMatrix::from_bf16(w.data(), n, k, f, &pool);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t g = 0; g * 32 < k; ++g) {
        float amax = 0;
        for (int64_t c = g * 32; c < std::min(k, g * 32 + 32); ++c) amax = std::max(amax, std::fabs(bf16_to_f32(w[r * k + c])));
        // q8: step amax/127, error <= step/2. q4: step amax/8, error <= step (the +8 code clamps to 7).
        // The step is rounded up to f16: at most 2^-10 larger.
        float bound = f == WeightFormat::Q8 ? amax / 127 * 0.5006f : amax / 8 * 1.0011f;
        for (int64_t c = g * 32; c < std::min(k, g * 32 + 32); ++c)
          ASSERT_LE(std::fabs(scalar::weight_at(q, r, c) - bf16_to_f32(w[r * k + c])), bound)
              << weight_format_name(f) << " r=" << r << " c=" << c;
      }
  }
}

TEST(WeightMatrix, AllZeroGroupQuantizesToZero) {
  std::vector<uint16_t> w(2 * 64, 0);
  for (auto f : {WeightFormat::Q8, WeightFormat::Q4}) {
    WeightMatrix q = WeightMatrix::from_bf16(w.data(), 2, 64, f);
    for (int64_t c = 0; c < 64; ++c) EXPECT_EQ(scalar::weight_at(q, 1, c), 0.0f);
  }
}

// Every format, many shapes (odd sizes, m from GEMV to GEMM), misaligned
// pointers and strides: the dispatched kernel against the double reference
// (f32/bf16: as accurate as an f32 dot product) and against the scalar twin.
TEST(Matmul, AllFormatsAllShapesAgainstReferenceAndTwin) {
  ThreadPool pool(0);
  struct Shape {
    int64_t m, n, k;
  };
  std::vector<Shape> shapes = {{1, 1, 1},    {1, 5, 3},     {1, 33, 64},  {2, 17, 31},  {3, 64, 100},
                               {4, 9, 257},  {5, 40, 96},   {8, 31, 33},  {9, 50, 130}, {16, 70, 64},
                               {17, 65, 75}, {33, 129, 96}, {64, 96, 128}, {70, 45, 200}};
  uint32_t seed = 10;
  for (auto s : shapes) {
    for (auto f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
      for (int offset : {0, 1, 3}) {
        const int64_t ldx = s.k + offset, ldy = s.n + 2 * offset;
        auto wsrc = random_bf16(s.n * s.k, ++seed);
        auto xdense = random_floats(s.m * s.k, ++seed);
        std::vector<float> xs(static_cast<size_t>(s.m * ldx), 7.0f);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t c = 0; c < s.k; ++c) xs[i * ldx + c] = xdense[i * s.k + c];
        auto bias = random_floats(s.n, ++seed);
        Misaligned<float> x(xs, offset);
        Misaligned<uint16_t> wm(wsrc, offset);
        WeightMatrix w = f == WeightFormat::BF16 ? WeightMatrix::view_bf16(wm.data(), s.n, s.k)
                                                 : WeightMatrix::from_bf16(wm.data(), s.n, s.k, f, &pool);
        const float* b = offset == 1 ? nullptr : bias.data();
        Misaligned<float> y(std::vector<float>(static_cast<size_t>(s.m * ldy), -5.0f), offset);
        matmul(x.data(), s.m, ldx, w, b, y.data(), ldy, pool);
        std::vector<float> twin(static_cast<size_t>(s.m * ldy), -5.0f);
        scalar::matmul(x.data(), s.m, ldx, w, b, twin.data(), ldy);

        std::vector<float> ydense(static_cast<size_t>(s.m * s.n));
        double twin_worst = 0;
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < ldy; ++j) {
            float v = y.data()[i * ldy + j];
            if (j >= s.n) {
              ASSERT_EQ(v, -5.0f) << "wrote past n";
              continue;
            }
            ydense[i * s.n + j] = v;
            // Twin and kernel sum the same terms in a different order.
            double tol = 1e-5 * std::sqrt(double(s.k)) + 1e-6;
            twin_worst = std::max(twin_worst, std::fabs(double(v) - twin[i * ldy + j]) / tol);
          }
        const char* name = weight_format_name(f);
        EXPECT_LE(twin_worst, 1.0) << name << " m=" << s.m << " n=" << s.n << " k=" << s.k << " off=" << offset;
        auto ref = reference(xdense, s.m, wsrc, s.n, s.k, b);
        Err e = error(ydense.data(), ref);
        // Quantized: weight rounding plus x rounded to 8 bits per group (matmul.h).
        double bound = f == WeightFormat::Q8 ? 0.045 : f == WeightFormat::Q4 ? 0.6 : 2e-6 * std::sqrt(double(s.k));
        double l2_bound = f == WeightFormat::Q8 ? 0.015 : f == WeightFormat::Q4 ? 0.15 : 1e-6 * std::sqrt(double(s.k));
        EXPECT_LE(e.max_rel, bound) << name << " m=" << s.m << " n=" << s.n << " k=" << s.k;
        EXPECT_LE(e.l2, l2_bound) << name << " m=" << s.m << " n=" << s.n << " k=" << s.k;
      }
    }
  }
}

// Batched decode needs each output row to depend only on its own x row: row
// i of an m-row call must equal, bit for bit, the same x row alone (m = 1),
// for every m of the small-m path, every format, with and without bias, on
// the best target and on each target forced in turn. k = 2500 and 9000 make
// x too large for L1 from m = 5 and m = 2 on, so its rows are taken in
// slices of columns, partial sums carried between them (simd_matmul.cpp,
// SmallRange), over several passes of rows.
TEST(Matmul, SmallMRowsAreBitIdenticalToSingleRows) {
  ThreadPool pool(0);
  auto check = [&](const std::string& target) {
    uint32_t seed = 500;
    for (int64_t n : {1, 6, 37})
      for (int64_t k : {5, 64, 100, 300, 2500, 9000})
        for (auto f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
          auto wsrc = random_bf16(n * k, ++seed);
          WeightMatrix w = f == WeightFormat::BF16 ? WeightMatrix::view_bf16(wsrc.data(), n, k)
                                                   : WeightMatrix::from_bf16(wsrc.data(), n, k, f, &pool);
          auto x = random_floats(8 * k, ++seed, -2, 2);
          auto bias = random_floats(n, ++seed);
          const float* b = (k % 2) ? bias.data() : nullptr;
          std::vector<float> single(static_cast<size_t>(8 * n));
          for (int64_t i = 0; i < 8; ++i) matmul(x.data() + i * k, 1, w, b, single.data() + i * n, pool);
          for (int64_t m = 2; m <= 8; ++m) {
            std::vector<float> y(static_cast<size_t>(m * n));
            matmul(x.data(), m, w, b, y.data(), pool);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j)
                ASSERT_EQ(y[i * n + j], single[i * n + j]) << target << " " << weight_format_name(f) << " m=" << m
                                                           << " row " << i << " col " << j << " n=" << n << " k=" << k;
          }
        }
  };
  check("best");
  testing::for_each_target(check);
}

// The same for the q8/q4 GEMM (m > 8): x is cut into chunks of rows, and
// every row, whichever chunk it falls in, must equal the row alone (m = 1),
// bit for bit, and agree with the scalar twin; with odd n, k not a multiple
// of 32, bias, and strides ldx > k, ldy > n.
TEST(Matmul, QuantGemmRowsAreBitIdenticalToSingleRows) {
  ThreadPool pool(0);
  auto check = [&](const std::string& target) {
    uint32_t seed = 900;
    for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 100}, {16, 64}, {5, 300}})
      for (auto f : {WeightFormat::Q8, WeightFormat::Q4}) {
        auto wsrc = random_bf16(n * k, ++seed);
        WeightMatrix w = WeightMatrix::from_bf16(wsrc.data(), n, k, f, &pool);
        const int64_t mmax = 257, ldx = k + 3, ldy = n + 5;
        auto x = random_floats(mmax * ldx, ++seed, -2, 2);
        auto bias = random_floats(n, ++seed);
        const float* b = n == 16 ? nullptr : bias.data();
        std::vector<float> single(static_cast<size_t>(mmax * n));
        for (int64_t i = 0; i < mmax; ++i) matmul(x.data() + i * ldx, 1, ldx, w, b, single.data() + i * n, n, pool);
        for (int64_t m : {9, 17, 33, 100, 257}) {
          std::vector<float> y(static_cast<size_t>(m * ldy), -5.0f), twin(y.size(), -5.0f);
          matmul(x.data(), m, ldx, w, b, y.data(), ldy, pool);
          scalar::matmul(x.data(), m, ldx, w, b, twin.data(), ldy);
          const double tol = 1e-5 * std::sqrt(double(k)) + 1e-6;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < ldy; ++j) {
              const float v = y[i * ldy + j];
              if (j >= n) {
                ASSERT_EQ(v, -5.0f) << "wrote past n";
                continue;
              }
              ASSERT_EQ(v, single[i * n + j]) << target << " " << weight_format_name(f) << " m=" << m << " row " << i
                                              << " col " << j << " n=" << n << " k=" << k;
              ASSERT_NEAR(v, twin[i * ldy + j], tol) << target << " " << weight_format_name(f) << " m=" << m;
            }
        }
      }
  };
  check("best");
  testing::for_each_target(check);
}

// One 100-row product for the row-independence tests: n x k random weights
// in format f at precision p (the bf16 view reads wsrc, which the object
// keeps), x with row stride ldx = k + 3, a bias unless n is 16, and the
// product's rows in `whole` (row stride ldy = n + 5).
struct HundredRows {
  static constexpr int64_t kRows = 100;
  std::vector<uint16_t> wsrc;
  WeightMatrix w;
  int64_t ldx, ldy;
  std::vector<float> x, bias, whole;
  const float* b;
  HundredRows(int64_t n, int64_t k, WeightFormat f, MatmulPrecision p, uint32_t& seed, ThreadPool& pool)
      : wsrc(random_bf16(n * k, ++seed)),
        w(f == WeightFormat::BF16 ? WeightMatrix::view_bf16(wsrc.data(), n, k)
                                  : WeightMatrix::from_bf16(wsrc.data(), n, k, f, &pool)),
        ldx(k + 3),
        ldy(n + 5),
        x(random_floats(kRows * ldx, ++seed, -2, 2)),
        bias(random_floats(n, ++seed)),
        whole(static_cast<size_t>(kRows * ldy)),
        b(n == 16 ? nullptr : bias.data()) {
    w.set_precision(p);
    matmul(x.data(), kRows, ldx, w, b, whole.data(), ldy, pool);
  }
  HundredRows(const HundredRows&) = delete;
};

// Prefill pieces of any length >= 9 rows go to the GEMMs, and a prompt's
// rows must not change with where it is cut: rows [s, s + m) computed in one
// call of m rows must equal, bit for bit, the same rows of one 100-row call,
// for m from just past the small-m path to the whole, pieces starting at 0
// and off any tile boundary; f32 and bf16 (exact) and q8/q4 weights, odd n,
// k not a multiple of 32, bias, strides ldx > k, ldy > n, on every target.
TEST(Matmul, GemmRowsAreBitIdenticalForAnyM) {
  ThreadPool pool(0);
  auto check = [&](const std::string& target) {
    uint32_t seed = 1300;
    for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 100}, {16, 64}, {5, 300}})
      for (auto f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
        const HundredRows h(n, k, f, MatmulPrecision::Exact, seed, pool);
        const WeightMatrix& w = h.w;
        const int64_t ldx = h.ldx, ldy = h.ldy, kRows = HundredRows::kRows;
        const std::vector<float>& x = h.x;
        const std::vector<float>& whole = h.whole;
        const float* b = h.b;
        for (int64_t m : {9, 16, 17, 24, 33, 48, 100})
          for (int64_t s : {int64_t{0}, int64_t{5}, kRows - m}) {
            if (s + m > kRows) continue;
            std::vector<float> y(static_cast<size_t>(m * ldy), -5.0f);
            matmul(x.data() + s * ldx, m, ldx, w, b, y.data(), ldy, pool);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j)
                ASSERT_EQ(y[i * ldy + j], whole[(s + i) * ldy + j])
                    << target << " " << weight_format_name(f) << " m=" << m << " start " << s << " row " << i
                    << " col " << j << " n=" << n << " k=" << k;
          }
      }
  };
  check("best");
  testing::for_each_target(check);
}

// A prompt piece (MatmulRows::Prompt) takes a prefill's arithmetic at any
// length: rows [s, s + m) of a piece of m rows, from m = 1 (the one token a
// repeated request recomputes) across kSmallM, equal bit for bit the same
// rows of one 100-row call, through matmul and matmul_each (two products);
// f32, bf16 in both precisions, q8 and q4, odd n, k not a multiple of 32,
// bias, strides ldx > k, ldy > n, on every target. Decode rows (the
// default) of f32/bf16 sum in another order and would not match.
TEST(Matmul, PromptRowsAreBitIdenticalForAnyM) {
  ThreadPool pool(2);
  auto check = [&](const std::string& target) {
    uint32_t seed = 2100;
    for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 100}, {16, 64}, {5, 300}})
      for (auto [f, p] : {std::pair{WeightFormat::F32, MatmulPrecision::Exact},
                          std::pair{WeightFormat::BF16, MatmulPrecision::Exact},
                          std::pair{WeightFormat::BF16, MatmulPrecision::Fast},
                          std::pair{WeightFormat::Q8, MatmulPrecision::Exact},
                          std::pair{WeightFormat::Q4, MatmulPrecision::Exact}}) {
        const HundredRows h(n, k, f, p, seed, pool);
        const WeightMatrix& w = h.w;
        const int64_t ldx = h.ldx, ldy = h.ldy, kRows = HundredRows::kRows;
        const std::vector<float>& x = h.x;
        const std::vector<float>& whole = h.whole;
        const float* b = h.b;
        for (int64_t m : {1, 2, 3, 5, 8, 9, 17})
          for (int64_t s : {int64_t{0}, int64_t{5}, kRows - m}) {
            std::vector<float> y(static_cast<size_t>(m * ldy), -5.0f), e0(y), e1(y);
            matmul(x.data() + s * ldx, m, ldx, w, b, y.data(), ldy, pool, MatmulRows::Prompt);
            const MatmulOutput outs[] = {{&w, b, e0.data(), ldy}, {&w, b, e1.data(), ldy}};
            matmul_each(x.data() + s * ldx, m, ldx, outs, pool, MatmulRows::Prompt);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                const float want = whole[(s + i) * ldy + j];
                const auto where = [&] {
                  return ::testing::Message() << target << " " << weight_format_name(f) << " "
                                              << matmul_precision_name(p) << " m=" << m << " start " << s << " row "
                                              << i << " col " << j << " n=" << n << " k=" << k;
                };
                ASSERT_EQ(y[i * ldy + j], want) << where();
                ASSERT_EQ(e0[i * ldy + j], want) << "matmul_each " << where();
                ASSERT_EQ(e1[i * ldy + j], want) << "matmul_each " << where();
              }
          }
      }
  };
  check("best");
  testing::for_each_target(check);
}

// f32 weights and bf16 weights in exact precision give, on the GEMM path
// (m > kSmallM), each output as one chain of f32 fused multiply-adds over
// the columns in order, from zero, then + bias: y = fma(x[k-1], w[k-1], ...
// fma(x[0], w[0], 0)) + b. However the kernel packs x and the weights,
// tiles the rows (whole and partial tiles of 3 and 4 vectors) and splits the
// work, those must be the bits; x and y with strides past k and n, k not a
// multiple of the vector. Only where the products run on f32 FMA (not AMX)
// and on targets that fuse (on the others MulAdd rounds twice).
TEST(Matmul, GemmOutputsAreTheFmaChainInColumnOrder) {
  ThreadPool pool(0);
  auto check = [&](const std::string& target) {
    if (target.rfind("AVX", 0) != 0) return;
    uint32_t seed = 1700;
    for (auto [n, k] : {std::pair<int64_t, int64_t>{37, 100}, {8, 257}, {19, 1030}})
      for (auto f : {WeightFormat::F32, WeightFormat::BF16}) {
        auto wsrc = random_bf16(n * k, ++seed);
        WeightMatrix w = f == WeightFormat::BF16 ? WeightMatrix::view_bf16(wsrc.data(), n, k)
                                                 : WeightMatrix::from_bf16(wsrc.data(), n, k, f, &pool);
        if (matmul_kernel(w, 100).unit != MatmulUnit::FmaF32) continue;
        for (int64_t m : {9, 47, 49, 64, 65, 113, 130}) {
          const int64_t ldx = k + 3, ldy = n + 5;
          auto x = random_floats(m * ldx, ++seed, -2, 2);
          auto bias = random_floats(n, ++seed);
          for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
            std::vector<float> y(static_cast<size_t>(m * ldy), -5.0f);
            matmul(x.data(), m, ldx, w, b, y.data(), ldy, pool);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                float acc = 0.0f;
                for (int64_t c = 0; c < k; ++c) acc = std::fma(x[i * ldx + c], bf16_to_f32(wsrc[j * k + c]), acc);
                const float want = acc + (b ? b[j] : 0.0f);
                uint32_t got_bits, want_bits;
                std::memcpy(&got_bits, &y[i * ldy + j], 4);
                std::memcpy(&want_bits, &want, 4);
                ASSERT_EQ(got_bits, want_bits) << target << " " << weight_format_name(f) << " m=" << m << " row " << i
                                               << " col " << j << " n=" << n << " k=" << k << (b ? " bias" : "");
              }
          }
        }
      }
  };
  check(matmul_simd_target());
  testing::for_each_target(check);
}

// matmul_each: several products of one x, each bit for bit what matmul()
// gives it alone, for every format and thread count; with outputs of
// different n, bias or none, strides ldx > k and ldy > n, and m on both sides
// of kSmallM. Mixed formats take the one-by-one path and agree too.
TEST(MatmulEach, EveryOutputBitIdenticalToItsOwnMatmul) {
  uint32_t seed = 900;
  for (int threads : {1, 2, 3})
    for (int64_t k : {40, 200})
      for (auto f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
        ThreadPool pool(threads);
        const int64_t ns[] = {17, 100, 16, 3};
        std::vector<std::vector<uint16_t>> src;
        std::vector<WeightMatrix> ws;
        std::vector<std::vector<float>> biases;
        for (size_t i = 0; i < std::size(ns); ++i) {
          src.push_back(random_bf16(ns[i] * k, ++seed));
          // The last one in another format: the group is not one format then.
          const WeightFormat fi = i == 3 ? (f == WeightFormat::Q4 ? WeightFormat::Q8 : WeightFormat::Q4) : f;
          ws.push_back(fi == WeightFormat::BF16 ? WeightMatrix::view_bf16(src.back().data(), ns[i], k)
                                                : WeightMatrix::from_bf16(src.back().data(), ns[i], k, fi, &pool));
          biases.push_back(random_floats(ns[i], ++seed));
        }
        for (size_t outputs : {size_t{1}, size_t{3}, size_t{4}})
          for (int64_t m : {1, 5, 8, 11}) {
            const int64_t ldx = k + 3;
            const auto x = random_floats(m * ldx, ++seed, -2, 2);
            std::vector<std::vector<float>> each, alone;
            std::vector<MatmulOutput> outs;
            for (size_t i = 0; i < outputs; ++i) {
              const int64_t ldy = ns[i] + static_cast<int64_t>(i);
              each.emplace_back(static_cast<size_t>(m * ldy), -7.0f);
              alone.emplace_back(static_cast<size_t>(m * ldy), -7.0f);
              const float* b = i % 2 ? nullptr : biases[i].data();
              outs.push_back({&ws[i], b, each[i].data(), ldy});
              matmul(x.data(), m, ldx, ws[i], b, alone[i].data(), ldy, pool);
            }
            matmul_each(x.data(), m, ldx, outs, pool);
            for (size_t i = 0; i < outputs; ++i)
              for (size_t j = 0; j < each[i].size(); ++j)  // the stride's padding untouched as well
                ASSERT_EQ(each[i][j], alone[i][j]) << weight_format_name(f) << " threads " << threads << " k " << k
                                                   << " outputs " << outputs << " m " << m << " output " << i << " at "
                                                   << j;
          }
      }
}

// The q8/q4 GEMM shares its work items among the products: at k = 4096 a
// tile is 4 blocks (64 rows) and a panel 8 chunks of x, so 150 rows and
// outputs of 200, 64 and 17 rows make several panels and tiles in each
// product, a partial last tile and a partial block; every output is still
// its own matmul's, bit for bit.
TEST(MatmulEach, QuantGemmSharesItemsAcrossProducts) {
  ThreadPool pool(2);
  const int64_t k = 4096, m = 150, ns[] = {200, 64, 17};
  for (auto f : {WeightFormat::Q8, WeightFormat::Q4}) {
    uint32_t seed = 40;
    std::vector<std::vector<uint16_t>> src;
    std::vector<WeightMatrix> ws;
    std::vector<std::vector<float>> biases, each, alone;
    std::vector<MatmulOutput> outs;
    const auto x = random_floats(m * k, ++seed, -2, 2);
    for (int64_t n : ns) {
      src.push_back(random_bf16(n * k, ++seed));
      ws.push_back(WeightMatrix::from_bf16(src.back().data(), n, k, f, &pool));
      biases.push_back(random_floats(n, ++seed));
    }
    for (size_t i = 0; i < std::size(ns); ++i) {
      each.emplace_back(static_cast<size_t>(m * ns[i]), -7.0f);
      alone.emplace_back(static_cast<size_t>(m * ns[i]), -7.0f);
      const float* b = i == 1 ? nullptr : biases[i].data();
      outs.push_back({&ws[i], b, each[i].data(), ns[i]});
      matmul(x.data(), m, k, ws[i], b, alone[i].data(), ns[i], pool);
    }
    matmul_each(x.data(), m, k, outs, pool);
    for (size_t i = 0; i < std::size(ns); ++i)
      for (size_t j = 0; j < each[i].size(); ++j)
        ASSERT_EQ(each[i][j], alone[i][j]) << weight_format_name(f) << " output " << i << " at " << j;
  }
}

// matmul_many: products each with its own x, every output bit for bit what
// matmul() gives it alone, for every format and thread count: tasks of 1..8
// rows (one parallel step), runs of tasks sharing one x (prepared once), a
// task of more than 8 rows or another format (one after the other), biases,
// strides ldx > k and ldy > n; the stride's padding stays untouched.
TEST(MatmulMany, EveryTaskBitIdenticalToItsOwnMatmul) {
  uint32_t seed = 1300;
  for (int threads : {1, 2, 3})
    for (int64_t k : {40, 200})
      for (auto f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4}) {
        ThreadPool pool(threads);
        const int64_t ns[] = {17, 100, 16, 3, 64};
        std::vector<std::vector<uint16_t>> src;
        std::vector<WeightMatrix> ws;
        for (int64_t n : ns) {
          src.push_back(random_bf16(n * k, ++seed));
          ws.push_back(f == WeightFormat::BF16 ? WeightMatrix::view_bf16(src.back().data(), n, k)
                                               : WeightMatrix::from_bf16(src.back().data(), n, k, f, &pool));
        }
        const WeightFormat other = f == WeightFormat::Q4 ? WeightFormat::Q8 : WeightFormat::Q4;
        const WeightMatrix odd = WeightMatrix::from_bf16(src[3].data(), ns[3], k, other, &pool);
        const auto bias = random_floats(100, ++seed);
        const int64_t ldx = k + 3;
        // Cases: {m of each task} with tasks 1 and 2 sharing one x when `share`.
        struct Case {
          std::vector<int64_t> ms;
          bool share, odd_format;
        };
        for (const Case& c : {Case{{1, 1, 1, 1, 1}, true, false}, Case{{3, 8, 8, 1, 5}, true, false},
                              Case{{2, 4, 7, 6, 1}, false, false}, Case{{1, 9, 9, 2, 1}, true, false},
                              Case{{1, 2, 2, 3, 4}, true, true}}) {
          std::vector<std::vector<float>> xs, many, alone;
          std::vector<MatmulTask> tasks;
          for (size_t i = 0; i < c.ms.size(); ++i) {
            const int64_t m = c.ms[i], ldy = ns[i] + static_cast<int64_t>(i);
            xs.push_back(random_floats(m * ldx, ++seed, -2, 2));
            many.emplace_back(static_cast<size_t>(m * ldy), -7.0f);
            alone.emplace_back(static_cast<size_t>(m * ldy), -7.0f);
          }
          for (size_t i = 0; i < c.ms.size(); ++i) {
            const int64_t m = c.ms[i], ldy = ns[i] + static_cast<int64_t>(i);
            const float* x = c.share && i == 2 ? xs[1].data() : xs[i].data();
            const WeightMatrix& w = c.odd_format && i == 3 ? odd : ws[i];
            const float* b = i == 1 ? bias.data() : nullptr;
            tasks.push_back({x, m, ldx, {&w, b, many[i].data(), ldy}});
            matmul(x, m, ldx, w, b, alone[i].data(), ldy, pool);
          }
          matmul_many(tasks, pool);
          for (size_t i = 0; i < c.ms.size(); ++i)
            for (size_t j = 0; j < many[i].size(); ++j)
              ASSERT_EQ(many[i][j], alone[i][j]) << weight_format_name(f) << " threads " << threads << " k " << k
                                                 << " task " << i << " of m " << c.ms[i] << " at " << j;
        }
      }
}

TEST(MatmulMany, RejectsShortStrides) {
  ThreadPool pool(2);
  std::vector<float> w(8 * 4), x(2 * 4), y(2 * 8), z(2 * 8);
  WeightMatrix wm = WeightMatrix::view_f32(w.data(), 8, 4);
  const MatmulTask good{x.data(), 2, 4, {&wm, nullptr, y.data(), 8}}, short_y{x.data(), 2, 4, {&wm, nullptr, z.data(), 7}};
  const MatmulTask both[] = {good, short_y};
  EXPECT_THROW(matmul_many(both, pool), Error);
}

TEST(MatmulEach, RejectsShortStrides) {
  ThreadPool pool(2);
  std::vector<float> w(8 * 4), x(2 * 4), y(2 * 8), z(2 * 8);
  WeightMatrix wm = WeightMatrix::view_f32(w.data(), 8, 4);
  const MatmulOutput good{&wm, nullptr, y.data(), 8}, short_y{&wm, nullptr, z.data(), 7};
  const MatmulOutput both[] = {good, short_y};
  EXPECT_THROW(matmul_each(x.data(), 2, 4, both, pool), Error);
  EXPECT_THROW(matmul_each(x.data(), 2, 3, {&good, 1}, pool), Error);
}

TEST(Matmul, RejectsShortStrides) {
  ThreadPool pool(1);
  std::vector<float> w(8 * 4), x(2 * 4), y(2 * 8);
  WeightMatrix wm = WeightMatrix::view_f32(w.data(), 8, 4);
  EXPECT_THROW(matmul(x.data(), 2, 3, wm, nullptr, y.data(), 8, pool), Error);
  EXPECT_THROW(matmul(x.data(), 2, 4, wm, nullptr, y.data(), 7, pool), Error);
}

}  // namespace
}  // namespace qvl
