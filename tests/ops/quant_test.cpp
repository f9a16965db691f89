// The SIMD bf16 -> Q8/Q4 quantizers and their scalar twins against the
// formulas of quant.h: the same codes and scales, every byte written, on every
// compiled target, including ties (x.5 after scaling), repeated extremes of
// both signs, all-zero groups and partial last groups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/quant.h"
#include "ops/simd_quant.h"
#include "test_util.h"

namespace qvl {
namespace {

struct Quantized {
  std::vector<uint8_t> quants;
  std::vector<uint16_t> scales;
};

using RowsFn = void (*)(const uint16_t*, int64_t, int64_t, uint8_t*, uint16_t*);

// fn's output, on buffers filled beforehand with a sentinel code byte and
// sentinel scale.
Quantized run(RowsFn fn, bool q8, const uint16_t* src, int64_t rows, int64_t cols, uint8_t code_fill = 0xAB,
              uint16_t scale_fill = 0xFFFF) {
  const int64_t row_bytes = q8 ? quant::q8_row_bytes(cols) : quant::q4_row_bytes(cols);
  Quantized out;
  out.quants.assign(static_cast<size_t>(rows * row_bytes), code_fill);
  out.scales.assign(static_cast<size_t>(rows * quant::groups(cols)), scale_fill);
  fn(src, rows, cols, out.quants.data(), out.scales.data());
  return out;
}

// The layout and formulas of quant.h written out again, for the expected
// bytes of every row: codes of the partial last group's padding are 0 (q8
// byte 0x00, q4 nibble 8).
Quantized specified(bool q8, const uint16_t* src, int64_t rows, int64_t cols) {
  const int64_t row_bytes = q8 ? quant::q8_row_bytes(cols) : quant::q4_row_bytes(cols);
  const int64_t groups = quant::groups(cols);
  Quantized want;
  want.quants.assign(static_cast<size_t>(rows * row_bytes), 0);
  want.scales.assign(static_cast<size_t>(rows * groups), 0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t c0 = g * quant::kGroup, count = std::min(quant::kGroup, cols - c0);
      float amax = 0, extreme = 0;  // extreme: the first weight of largest magnitude
      for (int64_t j = 0; j < count; ++j) {
        const float w = bf16_to_f32(src[r * cols + c0 + j]);
        if (std::fabs(w) > amax) amax = std::fabs(w), extreme = w;
      }
      const uint16_t h = q8 ? quant::f16_ceil(amax / 127.0f)
                            : static_cast<uint16_t>(quant::f16_ceil(amax / 8.0f) | (extreme > 0 ? 0x8000 : 0));
      want.scales[r * groups + g] = h;
      const float d = quant::f16_to_f32(h), inv = d != 0 ? 1.0f / d : 0.0f;
      const float lo = q8 ? -127.0f : -8.0f, hi = q8 ? 127.0f : 7.0f;
      for (int64_t j = 0; j < quant::kGroup; ++j) {
        const float w = j < count ? bf16_to_f32(src[r * cols + c0 + j]) : 0.0f;
        const int code = static_cast<int>(std::clamp(std::nearbyint(w * inv), lo, hi));
        uint8_t* row = want.quants.data() + r * row_bytes;
        if (q8)
          row[c0 + j] = static_cast<uint8_t>(static_cast<int8_t>(code));
        else
          row[c0 / 2 + j % 16] |= static_cast<uint8_t>((code + 8) << (j < 16 ? 0 : 4));
      }
    }
  return want;
}

// Random normal weights with adversarial groups mixed in: values on exact
// rounding ties of the scale, a max magnitude repeated with both signs, and
// all zeros.
std::vector<uint16_t> tricky_bf16(int64_t rows, int64_t cols, uint32_t seed) {
  auto v = testing::random_bf16(rows * cols, seed);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t kind = r % 4;
    uint16_t* row = v.data() + r * cols;
    for (int64_t j = 0; j < cols; ++j) {
      if (kind == 1) {
        // Small integers and halves: with max 8 or 127.0 many products land on .5.
        row[j] = f32_to_bf16(static_cast<float>((j * 7 + r) % 17 - 8) * 0.5f);
      } else if (kind == 2) {
        row[j] = j % 5 == 0 ? f32_to_bf16(j % 10 == 0 ? 3.0f : -3.0f) : row[j];
      } else if (kind == 3 && (j / quant::kGroup) % 2 == 0) {
        row[j] = (j % 3 == 0) ? 0x8000 : 0;  // +0 and -0
      }
    }
  }
  return v;
}

void expect_identical(const Quantized& a, const Quantized& b, const std::string& what) {
  ASSERT_EQ(a.quants.size(), b.quants.size());
  ASSERT_EQ(a.scales.size(), b.scales.size());
  for (size_t i = 0; i < a.quants.size(); ++i)
    ASSERT_EQ(a.quants[i], b.quants[i]) << what << ": code byte " << i;
  for (size_t i = 0; i < a.scales.size(); ++i) ASSERT_EQ(a.scales[i], b.scales[i]) << what << ": scale " << i;
}

// fn against the specification, run twice over buffers holding two
// different sentinels: a code byte or scale fn leaves unwritten keeps a
// sentinel, which cannot equal the expected value in both runs.
void expect_specified(RowsFn fn, bool q8, const uint16_t* src, int64_t rows, int64_t cols, const std::string& what) {
  const Quantized want = specified(q8, src, rows, cols);
  expect_identical(run(fn, q8, src, rows, cols, 0xAB, 0xFFFF), want, what + " (sentinels 0xAB, 0xFFFF)");
  expect_identical(run(fn, q8, src, rows, cols, 0x54, 0x1234), want, what + " (sentinels 0x54, 0x1234)");
}

TEST(Quant, SimdIsBitIdenticalToScalar) {
  struct Shape {
    int64_t rows, cols;
  };
  const std::vector<Shape> shapes = {{1, 1}, {3, 31}, {4, 32}, {5, 33}, {8, 64}, {7, 100}, {12, 257}, {9, 1024}};
  testing::for_each_target([&](const std::string& target) {
    uint32_t seed = 7;
    for (auto s : shapes)
      for (int off : {0, 1}) {
        testing::Misaligned<uint16_t> src(tricky_bf16(s.rows, s.cols, ++seed), off);
        const std::string what = target + " " + std::to_string(s.rows) + "x" + std::to_string(s.cols) +
                                 " offset " + std::to_string(off);
        expect_specified(simd::quantize_rows_q8, true, src.data(), s.rows, s.cols, "q8 simd " + what);
        expect_specified(quant::quantize_rows_q8_scalar, true, src.data(), s.rows, s.cols, "q8 scalar " + what);
        expect_specified(simd::quantize_rows_q4, false, src.data(), s.rows, s.cols, "q4 simd " + what);
        expect_specified(quant::quantize_rows_q4_scalar, false, src.data(), s.rows, s.cols, "q4 scalar " + what);
      }
  });
}

// The rounding rule itself, on values chosen by hand: ties go to even, both
// in the specification and in the SIMD path.
TEST(Quant, RoundsHalfToEven) {
  // Group max 127 -> scale 1: codes are the values rounded.
  std::vector<float> vals = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.0f};
  std::vector<uint16_t> src(quant::kGroup, 0);
  for (size_t i = 0; i < vals.size(); ++i) src[i] = f32_to_bf16(vals[i]);
  const std::vector<int8_t> expect = {127, 0, 2, 2, 0, -2, -2, 3};
  for (RowsFn fn : {RowsFn(quant::quantize_rows_q8_scalar), RowsFn(simd::quantize_rows_q8)}) {
    Quantized q = run(fn, true, src.data(), 1, quant::kGroup);
    EXPECT_EQ(quant::f16_to_f32(q.scales[0]), 1.0f);
    for (size_t i = 0; i < expect.size(); ++i) EXPECT_EQ(static_cast<int8_t>(q.quants[i]), expect[i]) << i;
  }
}

TEST(Quant, Q4TakesFirstExtremeAndItsSign) {
  std::vector<uint16_t> src(quant::kGroup, 0);
  src[3] = f32_to_bf16(4.0f);
  src[9] = f32_to_bf16(-4.0f);  // same magnitude, later: must not win
  src[20] = f32_to_bf16(-1.0f);
  for (RowsFn fn : {RowsFn(quant::quantize_rows_q4_scalar), RowsFn(simd::quantize_rows_q4)}) {
    Quantized q = run(fn, false, src.data(), 1, quant::kGroup);
    EXPECT_EQ(quant::f16_to_f32(q.scales[0]), -0.5f);  // 4 / -8
    EXPECT_EQ(q.quants[3] & 0xF, 0);              // 4 -> -8 (+8)
    EXPECT_EQ(q.quants[9] & 0xF, 15);             // -4 -> 8, clamped to 7 (+8)
    EXPECT_EQ(q.quants[4] >> 4, 2 + 8);           // element 20: -1 / -0.5 = 2
  }
}

}  // namespace
}  // namespace qvl

namespace qvl {
namespace {

// f16 scales: exact decoding, and rounding up so that no code overflows.
TEST(Quant, F16CeilIsTheSmallestF16NotBelow) {
  EXPECT_EQ(quant::f16_ceil(0.0f), 0);
  EXPECT_EQ(quant::f16_ceil(1.0f), 0x3c00);
  EXPECT_EQ(quant::f16_ceil(65504.0f), 0x7bff);
  EXPECT_EQ(quant::f16_ceil(1e9f), 0x7bff);  // saturates
  EXPECT_EQ(quant::f16_ceil(5.9604645e-8f), 1);  // 2^-24, the smallest subnormal
  EXPECT_EQ(quant::f16_ceil(1e-9f), 1);
  EXPECT_EQ(quant::f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(quant::f16_to_f32(0x0400), 6.1035156e-5f);  // 2^-14, the smallest normal
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> e(-30.0f, 15.0f);
  for (int t = 0; t < 20000; ++t) {
    const float v = std::exp2(e(rng)) * 1.37f;
    if (v >= 65504.0f) continue;
    const uint16_t h = quant::f16_ceil(v);
    ASSERT_GE(quant::f16_to_f32(h), v) << v;
    ASSERT_TRUE(h == 0 || quant::f16_to_f32(static_cast<uint16_t>(h - 1)) < v) << v;
  }
}

// The activation quantizer: SIMD against the scalar twin, bit for bit, on
// every target, odd lengths and misaligned rows; and its own bound.
TEST(Quant, ActivationRowsBitIdenticalAndWithinHalfAStep) {
  testing::for_each_target([&](const std::string& target) {
    uint32_t seed = 40;
    // Lengths past 16 groups (AVX-512 takes 16 groups at a time) with and
    // without a partial last group, and magnitudes far from 1.
    for (int64_t k : {1, 5, 31, 32, 33, 64, 100, 1000, 2048, 4100})
      for (int off : {0, 1, 3}) {
        auto xs = testing::random_floats(k, ++seed, -3, 3);
        if (k > 40) xs[7] = 0, xs[20] = 2.5f, xs[33] = -2.5f;  // ties and a zero
        if (k > 1000) {
          for (int64_t i = 0; i < k; ++i) xs[i] *= (i / 32) % 3 == 0 ? 1e-20f : (i / 32) % 3 == 1 ? 1e20f : 1.0f;
          std::fill(xs.begin() + 64, xs.begin() + 96, 0.0f);  // an all-zero group
        }
        testing::Misaligned<float> x(xs, off);
        const int64_t G = quant::groups(k);
        std::vector<int8_t> c1(G * 32, 99), c2(G * 32, 98);
        std::vector<float> s1(G), s2(G);
        std::vector<int32_t> u1(G), u2(G);
        simd::quantize_x(x.data(), k, {c1.data(), s1.data(), u1.data()});
        quant::quantize_x_scalar(xs.data(), k, {c2.data(), s2.data(), u2.data()});
        for (int64_t i = 0; i < G * 32; ++i) ASSERT_EQ(c1[i], c2[i]) << target << " k=" << k << " i=" << i;
        for (int64_t g = 0; g < G; ++g) {
          ASSERT_EQ(s1[g], s2[g]) << target << " k=" << k;
          ASSERT_EQ(u1[g], u2[g]) << target << " k=" << k;
          int32_t sum = 0;
          for (int64_t j = 0; j < 32; ++j) {
            const int64_t c = g * 32 + j;
            sum += c2[c];
            if (c >= k) {
              ASSERT_EQ(c2[c], 0);
              continue;
            }
            ASSERT_LE(std::fabs(xs[c] - s2[g] * c2[c]), s2[g] * 0.5001f) << "k=" << k << " c=" << c;
          }
          ASSERT_EQ(sum, u2[g]);
        }
      }
  });
}

}  // namespace
}  // namespace qvl

namespace qvl {
namespace {

// From f32 weights (an FP8 checkpoint dequantized at load): the SIMD
// quantizers give the scalar specification's bytes, for sizes with partial
// groups, and on bf16-representable weights the bf16 path's bytes too.
TEST(Quant, F32SourceMatchesItsScalarTwinAndTheBf16Path) {
  using F32Fn = void (*)(const float*, int64_t, int64_t, uint8_t*, uint16_t*);
  using Bf16Fn = void (*)(const uint16_t*, int64_t, int64_t, uint8_t*, uint16_t*);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (const int64_t cols : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{77}, int64_t{200}}) {
    const int64_t rows = 5;
    std::vector<float> f32(rows * cols), exact(rows * cols);
    std::vector<uint16_t> bf16(rows * cols);
    for (size_t i = 0; i < f32.size(); ++i) {
      f32[i] = normal(rng) * (i % 7 == 0 ? 9.0f : 1.0f);  // FP8-like: more than bf16's 8 bits
      bf16[i] = f32_to_bf16(f32[i]);
      exact[i] = bf16_to_f32(bf16[i]);
    }
    for (const bool q8 : {true, false}) {
      SCOPED_TRACE(std::string(q8 ? "q8" : "q4") + " cols " + std::to_string(cols));
      const F32Fn scalar = q8 ? F32Fn(quant::quantize_rows_q8_scalar) : F32Fn(quant::quantize_rows_q4_scalar);
      const F32Fn simd_fn = q8 ? F32Fn(simd::quantize_rows_q8) : F32Fn(simd::quantize_rows_q4);
      const Bf16Fn from_bf16 = q8 ? Bf16Fn(simd::quantize_rows_q8) : Bf16Fn(simd::quantize_rows_q4);
      auto out = [&](auto fn, const auto* src) {
        const int64_t row_bytes = q8 ? quant::q8_row_bytes(cols) : quant::q4_row_bytes(cols);
        Quantized o;
        o.quants.assign(static_cast<size_t>(rows * row_bytes), 0xAB);
        o.scales.assign(static_cast<size_t>(rows * quant::groups(cols)), 0xFFFF);
        fn(src, rows, cols, o.quants.data(), o.scales.data());
        return o;
      };
      const Quantized a = out(scalar, f32.data()), b = out(simd_fn, f32.data());
      EXPECT_EQ(a.quants, b.quants);
      EXPECT_EQ(a.scales, b.scales);
      const Quantized c = out(simd_fn, exact.data()), d = out(from_bf16, bf16.data());
      EXPECT_EQ(c.quants, d.quants);
      EXPECT_EQ(c.scales, d.scales);
    }
  }
}

}  // namespace
}  // namespace qvl
