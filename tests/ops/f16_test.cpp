// IEEE half precision for the KV cache: the scalar conversion against exact
// rounding, the bulk conversion against the scalar one on every SIMD target,
// and attention on f16 K/V against attention on the same K/V widened to f32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/ops.h"
#include "test_util.h"

namespace qvl {
namespace {

// Every f16 value, as a double (exact), in increasing order of magnitude.
double f16_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  const double mag = exp == 0 ? std::ldexp(man, -24) : std::ldexp(1024 + man, exp - 25);
  return (h & 0x8000) ? -mag : mag;
}

TEST(F16, WideningIsExactForEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1f) == 0x1f) continue;  // inf / NaN
    ASSERT_EQ(static_cast<double>(f16_to_f32(static_cast<uint16_t>(h))), f16_value(static_cast<uint16_t>(h))) << h;
  }
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)));
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
}

TEST(F16, NarrowingRoundsToNearestEvenAndSaturates) {
  // Every f16 round-trips; midpoints between neighbours go to the even code;
  // points just off a midpoint go to the nearer code.
  for (uint16_t h = 0; h < 0x7bff; ++h) {
    const double a = f16_value(h), b = f16_value(static_cast<uint16_t>(h + 1));
    ASSERT_EQ(f32_to_f16(static_cast<float>(a)), h);
    const double mid = (a + b) / 2;
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    ASSERT_EQ(f32_to_f16(static_cast<float>(mid)), even) << "midpoint above code " << h;
    ASSERT_EQ(f32_to_f16(-static_cast<float>(mid)), even | 0x8000) << "negative midpoint above code " << h;
    const float below = std::nextafter(static_cast<float>(mid), 0.0f), above = std::nextafter(static_cast<float>(mid), 1e9f);
    ASSERT_EQ(f32_to_f16(below), h) << h;
    ASSERT_EQ(f32_to_f16(above), h + 1) << h;
  }
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7bff);  // would round to inf: saturates
  EXPECT_EQ(f32_to_f16(1e30f), 0x7bff);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfbff);
  EXPECT_EQ(f32_to_f16(1e-30f), 0);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(F16, BulkNarrowingMatchesScalarOnEveryTarget) {
  std::vector<float> x = testing::random_floats(4099, 7, -70000, 70000);
  auto small = testing::random_floats(2000, 8, -1e-4f, 1e-4f);  // f16 subnormals
  auto mid = testing::random_floats(2000, 9, -3, 3);
  x.insert(x.end(), small.begin(), small.end());
  x.insert(x.end(), mid.begin(), mid.end());
  x.push_back(std::numeric_limits<float>::infinity());
  x.push_back(-std::numeric_limits<float>::infinity());
  for (uint16_t h = 0; h < 0x7bff; h += 7) {  // exact midpoints exercise ties
    const float m = static_cast<float>((f16_value(h) + f16_value(static_cast<uint16_t>(h + 1))) / 2);
    x.push_back(m);
    x.push_back(-m);
  }
  std::vector<uint16_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = f32_to_f16(x[i]);
  testing::for_each_target([&](const std::string& target) {
    std::vector<uint16_t> got(x.size());
    f32_to_f16(x.data(), got.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(got[i], want[i]) << target << " element " << i << " = " << x[i];
    std::vector<float> back(x.size());
    f16_to_f32(got.data(), back.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(back[i], f16_to_f32(got[i])) << target << " element " << i;
  });
}

// attention(q, f16 K/V) == attention(q, the same K/V widened), bit for bit,
// on the decode (rows) and the tiled paths.
TEST(F16, AttentionOnF16KvEqualsAttentionOnWidenedKv) {
  ThreadPool pool(2);
  struct Case {
    int64_t nq, nkv, qh, kvh, d, q_pos0;
  };
  for (const Case cs : {Case{1, 300, 16, 8, 128, 299}, Case{3, 1100, 4, 2, 64, 1097}, Case{40, 300, 4, 2, 64, 260},
                        Case{97, 97, 2, 1, 72, 0}}) {
    AttentionParams p;
    p.nq = cs.nq, p.nkv = cs.nkv, p.q_heads = cs.qh, p.kv_heads = cs.kvh, p.head_dim = cs.d;
    p.q_stride = p.out_stride = cs.qh * cs.d, p.kv_stride = cs.kvh * cs.d;
    p.scale = 1.0f / std::sqrt(static_cast<float>(cs.d)), p.causal = true, p.q_pos0 = cs.q_pos0;
    const auto q = testing::random_floats(p.nq * p.q_stride, 11, -2, 2);
    const auto kf = testing::random_floats(p.nkv * p.kv_stride, 12, -2, 2);
    const auto vf = testing::random_floats(p.nkv * p.kv_stride, 13, -3, 3);
    std::vector<uint16_t> k16(kf.size()), v16(vf.size());
    f32_to_f16(kf.data(), k16.data(), static_cast<int64_t>(kf.size()));
    f32_to_f16(vf.data(), v16.data(), static_cast<int64_t>(vf.size()));
    std::vector<float> kw(kf.size()), vw(vf.size());
    f16_to_f32(k16.data(), kw.data(), static_cast<int64_t>(kw.size()));
    f16_to_f32(v16.data(), vw.data(), static_cast<int64_t>(vw.size()));
    std::vector<float> got(static_cast<size_t>(p.nq * p.out_stride)), want = got;
    attention(q.data(), k16.data(), v16.data(), got.data(), p, pool);
    attention(q.data(), kw.data(), vw.data(), want.data(), p, pool);
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float))) << "nq " << cs.nq << " nkv " << cs.nkv;
  }
}

}  // namespace
}  // namespace qvl
