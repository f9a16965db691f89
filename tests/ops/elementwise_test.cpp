// Each element-wise kernel against a double-precision reference (the model's
// golden tolerance is tight) and against its scalar twin, over odd sizes and
// misaligned pointers.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops/ops.h"
#include "ops/scalar.h"
#include "test_util.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_floats;

const std::vector<int64_t> kSizes = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 63, 100, 257, 1000};

TEST(Bf16, ConversionsExactAndRoundToNearestEven) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 lies exactly between two bf16 values: ties go to the even one (1.0).
  EXPECT_EQ(f32_to_bf16(1.00390625f), 0x3f80);
  // 1 + 3·2^-8 ties between 1+2^-7 (odd) and 1+2^-6 (even).
  EXPECT_EQ(f32_to_bf16(1.01171875f), 0x3f82);
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 128 + 1e-4f), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  for (uint32_t v = 0; v < 65536; v += 7) {
    auto b = static_cast<uint16_t>(v);
    float f = bf16_to_f32(b);
    if (!std::isnan(f)) {
      ASSERT_EQ(f32_to_bf16(f), b);
    }
  }
}

TEST(Bf16, ArrayConversionAndEmbedding) {
  for (int64_t n : kSizes)
    for (int off : {0, 1, 3}) {
      auto src = testing::random_bf16(n, uint32_t(n));
      Misaligned<uint16_t> s(src, off);
      Misaligned<float> d(std::vector<float>(n + 1, -9.0f), off);
      bf16_to_f32(s.data(), d.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(d.data()[i], bf16_to_f32(src[i]));
      ASSERT_EQ(d.data()[n], -9.0f);
    }
  const int64_t vocab = 11, dim = 37;
  auto table = testing::random_bf16(vocab * dim, 5);
  std::vector<int32_t> ids = {3, 0, 10, 3};
  std::vector<float> out(ids.size() * dim);
  embed_bf16(table.data(), dim, ids.data(), 4, out.data());
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c = 0; c < dim; ++c) ASSERT_EQ(out[i * dim + c], bf16_to_f32(table[ids[i] * dim + c]));
}

TEST(Norms, RmsNormAndLayerNormMatchDouble) {
  for (int64_t dim : kSizes)
    for (int off : {0, 1}) {
      const int64_t rows = 3;
      auto x = random_floats(rows * dim, uint32_t(dim), -3, 3);
      for (int64_t i = 0; i < dim; ++i) x[i] += 10.0f;  // a row with a large mean
      auto w = random_floats(dim, 99), b = random_floats(dim, 98);
      Misaligned<float> xm(x, off);
      std::vector<float> rms(rows * dim), ln(rows * dim), twin(rows * dim);
      rms_norm(xm.data(), w.data(), rms.data(), rows, dim, 1e-6f);
      layer_norm(xm.data(), w.data(), b.data(), ln.data(), rows, dim, 1e-6f);
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0, sum = 0, var = 0;
        for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i], sum += x[r * dim + i];
        double mean = sum / dim;
        for (int64_t i = 0; i < dim; ++i) var += (x[r * dim + i] - mean) * (x[r * dim + i] - mean);
        double inv = 1 / std::sqrt(ss / dim + 1e-6), linv = 1 / std::sqrt(var / dim + 1e-6);
        for (int64_t i = 0; i < dim; ++i) {
          double e = x[r * dim + i] * inv * w[i];
          ASSERT_NEAR(rms[r * dim + i], e, 2e-6 * (std::fabs(e) + 1)) << dim;
          double l = (x[r * dim + i] - mean) * linv * w[i] + b[i];
          ASSERT_NEAR(ln[r * dim + i], l, 5e-6 * (std::fabs(l) + 1)) << dim;
        }
      }
      // In place.
      std::vector<float> inplace = x;
      rms_norm(inplace.data(), w.data(), inplace.data(), rows, dim, 1e-6f);
      EXPECT_EQ(inplace, rms);
      scalar::rms_norm(x.data(), w.data(), twin.data(), rows, dim, 1e-6f);
      EXPECT_LE(testing::max_rel_err(rms.data(), twin.data(), rows * dim, 1.0), 2e-6);
      scalar::layer_norm(x.data(), w.data(), b.data(), twin.data(), rows, dim, 1e-6f);
      EXPECT_LE(testing::max_rel_err(ln.data(), twin.data(), rows * dim, 1.0), 5e-6);
    }
}

double gelu_tanh_ref(double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }
double gelu_erf_ref(double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }
double silu_ref(double v) { return v / (1 + std::exp(-v)); }

// Relative error with an absolute floor of 1e-7·max(1,|x|): near the zeros
// of these functions (large negative x) only absolute error matters.
void expect_activation(void (*fn)(float*, int64_t), double (*ref)(double), double rel, const char* name) {
  for (int64_t n : kSizes)
    for (int off : {0, 1, 2}) {
      auto x = random_floats(n, uint32_t(n * 3 + off), -12, 12);
      if (n > 10) x[0] = 0, x[1] = -0.0f, x[2] = 1e-20f, x[3] = -30, x[4] = 40, x[5] = 1e-3f;
      Misaligned<float> xm(x, off);
      fn(xm.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        double e = ref(x[i]);
        ASSERT_LE(std::fabs(xm.data()[i] - e), rel * std::fabs(e) + 1e-7 * std::max(1.0, std::fabs(double(x[i])) * 1e-3))
            << name << " x=" << x[i] << " got " << xm.data()[i] << " want " << e;
      }
    }
}

TEST(Activations, GeluTanhGeluErfMatchDouble) {
  expect_activation(gelu_tanh, gelu_tanh_ref, 2e-6, "gelu_tanh");
  expect_activation(gelu_erf, gelu_erf_ref, 2e-6, "gelu_erf");
}

TEST(Activations, SiluMulAndAdd) {
  for (int64_t n : kSizes)
    for (int off : {0, 1}) {
      auto g = random_floats(n, uint32_t(n), -20, 20), u = random_floats(n, uint32_t(n + 1));
      Misaligned<float> gm(g, off);
      std::vector<float> out(n), sum(n);
      silu_mul(gm.data(), u.data(), out.data(), n);
      add(gm.data(), u.data(), sum.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        double e = silu_ref(g[i]) * u[i];
        ASSERT_NEAR(out[i], e, 2e-6 * std::fabs(e) + 1e-30);
        ASSERT_EQ(sum[i], g[i] + u[i]);
      }
      silu_mul(gm.data(), u.data(), gm.data(), n);  // in place over gate
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(gm.data()[i], out[i]);
    }
}

TEST(Softmax, MatchesDoubleAndHandlesLargeValues) {
  for (int64_t n : kSizes)
    for (int off : {0, 3}) {
      auto x = random_floats(n, uint32_t(n), -30, 30);
      x[0] = 1000.0f;  // max subtraction keeps exp finite
      Misaligned<float> xm(x, off);
      softmax(xm.data(), n);
      double mx = *std::max_element(x.begin(), x.end()), sum = 0;
      for (float v : x) sum += std::exp(double(v) - mx);
      double total = 0;
      for (int64_t i = 0; i < n; ++i) {
        double e = std::exp(double(x[i]) - mx) / sum;
        ASSERT_NEAR(xm.data()[i], e, 2e-6 * e + 1e-12);
        total += xm.data()[i];
      }
      EXPECT_NEAR(total, 1.0, 1e-5);
    }
}

TEST(Rope, RotateHalfMatchesDefinitionWithStride) {
  for (int64_t head_dim : {2, 8, 64, 128, 72})
    for (int off : {0, 1}) {
      const int64_t tokens = 5, heads = 3, stride = heads * head_dim + 4, half = head_dim / 2;
      auto x = random_floats(tokens * stride, uint32_t(head_dim));
      auto ang = random_floats(tokens * half, 7, -50, 50);
      std::vector<float> c(ang.size()), s(ang.size());
      for (size_t i = 0; i < ang.size(); ++i) c[i] = std::cos(ang[i]), s[i] = std::sin(ang[i]);
      Misaligned<float> xm(x, off);
      rope(xm.data(), tokens, heads, head_dim, stride, c.data(), s.data());
      for (int64_t t = 0; t < tokens; ++t)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t i = 0; i < half; ++i) {
            int64_t base = t * stride + h * head_dim;
            double a = x[base + i], b = x[base + i + half], cc = c[t * half + i], ss = s[t * half + i];
            ASSERT_NEAR(xm.data()[base + i], a * cc - b * ss, 1e-6);
            ASSERT_NEAR(xm.data()[base + i + half], b * cc + a * ss, 1e-6);
          }
      for (int64_t t = 0; t < tokens; ++t)  // the padding between tokens is untouched
        for (int64_t j = heads * head_dim; j < stride; ++j) ASSERT_EQ(xm.data()[t * stride + j], x[t * stride + j]);
    }
}

}  // namespace
}  // namespace qvl
