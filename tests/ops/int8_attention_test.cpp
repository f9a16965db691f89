// The int8 attention kernel (Q·Kᵀ on vpdpbusd; P·V on vpdpbusd without a
// causal mask, on vdpbf16ps with one) against its scalar twin
// (scalar::attention_int8_fast) and against exact f32 attention: across head sizes, odd query and key counts, causal offsets,
// GQA, strides, misaligned pointers, f16 K/V and thread counts; keys with a
// large common offset (what smoothing K is for); diffuse rows over 4096 keys
// (what P's per-block scale is for); prefill cut into pieces of any length
// gives the bits of one call; and attention() picks it.
#include "ops/int8_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "ops/scalar.h"
#include "test_util.h"
#include "util/error.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_floats;

using Shape = testing::AttentionShape;
using testing::attention_heads;
AttentionParams params(const Shape& s) { return testing::attention_params(s, MatmulPrecision::Fast); }
const auto kInt8 = [](auto&&... args) { int8dot::attention(args...); };

std::string describe(const Shape& sh) {
  return "nq " + std::to_string(sh.nq) + " nkv " + std::to_string(sh.nkv) + " dh " + std::to_string(sh.dh) +
         " heads " + std::to_string(sh.qh) + "/" + std::to_string(sh.kvh) + (sh.causal ? " causal from " : " from ") +
         std::to_string(sh.q_pos0);
}

const Shape kShapes[] = {{16, 16, 2, 1, 32, false, 0},    {37, 70, 4, 2, 64, true, 33},  {50, 50, 3, 3, 96, true, 0},
                         {20, 200, 8, 2, 128, true, 180}, {33, 45, 2, 2, 256, false, 0}, {17, 9, 2, 1, 64, false, 0},
                         {100, 300, 16, 16, 64, false, 0}, {1, 40, 4, 2, 128, true, 39},  {5, 77, 2, 2, 64, false, 0}};

// Non-causal calls (P·V in integers) give the twin's bits. In causal ones
// everything up to the weights P is the twin's bits (integer scores, the
// same f32 operations after), so the kernel differs from it only by the
// order of f32 additions within a block's P·V (vdpbf16ps's own) and its
// addition to O: each block sum within 2·32·u·Σ|p·v| of either order's (u =
// 2^-24, Higham eq. 3.5), each rescale and addition of O within 2u|O| on
// either side, the final multiply u: |diff| <= u·(66 + 4·blocks)·max|v|·(Σp̂ /
// l), Σp̂ / l <= 1 + 2^-8 (P rounded to bf16). Against exact f32 attention,
// relative L2 within 1 % (q and k in 8 bits with one scale a row; p in 8
// bits against its block's maximum and v in 8 bits with one scale a channel
// where not causal, both in bf16 where causal). Thread counts change
// nothing, bit for bit, and f16 K/V give the bits of the same values
// widened.
TEST(Int8Attention, MatchesItsScalarTwinAndExactAttention) {
  if (!int8dot::attention_usable()) GTEST_SKIP() << "no AVX512-VNNI and AVX512-BF16 on this CPU";
  for (const Shape& sh : kShapes) {
    const AttentionParams p = params(sh);
    const std::string what = describe(sh);
    constexpr double kMaxAbs = 2;
    const auto q = random_floats(sh.nq * p.q_stride, 71, -2, 2);
    const auto k = random_floats(sh.nkv * p.kv_stride, 72, -2, 2);
    const auto v = random_floats(sh.nkv * p.kv_stride, 73, -2, 2);
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); ++i) k16[i] = f32_to_f16(k[i]), v16[i] = f32_to_f16(v[i]);
    std::vector<float> kw(k.size()), vw(v.size());
    for (size_t i = 0; i < k.size(); ++i) kw[i] = f16_to_f32(k16[i]), vw[i] = f16_to_f32(v16[i]);

    std::vector<float> twin(q.size(), 0.0f), exact(q.size(), 0.0f);
    scalar::attention_int8_fast(q.data(), k.data(), v.data(), twin.data(), p);
    AttentionParams pe = p;
    pe.precision = MatmulPrecision::Exact;
    scalar::attention(q.data(), k.data(), v.data(), exact.data(), pe);

    std::vector<std::vector<float>> outs;
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      Misaligned<float> mq(q, 1), mk(k, 3), mv(v, 5), mo(std::vector<float>(q.size(), -7.0f), 2);
      int8dot::attention(mq.data(), mk.data(), mv.data(), mo.data(), p, pool);
      outs.push_back(mo.copy(q.size()));
    }
    ASSERT_EQ(outs[1], outs[0]) << what << ": 2 threads differ from 1";
    const std::vector<float> got = attention_heads(outs[0], p), want = attention_heads(twin, p),
                             ref = attention_heads(exact, p);
    const double blocks = std::ceil(double(sh.nkv) / 32);
    const double bound = sh.causal ? 0x1p-24 * (66 + 4 * blocks) * kMaxAbs * (1 + 0x1p-8) : 0.0;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const double diff = std::fabs(got[i] - want[i]);
      ASSERT_LE(diff, bound) << what << " at " << i << ": " << got[i] << " vs " << want[i];
      worst = std::max(worst, diff);
    }
    const double err = testing::rel_l2(got.data(), ref.data(), static_cast<int64_t>(ref.size()));
    EXPECT_LE(err, 1e-2) << what;
    std::printf("int8 attention %s: worst difference from the twin %.2e (bound %.2e), relative L2 to exact %.2e\n",
                what.c_str(), worst, bound, err);

    testing::expect_f16_kv_gives_widened_bits(kInt8, p, q, k16, v16, kw, vw, what);
  }
}

// One call's heads from the kernel (2 threads), its scalar twin and exact
// f32 attention.
struct ThreeRuns {
  std::vector<float> kernel, twin, exact;
};
ThreeRuns run_three(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                    const AttentionParams& p) {
  std::vector<float> got(q.size(), 0.0f), twin(q.size(), 0.0f), exact(q.size(), 0.0f);
  ThreadPool pool(2);
  int8dot::attention(q.data(), k.data(), v.data(), got.data(), p, pool);
  scalar::attention_int8_fast(q.data(), k.data(), v.data(), twin.data(), p);
  AttentionParams pe = p;
  pe.precision = MatmulPrecision::Exact;
  scalar::attention(q.data(), k.data(), v.data(), exact.data(), pe);
  return {attention_heads(got, p), attention_heads(twin, p), attention_heads(exact, p)};
}

// Keys that share a large offset per channel (as a projection's bias makes
// them) would spend most of their 8 bits on it; a non-causal call subtracts
// the keys' mean first, which leaves the softmax as it is. Peaked rows
// (queries long and aligned with some keys) stay within 1 % too.
TEST(Int8Attention, KeysWithACommonOffsetAndPeakedRowsStayAccurate) {
  if (!int8dot::attention_usable()) GTEST_SKIP() << "no AVX512-VNNI and AVX512-BF16 on this CPU";
  for (const Shape& sh : {Shape{64, 600, 4, 2, 64, false, 0}, Shape{48, 500, 2, 1, 128, false, 0}}) {
    const AttentionParams p = params(sh);
    auto q = random_floats(sh.nq * p.q_stride, 51, -2, 2);
    auto k = random_floats(sh.nkv * p.kv_stride, 52, -2, 2);
    const auto v = random_floats(sh.nkv * p.kv_stride, 53, -2, 2);
    const auto offset = random_floats(sh.dh, 54, -20, 20);  // per channel, common to every key
    for (int64_t j = 0; j < sh.nkv; ++j)
      for (int64_t h = 0; h < sh.kvh; ++h)
        for (int64_t c = 0; c < sh.dh; ++c) k[j * p.kv_stride + h * sh.dh + c] += offset[c];
    // Half the queries a multiple of a key of theirs: a few keys dominate.
    for (int64_t i = 0; i < sh.nq; i += 2)
      for (int64_t h = 0; h < sh.qh; ++h) {
        const int64_t j = (i * 7) % sh.nkv, kvh = h / (sh.qh / sh.kvh);
        for (int64_t c = 0; c < sh.dh; ++c)
          q[i * p.q_stride + h * sh.dh + c] = 0.3f * (k[j * p.kv_stride + kvh * sh.dh + c] - offset[c]);
      }
    const ThreeRuns r = run_three(q, k, v, p);
    const std::vector<float>& g = r.kernel;
    const std::vector<float>& t = r.twin;
    const std::vector<float>& e = r.exact;
    const double err = testing::rel_l2(g.data(), e.data(), static_cast<int64_t>(e.size()));
    EXPECT_LE(err, 1e-2) << describe(sh);
    EXPECT_LE(testing::rel_l2(g.data(), t.data(), static_cast<int64_t>(t.size())), 1e-5) << describe(sh);
    std::printf("int8 attention, offset keys and peaked rows, %s: relative L2 to exact %.2e\n", describe(sh).c_str(),
                err);
  }
}

// Diffuse rows over many keys, where P in u8 loses most: 4096 keys, and
// three kinds of query row: one key about 2^9 above the 4095 others, whose
// weights (each under 1/510 of that key's, together about ten times it)
// would all round to code 0 against the row's maximum, so P takes each
// block's own; short queries, whose weights spread over every key; and
// random ones. The two diffuse kinds within 1 % relative L2 of exact
// attention (0.81 % and 0.51 % measured; 0.40 % and 0.26 % with bf16 P·V),
// the random rows within 1.25 % (1.01 % measured, 0.79 % with bf16 P·V:
// int8 V and u8 P add about 0.6 % to int8 Q·Kᵀ's error in quadrature); and
// the kernel gives its twin's bits.
TEST(Int8Attention, DiffuseRowsOverManyKeysStayAccurate) {
  if (!int8dot::attention_usable()) GTEST_SKIP() << "no AVX512-VNNI and AVX512-BF16 on this CPU";
  const Shape sh{48, 4096, 2, 1, 64, false, 0};
  const AttentionParams p = params(sh);
  auto q = random_floats(sh.nq * p.q_stride, 61, -2, 2);
  const auto k = random_floats(sh.nkv * p.kv_stride, 62, -2, 2);
  const auto v = random_floats(sh.nkv * p.kv_stride, 63, -2, 2);
  // Row i % 3: 0 one key above the rest (score 0.6·|k_j|² · scale, about
  // 9 in base 2, the others' spread about 1.2), 1 short, 2 as drawn.
  for (int64_t i = 0; i < sh.nq; ++i)
    for (int64_t h = 0; h < sh.qh; ++h)
      for (int64_t c = 0; c < sh.dh; ++c) {
        float& x = q[i * p.q_stride + h * sh.dh + c];
        if (i % 3 == 0) x = 0.6f * k[((i * 131 + h) % sh.nkv) * p.kv_stride + c];
        if (i % 3 == 1) x *= 0.1f;
      }
  const ThreeRuns r = run_three(q, k, v, p);
  const std::vector<float>& g = r.kernel;
  const std::vector<float>& e = r.exact;
  EXPECT_EQ(g, r.twin);
  const int64_t row = sh.qh * sh.dh;
  const char* kinds[] = {"one key above the rest", "short queries", "random queries"};
  for (int kind = 0; kind < 3; ++kind) {
    std::vector<float> gk, ek;
    for (int64_t i = kind; i < sh.nq; i += 3) {
      gk.insert(gk.end(), g.begin() + i * row, g.begin() + (i + 1) * row);
      ek.insert(ek.end(), e.begin() + i * row, e.begin() + (i + 1) * row);
    }
    const double err = testing::rel_l2(gk.data(), ek.data(), static_cast<int64_t>(ek.size()));
    EXPECT_LE(err, kind == 2 ? 1.25e-2 : 1e-2) << kinds[kind];
    std::printf("int8 attention, 4096 keys, %s: relative L2 to exact %.2e\n", kinds[kind], err);
  }
}

// The engine cuts a prompt where it likes, down to single tokens: blocks of
// keys sit at fixed positions, K is not smoothed in causal calls, and each
// query row is computed on its own, so a causal prefill in pieces (each
// piece's queries after the ones before, as q_pos0 says) gives the bits of
// one call, whatever the pieces' lengths and the thread count.
TEST(Int8Attention, PrefillInPiecesGivesTheBitsOfOneCall) {
  if (!int8dot::attention_usable()) GTEST_SKIP() << "no AVX512-VNNI and AVX512-BF16 on this CPU";
  for (int64_t dh : {64, 128}) {
    const AttentionParams p = params({90, 90, 4, 2, dh, true, 0});
    testing::expect_prefill_pieces_give_one_call(kInt8, p, random_floats(p.nq * p.q_stride, 81, -2, 2),
                                                 random_floats(p.nkv * p.kv_stride, 82, -2, 2),
                                                 random_floats(p.nkv * p.kv_stride, 83, -2, 2));
  }
}

// attention() runs it for Fast many-query calls without a causal mask where
// AMX does not, and says so; causal (prefill), Exact calls and decode never.
TEST(Int8Attention, AttentionRunsItForFastNonCausalManyQueriesOnly) {
  AttentionParams p = params({40, 40, 2, 1, 64, false, 0});
  const bool runs = int8dot::attention_usable() && std::string(attention_amx_status()) != "used";
  EXPECT_EQ(std::string(attention_kernel_name(p)) == "tiled, AVX512-VNNI vpdpbusd QKᵀ and PV", runs)
      << attention_kernel_name(p);
  if (runs) {
    const auto q = random_floats(p.nq * p.q_stride, 91, -2, 2);
    const auto k = random_floats(p.nkv * p.kv_stride, 92, -2, 2);
    const auto v = random_floats(p.nkv * p.kv_stride, 93, -2, 2);
    ThreadPool pool(2);
    std::vector<float> a(q.size(), 0.0f), b(q.size(), 0.0f);
    attention(q.data(), k.data(), v.data(), a.data(), p, pool);
    int8dot::attention(q.data(), k.data(), v.data(), b.data(), p, pool);
    EXPECT_EQ(a, b);
  }
  p.precision = MatmulPrecision::Exact;
  EXPECT_EQ(std::string(attention_kernel_name(p)), "tiled, f32 FMA");
  p.precision = MatmulPrecision::Fast;
  p.causal = true;
  EXPECT_EQ(std::string(attention_kernel_name(p)).find("vpdpbusd"), std::string::npos);
  p.causal = false;
  p.nq = 4;
  EXPECT_EQ(std::string(attention_kernel_name(p)).find("vpdpbusd"), std::string::npos);
}

// Without keys there are no channel means to take: a non-causal call gives
// zeros, as a causal one, and so does the twin.
TEST(Int8Attention, ACallWithoutKeysGivesZeros) {
  if (!int8dot::attention_usable()) GTEST_SKIP() << "no AVX512-VNNI and AVX512-BF16 on this CPU";
  const AttentionParams p = params({20, 0, 2, 1, 64, false, 0});
  const auto q = random_floats(p.nq * p.q_stride, 95, -2, 2);
  const std::vector<float> kv(64, 1.0f);
  std::vector<float> got(q.size(), -7.0f), twin(q.size(), -7.0f);
  ThreadPool pool(2);
  int8dot::attention(q.data(), kv.data(), kv.data(), got.data(), p, pool);
  scalar::attention_int8_fast(q.data(), kv.data(), kv.data(), twin.data(), p);
  const std::vector<float> zeros(static_cast<size_t>(p.nq * p.q_heads * p.head_dim), 0.0f);
  EXPECT_EQ(attention_heads(got, p), zeros);
  EXPECT_EQ(attention_heads(twin, p), zeros);
}

TEST(Int8Attention, RefusesHeadSizesItCannotTile) {
  AttentionParams p = params({16, 16, 2, 1, 48, false, 0});
  EXPECT_FALSE(int8dot::attention_fits(p));
  p.head_dim = 288;
  EXPECT_FALSE(int8dot::attention_fits(p));
  p.head_dim = 64;
  EXPECT_TRUE(int8dot::attention_fits(p));
  p.head_dim = 48;
#if !defined(__x86_64__)
  GTEST_SKIP() << "the int8 attention kernel is x86-64 only (vpdpbusd): no call to refuse";
#endif
  std::vector<float> x(static_cast<size_t>(16 * 2 * 288), 0.0f);
  ThreadPool pool(1);
  try {
    int8dot::attention(x.data(), x.data(), x.data(), x.data(), p, pool);
    FAIL() << "head_dim 48 was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim a multiple of 32 up to 256, not 48"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qvl
