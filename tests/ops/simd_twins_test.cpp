// Every SIMD kernel against its scalar twin, on every SIMD target compiled in
// and supported here, over odd sizes and misaligned pointers.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu_features.h"
#include "ops/matmul.h"
#include "ops/ops.h"
#include "ops/scalar.h"
#include "test_util.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_floats;

TEST(SimdTwins, AtLeastTwoTargetsAreTested) {
#if defined(__aarch64__)
  // NEON is AArch64's baseline: Highway builds no portable target beside it
  // (and qvl no SVE ones, simd_config.h). The portable paths of the NEON
  // target run on a CPU without the dot product (docs/platforms.md).
  GTEST_SKIP() << "AArch64 compiles the NEON target alone";
#endif
  int count = 0;
  testing::for_each_target([&](const std::string&) { ++count; });
  // The best target the limit leaves and the portable fallback; one when the
  // limit leaves only the fallback (QVL_SIMD_TARGET=EMU128 on Highway 1.0,
  // where GCC 12 builds SCALAR as the fallback; SSE2 from Highway 1.2 on).
  const int64_t limit = simd_limit().target;
  const uint64_t left = static_cast<uint64_t>(limit ? HWY_TARGETS & ~(limit - 1) : HWY_TARGETS);
  EXPECT_GE(count, std::min(2, std::popcount(left))) << "expected the best target and the portable fallback";
}

TEST(SimdTwins, Matmul) {
  ThreadPool pool(0);
  struct Shape {
    int64_t m, n, k;
  };
  const std::vector<Shape> shapes = {{1, 7, 5}, {2, 13, 40}, {5, 9, 77}, {8, 21, 64}, {9, 17, 33}, {23, 19, 50}, {50, 30, 96}};
  testing::for_each_target([&](const std::string& target) {
    uint32_t seed = 100;
    for (auto s : shapes)
      for (auto f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::Q8, WeightFormat::Q4})
        for (int off : {0, 1}) {
          auto wsrc = testing::random_bf16(s.n * s.k, ++seed);
          Misaligned<uint16_t> wm(wsrc, off);
          WeightMatrix w = f == WeightFormat::BF16 ? WeightMatrix::view_bf16(wm.data(), s.n, s.k)
                                                   : WeightMatrix::from_bf16(wm.data(), s.n, s.k, f, &pool);
          Misaligned<float> x(random_floats(s.m * s.k, ++seed), off);
          auto bias = random_floats(s.n, ++seed);
          std::vector<float> y(static_cast<size_t>(s.m * s.n)), twin(y.size());
          matmul(x.data(), s.m, w, bias.data(), y.data(), pool);
          scalar::matmul(x.data(), s.m, s.k, w, bias.data(), twin.data(), s.n);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_NEAR(y[i], twin[i], 1e-5 * std::sqrt(double(s.k)) + 1e-6)
                << target << " " << weight_format_name(f) << " m=" << s.m << " n=" << s.n << " k=" << s.k;
        }
  });
}

// nkv on both sides of every key tile and softmax block edge: tiles of up to
// 64 positions and blocks of 4 tiles (256 on AVX-512) in the tiled path
// (nq >= 16); blocks of 64 in the rows path, whose chunks of 512 the last
// length crosses.
TEST(SimdTwins, Attention) {
  ThreadPool pool(0);
  testing::for_each_target([&](const std::string& target) {
    uint32_t seed = 7;
    for (int64_t nq : {1, 3, 16, 37})
      for (int64_t nkv : {1, 15, 16, 17, 63, 64, 65, 127, 255, 256, 257, 300, 520})
        for (bool causal : {false, true})
          for (int64_t dh : {16, 64, 72, 128}) {
            if (causal && nkv < nq) continue;  // the queries are the last nq positions
            if (nkv > 300 && nq >= 16) continue;  // chunks are the rows path's only
            AttentionParams p;
            p.nq = nq, p.nkv = nkv, p.q_heads = 4, p.kv_heads = 2, p.head_dim = dh;
            p.q_stride = 4 * dh + 1, p.kv_stride = 2 * dh + 3, p.out_stride = 4 * dh;
            p.scale = 1.0f / std::sqrt(float(dh)), p.causal = causal, p.q_pos0 = causal ? nkv - nq : 0;
            Misaligned<float> q(random_floats(p.nq * p.q_stride, ++seed, -2, 2), 1);
            Misaligned<float> k(random_floats(p.nkv * p.kv_stride, ++seed, -2, 2), 3);
            Misaligned<float> v(random_floats(p.nkv * p.kv_stride, ++seed), 2);
            std::vector<float> out(static_cast<size_t>(p.nq * p.out_stride)), twin(out.size());
            attention(q.data(), k.data(), v.data(), out.data(), p, pool);
            scalar::attention(q.data(), k.data(), v.data(), twin.data(), p);
            for (size_t i = 0; i < out.size(); ++i)
              ASSERT_NEAR(out[i], twin[i], 3e-6 + 3e-5 * std::fabs(twin[i]))
                  << target << " nq=" << nq << " nkv=" << nkv << " causal=" << causal << " dh=" << dh;
          }
  });
}

TEST(SimdTwins, ElementWise) {
  testing::for_each_target([&](const std::string& target) {
    for (int64_t n : {1, 3, 8, 15, 16, 17, 33, 100, 1027})
      for (int off : {0, 1, 3}) {
        auto src = random_floats(n, uint32_t(n), -9, 9), other = random_floats(n, uint32_t(n + 5));
        auto w = random_floats(n, 3), b = random_floats(n, 4);
        auto check = [&](const std::vector<float>& got, const std::vector<float>& want, double rel, double abs,
                         const char* name) {
          for (int64_t i = 0; i < n; ++i)
            ASSERT_LE(std::fabs(got[i] - want[i]), rel * std::fabs(want[i]) + abs) << target << " " << name << " n=" << n;
        };
        using Fn = void (*)(float*, int64_t);
        for (auto [fast, slow, name] : {std::tuple<Fn, Fn, const char*>{gelu_tanh, scalar::gelu_tanh, "gelu_tanh"},
                                        {gelu_erf, scalar::gelu_erf, "gelu_erf"},
                                        {softmax, scalar::softmax, "softmax"}}) {
          Misaligned<float> a(src, off);
          std::vector<float> t = src;
          fast(a.data(), n);
          slow(t.data(), n);
          check(a.copy(n), t, 3e-6, 1e-7, name);
        }
        Misaligned<float> a(src, off);
        std::vector<float> got(n), want(n);
        silu_mul(a.data(), other.data(), got.data(), n);
        scalar::silu_mul(src.data(), other.data(), want.data(), n);
        check(got, want, 3e-6, 1e-30, "silu_mul");
        add(a.data(), other.data(), got.data(), n);
        scalar::add(src.data(), other.data(), want.data(), n);
        check(got, want, 0, 0, "add");
        rms_norm(a.data(), w.data(), got.data(), 1, n, 1e-5f);
        scalar::rms_norm(src.data(), w.data(), want.data(), 1, n, 1e-5f);
        check(got, want, 2e-6, 1e-6, "rms_norm");
        layer_norm(a.data(), w.data(), b.data(), got.data(), 1, n, 1e-5f);
        scalar::layer_norm(src.data(), w.data(), b.data(), want.data(), 1, n, 1e-5f);
        check(got, want, 5e-6, 5e-6, "layer_norm");
        auto bf = testing::random_bf16(n, 9);
        Misaligned<uint16_t> bm(bf, off);
        bf16_to_f32(bm.data(), got.data(), n);
        scalar::bf16_to_f32(bf.data(), want.data(), n);
        check(got, want, 0, 0, "bf16_to_f32");
      }
    // log Σ exp against the double-precision twin: blocks, tails, masked
    // (-inf) entries, a vocabulary's length, all masked.
    for (int64_t n : {1, 5, 16, 1023, 1024, 1041, 5000, 151936})
      for (float scale : {1.0f, 1.0f / 0.7f}) {
        auto x = random_floats(n, uint32_t(n + 17), -12, 12);
        for (int64_t i = 0; i < n; i += 7) x[static_cast<size_t>(i)] = -std::numeric_limits<float>::infinity();
        x[static_cast<size_t>(n / 2)] = 3.5f;  // at least one finite
        Misaligned<float> a(x, 1);
        const double want = scalar::log_sum_exp(x.data(), n, scale);
        ASSERT_NEAR(log_sum_exp(a.data(), n, scale), want, 1e-6 * std::max(1.0, std::fabs(want)))
            << target << " n=" << n;
      }
    // argmax: the first of equal maxima (coarse values tie often), in the
    // vector part or the tail; -inf and NaN entries; a single element.
    for (int64_t n : {1, 2, 15, 16, 17, 100, 1027, 151936})
      for (int trial = 0; trial < 4; ++trial) {
        auto x = random_floats(n, uint32_t(n * 4 + trial), -4, 4);
        for (float& v : x) v = std::round(v * 2) / 2;
        if (trial == 1) x[static_cast<size_t>(n - 1)] = 9;  // in the tail
        if (trial == 2)
          for (int64_t i = 0; i < n; i += 3) x[static_cast<size_t>(i)] = std::numeric_limits<float>::quiet_NaN();
        if (trial == 3) std::fill(x.begin(), x.end(), -std::numeric_limits<float>::infinity());
        Misaligned<float> a(x, 3);
        ASSERT_EQ(argmax(a.data(), n), scalar::argmax(x.data(), n)) << target << " n=" << n << " trial " << trial;
        if (trial == 0) {
          ASSERT_EQ(argmax(a.data(), n), std::max_element(x.begin(), x.end()) - x.begin());
        }
      }
    const std::vector<float> nans(20, std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(argmax(nans.data(), 20), 0) << target;
    const std::vector<float> masked(40, -std::numeric_limits<float>::infinity());
    EXPECT_EQ(log_sum_exp(masked.data(), 40, 1.0f), -std::numeric_limits<double>::infinity()) << target;
    for (int64_t hd : {2, 6, 64, 80, 128}) {
      const int64_t tokens = 3, heads = 2, stride = heads * hd + 1;
      auto x = random_floats(tokens * stride, uint32_t(hd)), c = random_floats(tokens * hd / 2, 1),
           s = random_floats(tokens * hd / 2, 2);
      Misaligned<float> xm(x, 1);
      rope(xm.data(), tokens, heads, hd, stride, c.data(), s.data());
      scalar::rope(x.data(), tokens, heads, hd, stride, c.data(), s.data());
      for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(xm.data()[i], x[i], 1e-6) << target << " rope hd=" << hd;
    }
  });
}

}  // namespace
}  // namespace qvl
