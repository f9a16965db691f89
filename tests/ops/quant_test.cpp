// The SIMD bf16 -> Q8/Q4 quantizers against their scalar twins: bit-identical
// codes and scales on every compiled target, including ties (x.5 after
// scaling), repeated extremes of both signs, all-zero groups and partial last
// groups.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ops/quant.h"
#include "ops/simd_quant.h"
#include "test_util.h"

namespace qvl {
namespace {

struct Quantized {
  std::vector<uint8_t> quants;
  std::vector<float> scales;
};

using RowsFn = void (*)(const uint16_t*, int64_t, int64_t, uint8_t*, float*);

Quantized run(RowsFn fn, bool q8, const uint16_t* src, int64_t rows, int64_t cols) {
  const int64_t row_bytes = q8 ? quant::q8_row_bytes(cols) : quant::q4_row_bytes(cols);
  Quantized out;
  out.quants.assign(static_cast<size_t>(rows * row_bytes), 0xAB);  // canary: every byte must be written
  out.scales.assign(static_cast<size_t>(rows * quant::groups(cols)), -1.0f);
  fn(src, rows, cols, out.quants.data(), out.scales.data());
  return out;
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
  for (size_t i = 0; i < a.quants.size(); ++i)
    ASSERT_EQ(a.quants[i], b.quants[i]) << what << ": code byte " << i;
  for (size_t i = 0; i < a.scales.size(); ++i) {
    uint32_t x, y;
    std::memcpy(&x, &a.scales[i], 4);
    std::memcpy(&y, &b.scales[i], 4);
    ASSERT_EQ(x, y) << what << ": scale " << i << " (" << a.scales[i] << " vs " << b.scales[i] << ")";
  }
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
        expect_identical(run(simd::quantize_rows_q8, true, src.data(), s.rows, s.cols),
                         run(quant::quantize_rows_q8_scalar, true, src.data(), s.rows, s.cols), "q8 " + what);
        expect_identical(run(simd::quantize_rows_q4, false, src.data(), s.rows, s.cols),
                         run(quant::quantize_rows_q4_scalar, false, src.data(), s.rows, s.cols), "q4 " + what);
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
    EXPECT_EQ(q.scales[0], 1.0f);
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
    EXPECT_EQ(q.scales[0], -0.5f);                // 4 / -8
    EXPECT_EQ(q.quants[3] & 0xF, 0);              // 4 -> -8 (+8)
    EXPECT_EQ(q.quants[9] & 0xF, 15);             // -4 -> 8, clamped to 7 (+8)
    EXPECT_EQ(q.quants[4] >> 4, 2 + 8);           // element 20: -1 / -0.5 = 2
  }
}

}  // namespace
}  // namespace qvl
