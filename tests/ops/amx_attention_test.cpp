// The AMX attention kernel (emulated on every AVX-512 CPU, on the unit where
// AMX runs) against the scalar twin: exact to f32 rounding, fast to bf16's,
// across head sizes, odd query and key counts, causal offsets, GQA, strides,
// misaligned pointers, f16 K/V and thread counts.
#include "ops/amx_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ops/bf16_attention.h"
#include "ops/cpu_features.h"
#include "ops/ops.h"
#include "ops/scalar.h"
#include "test_util.h"
#include "util/error.h"

namespace qvl {
namespace {

using testing::Misaligned;
using testing::random_floats;

using Shape = testing::AttentionShape;
AttentionParams params(const Shape& s, MatmulPrecision precision) { return testing::attention_params(s, precision); }

std::vector<uint16_t> to_f16(const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f32_to_f16(x[i]);
  return out;
}
std::vector<float> widened(const std::vector<uint16_t>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = f16_to_f32(x[i]);
  return out;
}

using testing::attention_heads;

using Kernel = void (*)(const float*, const uint16_t*, const uint16_t*, float*, const AttentionParams&, ThreadPool&);

// Exact within twice the f32 attention tests' bound (2e-6 + 2e-5 |want|
// against a double-precision reference; the twin sums in f32 too, in
// other orders), fast within 1 % (relative L2: bf16 q, k, p and v). Threads change nothing, bit for bit; f16 K/V give
// the bits of the same K/V widened.
void expect_kernel_right(Kernel kernel) {
  const Shape shapes[] = {{16, 16, 2, 1, 32, false, 0},    {37, 70, 4, 2, 64, true, 33},  {50, 50, 3, 3, 96, true, 0},
                          {20, 200, 8, 2, 128, true, 180}, {33, 45, 2, 2, 256, false, 0}, {17, 9, 2, 1, 64, false, 0}};
  for (const Shape& sh : shapes)
    for (MatmulPrecision precision : {MatmulPrecision::Exact, MatmulPrecision::Fast}) {
      const AttentionParams p = params(sh, precision);
      const std::string what = "nq " + std::to_string(sh.nq) + " nkv " + std::to_string(sh.nkv) + " dh " +
                               std::to_string(sh.dh) + (precision == MatmulPrecision::Fast ? " fast" : " exact");
      const auto q = random_floats(sh.nq * p.q_stride, 61, -2, 2);
      const auto k16 = to_f16(random_floats(sh.nkv * p.kv_stride, 62, -2, 2));
      const auto v16 = to_f16(random_floats(sh.nkv * p.kv_stride, 63));
      const auto k = widened(k16), v = widened(v16);
      std::vector<float> want(q.size(), 0.0f);
      scalar::attention(q.data(), k.data(), v.data(), want.data(), p);
      std::vector<std::vector<float>> outs;
      for (int threads : {1, 3}) {
        ThreadPool pool(threads);
        Misaligned<float> mq(q, 1);
        Misaligned<uint16_t> mk(k16, 3), mv(v16, 5);
        Misaligned<float> mo(std::vector<float>(q.size(), -7.0f), 2);
        kernel(mq.data(), mk.data(), mv.data(), mo.data(), p, pool);
        outs.push_back(attention_heads(mo.copy(q.size()), p));
      }
      const std::vector<float> ref = attention_heads(want, p);
      const std::vector<float>& got = outs[0];
      ASSERT_EQ(outs[1], got) << what << ": 3 threads differ from 1";
      if (precision == MatmulPrecision::Exact) {
        for (size_t i = 0; i < ref.size(); ++i)
          ASSERT_NEAR(got[i], ref[i], 4e-6 + 4e-5 * std::fabs(ref[i])) << what << " at " << i;
      } else {
        EXPECT_LE(testing::rel_l2(got.data(), ref.data(), static_cast<int64_t>(ref.size())), 1e-2) << what;
      }
    }
}

void emulated_f16(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                  ThreadPool& pool) {
  amx::attention_emulated(q, k, v, out, p, pool);
}
void on_unit_f16(const float* q, const uint16_t* k, const uint16_t* v, float* out, const AttentionParams& p,
                 ThreadPool& pool) {
  amx::attention(q, k, v, out, p, pool);
}

TEST(AmxAttention, EmulatedKernelIsExactToF32RoundingAndFastToBf16) {
  if (!cpu_features().avx512) GTEST_SKIP() << "the kernel's softmax runs on AVX-512, which this CPU lacks";
  expect_kernel_right(emulated_f16);
}

TEST(AmxAttention, KernelOnTheUnitIsExactToF32RoundingAndFastToBf16) {
  if (!cpu_features().amx_bf16) GTEST_SKIP() << "this CPU has no AMX-BF16 (grep amx_bf16 /proc/cpuinfo)";
  ASSERT_TRUE(amx::attention_usable()) << amx::attention_status();
  expect_kernel_right(on_unit_f16);
}

// The check that admits the unit (attention_status) accepts a unit adding
// in the SDM's other order, and refuses one that loses a product per
// instruction.
TEST(AmxAttention, SelfCheckAcceptsAnotherAdditionOrderAndRefusesALostProduct) {
  if (!cpu_features().avx512) GTEST_SKIP() << "the kernel's softmax runs on AVX-512, which this CPU lacks";
  EXPECT_EQ(amx::attention_check_excess(amx::Bf16Order::PairByPair), 0.0);
  const double other_order = amx::attention_check_excess(amx::Bf16Order::EvenOdd);
  EXPECT_GT(other_order, 0.0);
  EXPECT_LT(other_order, 1.0);
  const double lost = amx::attention_check_excess(amx::Bf16Order::LosesAProduct);
  EXPECT_GT(lost, 1.0);
  std::printf("attention self-check, as a multiple of its bound: other order %.3g, lost product %.3g\n", other_order,
              lost);
}

// f16 K/V are widened exactly: the bits of the same K/V given in f32.
TEST(AmxAttention, F16KeysAndValuesGiveTheBitsOfTheirF32Widening) {
  if (!cpu_features().avx512) GTEST_SKIP() << "the kernel's softmax runs on AVX-512, which this CPU lacks";
  const AttentionParams p = params({40, 60, 4, 2, 64, true, 20}, MatmulPrecision::Exact);
  const auto q = random_floats(p.nq * p.q_stride, 71, -2, 2);
  const auto k16 = to_f16(random_floats(p.nkv * p.kv_stride, 72, -2, 2));
  const auto v16 = to_f16(random_floats(p.nkv * p.kv_stride, 73));
  ThreadPool pool(2);
  std::vector<float> a(q.size(), 0.0f), b(q.size(), 0.0f);
  amx::attention_emulated(q.data(), k16.data(), v16.data(), a.data(), p, pool);
  amx::attention_emulated(q.data(), widened(k16).data(), widened(v16).data(), b.data(), p, pool);
  EXPECT_EQ(a, b);
}

// A prompt prefilled in pieces gets the bits of one whole call: key blocks
// start at fixed positions, and each query row's result is its own.
TEST(AmxAttention, PrefillInPiecesGivesTheBitsOfOneCall) {
  if (!cpu_features().avx512) GTEST_SKIP() << "the kernel's softmax runs on AVX-512, which this CPU lacks";
  AttentionParams whole = params({70, 70, 4, 2, 64, true, 0}, MatmulPrecision::Exact);
  const auto q = random_floats(whole.nq * whole.q_stride, 81, -2, 2);
  const auto k = random_floats(whole.nkv * whole.kv_stride, 82, -2, 2);
  const auto v = random_floats(whole.nkv * whole.kv_stride, 83);
  ThreadPool pool(2);
  std::vector<float> one(q.size(), 0.0f), pieces(q.size(), 0.0f);
  amx::attention_emulated(q.data(), k.data(), v.data(), one.data(), whole, pool);
  for (const auto& [begin, end] : {std::pair<int64_t, int64_t>{0, 23}, {23, 41}, {41, 70}}) {
    AttentionParams piece = whole;
    piece.nq = end - begin, piece.nkv = end, piece.q_pos0 = begin;
    amx::attention_emulated(q.data() + begin * whole.q_stride, k.data(), v.data(),
                            pieces.data() + begin * whole.out_stride, piece, pool);
  }
  EXPECT_EQ(attention_heads(one, whole), attention_heads(pieces, whole));
}

// No keys (a call with nkv 0): every output zero, emulated, on the unit,
// and in the AVX512-BF16 kernel that shares its steps, for Exact and Fast.
TEST(AmxAttention, ACallWithoutKeysGivesZeros) {
  if (!cpu_features().avx512) GTEST_SKIP() << "the kernel's softmax runs on AVX-512, which this CPU lacks";
  for (MatmulPrecision precision : {MatmulPrecision::Exact, MatmulPrecision::Fast}) {
    const AttentionParams p = params({20, 0, 2, 1, 64, false, 0}, precision);
    const auto q = random_floats(p.nq * p.q_stride, 97, -2, 2);
    const std::vector<float> kv(64, 1.0f);
    const std::vector<float> zeros(static_cast<size_t>(p.nq * p.q_heads * p.head_dim), 0.0f);
    ThreadPool pool(2);
    std::vector<float> got(q.size(), -7.0f);
    amx::attention_emulated(q.data(), kv.data(), kv.data(), got.data(), p, pool);
    EXPECT_EQ(attention_heads(got, p), zeros);
    if (amx::attention_usable()) {
      std::fill(got.begin(), got.end(), -7.0f);
      amx::attention(q.data(), kv.data(), kv.data(), got.data(), p, pool);
      EXPECT_EQ(attention_heads(got, p), zeros);
    }
    if (precision == MatmulPrecision::Fast && bf16dot::attention_usable()) {
      std::fill(got.begin(), got.end(), -7.0f);
      bf16dot::attention(q.data(), kv.data(), kv.data(), got.data(), p, pool);
      EXPECT_EQ(attention_heads(got, p), zeros);
    }
  }
}

TEST(AmxAttention, RefusesHeadSizesItCannotTile) {
  AttentionParams p = params({16, 16, 2, 1, 48, false, 0}, MatmulPrecision::Exact);
  EXPECT_FALSE(amx::attention_fits(p));
  p.head_dim = 64;
  EXPECT_TRUE(amx::attention_fits(p));
  p.head_dim = 288;
  EXPECT_FALSE(amx::attention_fits(p));
  if (!cpu_features().avx512) return;
  p = params({16, 16, 2, 1, 48, false, 0}, MatmulPrecision::Exact);
  std::vector<float> buf(static_cast<size_t>(16 * p.q_stride), 0.5f);
  ThreadPool pool(1);
  try {
    amx::attention_emulated(buf.data(), buf.data(), buf.data(), buf.data(), p, pool);
    FAIL() << "head_dim 48 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head_dim"), std::string::npos) << e.what();
  }
}

// attention() runs on the unit exactly where it is usable.
TEST(AmxAttention, AttentionUsesTheUnitExactlyWhereItRuns) {
  const std::string status = amx::attention_status();
  if (!cpu_features().amx_bf16) {
    EXPECT_NE(status, "used");
    EXPECT_FALSE(amx::attention_usable());
    return;
  }
  const AttentionParams p = params({40, 60, 4, 2, 64, true, 20}, MatmulPrecision::Fast);
  const auto q = random_floats(p.nq * p.q_stride, 91, -2, 2);
  const auto k = random_floats(p.nkv * p.kv_stride, 92, -2, 2);
  const auto v = random_floats(p.nkv * p.kv_stride, 93);
  ThreadPool pool(2);
  std::vector<float> got(q.size(), 0.0f), unit(q.size(), 0.0f);
  attention(q.data(), k.data(), v.data(), got.data(), p, pool);
  if (amx::attention_usable()) {
    amx::attention(q.data(), k.data(), v.data(), unit.data(), p, pool);
    EXPECT_EQ(got, unit);
  }
}

}  // namespace
}  // namespace qvl
