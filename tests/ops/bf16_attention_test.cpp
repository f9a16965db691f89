// The AVX512-BF16 attention kernel against its specification, the AMX
// kernel's Fast precision (run emulated, amx::attention_emulated), and
// against exact f32 attention: across head sizes, odd query and key counts,
// causal offsets, GQA, strides, misaligned pointers, f16 K/V and thread
// counts; and prefill cut into pieces gives the bits of one call.
#include "ops/bf16_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/amx_attention.h"
#include "ops/int8_attention.h"
#include "ops/ops.h"
#include "ops/scalar.h"
#include "test_util.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_floats;

using Shape = testing::AttentionShape;
using testing::attention_heads;
AttentionParams params(const Shape& s) { return testing::attention_params(s, MatmulPrecision::Fast); }
const auto kBf16 = [](auto&&... args) { bf16dot::attention(args...); };

const Shape kShapes[] = {{16, 16, 2, 1, 32, false, 0},    {37, 70, 4, 2, 64, true, 33},  {50, 50, 3, 3, 96, true, 0},
                         {20, 200, 8, 2, 128, true, 180}, {33, 45, 2, 2, 256, false, 0}, {17, 9, 2, 1, 64, false, 0},
                         {100, 300, 16, 16, 64, false, 0}};

// Against the specification, each output within what two orders of f32
// addition can make of it (the bound amx_attention.cpp's self-check derives:
// a score sums dh products, so any order is within dh·2^-24·Σ|q·k| of
// exact, Higham eq. 4.4; a score off by δ (base 2) moves the output by at
// most 2·ln 2·δ·max|v|; and a difference may flip a weight's bf16 rounding,
// 2·2^-8·max|v| in all). Against exact f32 attention, relative L2 within
// 1 % (bf16 q, k, p and v: 2^-9 each). Thread counts change nothing, bit for
// bit, and f16 K/V give the bits of the same values widened.
TEST(Bf16Attention, MatchesTheAmxFastSpecificationAndExactAttention) {
  if (!bf16dot::attention_usable()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  for (const Shape& sh : kShapes) {
    const AttentionParams p = params(sh);
    const std::string what = "nq " + std::to_string(sh.nq) + " nkv " + std::to_string(sh.nkv) + " dh " +
                             std::to_string(sh.dh) + " heads " + std::to_string(sh.qh) + "/" + std::to_string(sh.kvh);
    constexpr double kMaxAbs = 2, kLn2 = 0.6931471805599453;
    const auto q = random_floats(sh.nq * p.q_stride, 71, -2, 2);
    const auto k = random_floats(sh.nkv * p.kv_stride, 72, -2, 2);
    const auto v = random_floats(sh.nkv * p.kv_stride, 73, -2, 2);
    std::vector<uint16_t> k16(k.size()), v16(v.size());
    for (size_t i = 0; i < k.size(); ++i) k16[i] = f32_to_f16(k[i]), v16[i] = f32_to_f16(v[i]);
    std::vector<float> kw(k.size()), vw(v.size());
    for (size_t i = 0; i < k.size(); ++i) kw[i] = f16_to_f32(k16[i]), vw[i] = f16_to_f32(v16[i]);

    ThreadPool one(1);
    std::vector<float> spec(q.size(), 0.0f), exact(q.size(), 0.0f);
    amx::attention_emulated(q.data(), k.data(), v.data(), spec.data(), p, one);
    AttentionParams pe = p;
    pe.precision = MatmulPrecision::Exact;
    scalar::attention(q.data(), k.data(), v.data(), exact.data(), pe);

    std::vector<std::vector<float>> outs;
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      Misaligned<float> mq(q, 1), mk(k, 3), mv(v, 5), mo(std::vector<float>(q.size(), -7.0f), 2);
      bf16dot::attention(mq.data(), mk.data(), mv.data(), mo.data(), p, pool);
      outs.push_back(mo.copy(q.size()));
    }
    ASSERT_EQ(outs[1], outs[0]) << what << ": 3 threads differ from 1";
    const std::vector<float> got = attention_heads(outs[0], p), want = attention_heads(spec, p), ref = attention_heads(exact, p);
    const double score = 2 * double(sh.dh) * 0x1p-24 * p.scale / kLn2 * double(sh.dh) * kMaxAbs * kMaxAbs;
    const double bound = 2 * kLn2 * score * kMaxAbs + 2 * 0x1p-8 * kMaxAbs;
    double worst = 0;
    size_t beyond_order = 0;  // outputs further off than f32 addition orders alone make them (a flipped rounding)
    for (size_t i = 0; i < got.size(); ++i) {
      const double diff = std::fabs(got[i] - want[i]);
      ASSERT_LE(diff, bound) << what << " at " << i << ": " << got[i] << " vs " << want[i];
      worst = std::max(worst, diff);
      beyond_order += diff > 2 * kLn2 * score * kMaxAbs;
    }
    EXPECT_LE(beyond_order, got.size() / 100) << what;
    EXPECT_LE(testing::rel_l2(got.data(), ref.data(), static_cast<int64_t>(ref.size())), 1e-2) << what;
    std::printf("bf16 attention %s: worst difference from the specification %.2e (bound %.2e)\n", what.c_str(), worst,
                bound);

    testing::expect_f16_kv_gives_widened_bits(kBf16, p, q, k16, v16, kw, vw, what);
  }
}

// The engine cuts a prompt where it likes: blocks of keys sit at fixed
// positions and each query row is computed on its own, so a causal prefill
// in pieces (each piece's queries after the ones before, as q_pos0 says)
// gives the bits of one call.
TEST(Bf16Attention, PrefillInPiecesGivesTheBitsOfOneCall) {
  if (!bf16dot::attention_usable()) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  for (int64_t dh : {64, 128}) {
    const AttentionParams p = params({90, 90, 4, 2, dh, true, 0});
    testing::expect_prefill_pieces_give_one_call(kBf16, p, random_floats(p.nq * p.q_stride, 81, -2, 2),
                                                 random_floats(p.nkv * p.kv_stride, 82, -2, 2),
                                                 random_floats(p.nkv * p.kv_stride, 83, -2, 2));
  }
}

// attention() runs it for Fast many-query calls where AMX does not, and
// the int8 kernel (int8_attention.h) does not (it takes non-causal calls
// where the CPU has VNNI), and says so; Exact calls and decode never.
TEST(Bf16Attention, AttentionRunsItForFastManyQueriesOnly) {
  AttentionParams p = params({40, 40, 2, 1, 64, true, 0});
  const bool runs = bf16dot::attention_usable() && std::string(attention_amx_status()) != "used";
  EXPECT_EQ(std::string(attention_kernel_name(p)) == "tiled, AVX512-BF16 vdpbf16ps, bf16 inputs", runs)
      << attention_kernel_name(p);
  const auto q = random_floats(p.nq * p.q_stride, 91, -2, 2);
  const auto k = random_floats(p.nkv * p.kv_stride, 92, -2, 2);
  const auto v = random_floats(p.nkv * p.kv_stride, 93, -2, 2);
  ThreadPool pool(2);
  if (runs) {
    std::vector<float> a(q.size(), 0.0f), b(q.size(), 0.0f);
    attention(q.data(), k.data(), v.data(), a.data(), p, pool);
    bf16dot::attention(q.data(), k.data(), v.data(), b.data(), p, pool);
    EXPECT_EQ(a, b);
  }
  p.causal = false;
  EXPECT_EQ(std::string(attention_kernel_name(p)) == "tiled, AVX512-BF16 vdpbf16ps, bf16 inputs",
            runs && !int8dot::attention_usable())
      << attention_kernel_name(p);
  p.precision = MatmulPrecision::Exact;
  EXPECT_EQ(std::string(attention_kernel_name(p)), "tiled, f32 FMA");
  p.precision = MatmulPrecision::Fast;
  p.nq = 4;
  EXPECT_EQ(std::string(attention_kernel_name(p)).find("vdpbf16ps"), std::string::npos);
}

TEST(Bf16Attention, RefusesHeadSizesItCannotTile) {
  AttentionParams p = params({16, 16, 2, 1, 48, false, 0});
  EXPECT_FALSE(bf16dot::attention_fits(p));
  p.head_dim = 288;
  EXPECT_FALSE(bf16dot::attention_fits(p));
  p.head_dim = 64;
  EXPECT_TRUE(bf16dot::attention_fits(p));
}

}  // namespace
}  // namespace qvl
