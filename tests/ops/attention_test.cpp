// Attention against a naive double-precision softmax(q·kᵀ)·v: causal and
// bidirectional, GQA, strides, query offsets, segments, decode shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/ops.h"
#include "ops/scalar.h"
#include "test_util.h"
#include "util/error.h"
#include "util/formats.h"

namespace qvl {
namespace {

// The values as f16 (the KV cache's f16 type).
std::vector<uint16_t> to_f16(const std::vector<float>& x) {
  std::vector<uint16_t> h(x.size());
  f32_to_f16(x.data(), h.data(), static_cast<int64_t>(x.size()));
  return h;
}

std::vector<double> naive(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                          const AttentionParams& p, int64_t seg_begin, int64_t seg_end) {
  std::vector<double> out(static_cast<size_t>(p.nq * p.out_stride), 0.0);
  const int64_t group = p.q_heads / p.kv_heads;
  for (int64_t i = seg_begin; i < seg_end; ++i)
    for (int64_t h = 0; h < p.q_heads; ++h) {
      int64_t kvh = h / group;
      int64_t lo = seg_end == p.nq && seg_begin == 0 ? 0 : seg_begin;
      int64_t hi = p.causal ? std::min(p.nkv, p.q_pos0 + i + 1) : (seg_end == p.nq && seg_begin == 0 ? p.nkv : seg_end);
      std::vector<double> s;
      double mx = -1e300;
      for (int64_t j = lo; j < hi; ++j) {
        double d = 0;
        for (int64_t c = 0; c < p.head_dim; ++c)
          d += double(q[i * p.q_stride + h * p.head_dim + c]) * k[j * p.kv_stride + kvh * p.head_dim + c];
        s.push_back(d * p.scale);
        mx = std::max(mx, s.back());
      }
      double sum = 0;
      for (auto& e : s) sum += (e = std::exp(e - mx));
      for (int64_t j = lo; j < hi; ++j)
        for (int64_t c = 0; c < p.head_dim; ++c)
          out[i * p.out_stride + h * p.head_dim + c] += s[j - lo] / sum * v[j * p.kv_stride + kvh * p.head_dim + c];
    }
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const AttentionParams& p,
                  int64_t rows, const char* what) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < p.q_heads * p.head_dim; ++c) {
      size_t at = static_cast<size_t>(i * p.out_stride + c);
      ASSERT_NEAR(got[at], want[at], 2e-6 + 2e-5 * std::fabs(want[at])) << what << " row " << i << " col " << c;
    }
}

struct Case {
  int64_t nq, nkv, qh, kvh, d;
  bool causal;
  int64_t q_pos0;
};

TEST(Attention, MatchesNaiveSoftmaxAcrossShapes) {
  ThreadPool pool(0);
  std::vector<Case> cases = {{1, 1, 1, 1, 4, false, 0},     {5, 5, 2, 1, 8, true, 0},    {17, 17, 4, 2, 16, false, 0},
                             {33, 33, 3, 3, 64, true, 0},    {1, 100, 16, 8, 128, true, 99}, {3, 70, 4, 2, 128, true, 67},
                             {65, 65, 2, 2, 72, false, 0},   {40, 40, 2, 1, 80, true, 0},  {7, 130, 4, 1, 32, false, 0},
                             {100, 100, 2, 2, 64, false, 0}, {9, 20, 2, 2, 5, true, 11},   {20, 50, 4, 2, 128, true, 30},
                             {2, 1100, 4, 2, 64, true, 1098}, {3, 700, 2, 1, 32, false, 0}, {1, 1030, 2, 2, 8, true, 600},
                             // several softmax blocks, a partial last key tile, causal rows ending mid-block
                             {200, 200, 2, 2, 64, false, 0}, {40, 300, 4, 2, 64, true, 260}, {97, 97, 2, 1, 128, true, 0},
                             {33, 577, 1, 1, 16, false, 0},
                             // a GQA group size without its own kernel (3), decode and tiled
                             {1, 100, 6, 2, 64, true, 99}, {20, 50, 6, 2, 64, true, 30}};
  uint32_t seed = 1;
  for (auto cs : cases) {
    AttentionParams p;
    p.nq = cs.nq, p.nkv = cs.nkv, p.q_heads = cs.qh, p.kv_heads = cs.kvh, p.head_dim = cs.d;
    p.q_stride = cs.qh * cs.d + 3, p.kv_stride = cs.kvh * cs.d + 1, p.out_stride = cs.qh * cs.d + 2;
    p.scale = 1.0f / std::sqrt(float(cs.d)), p.causal = cs.causal, p.q_pos0 = cs.q_pos0;
    auto q = testing::random_floats(p.nq * p.q_stride, ++seed, -2, 2);
    auto k = testing::random_floats(p.nkv * p.kv_stride, ++seed, -2, 2);
    auto v = testing::random_floats(p.nkv * p.kv_stride, ++seed);
    testing::Misaligned<float> qm(q, 1), km(k, 2), vm(v, 3);
    std::vector<float> out(static_cast<size_t>(p.nq * p.out_stride), 0.0f), twin = out;
    attention(qm.data(), km.data(), vm.data(), out.data(), p, pool);
    auto want = naive(q, k, v, p, 0, p.nq);
    expect_close(out, want, p, p.nq, "attention");
    scalar::attention(q.data(), k.data(), v.data(), twin.data(), p);
    expect_close(twin, want, p, p.nq, "scalar twin");
  }
}

TEST(Attention, SegmentsAttendOnlyWithinThemselves) {
  ThreadPool pool(0);
  AttentionParams p;
  const int64_t starts[] = {0, 16, 16, 45, 109};
  p.nq = p.nkv = 109, p.q_heads = 4, p.kv_heads = 4, p.head_dim = 64;
  p.q_stride = p.kv_stride = p.out_stride = 4 * 64;
  p.scale = 0.125f;
  auto q = testing::random_floats(p.nq * p.q_stride, 1, -2, 2);
  auto k = testing::random_floats(p.nq * p.q_stride, 2, -2, 2);
  auto v = testing::random_floats(p.nq * p.q_stride, 3);
  std::vector<float> out(q.size());
  attention_segments(q.data(), k.data(), v.data(), out.data(), p, starts, 4, pool);
  for (int s = 0; s < 4; ++s) {
    auto want = naive(q, k, v, p, starts[s], starts[s + 1]);
    for (int64_t i = starts[s]; i < starts[s + 1]; ++i)
      for (int64_t c = 0; c < 256; ++c)
        ASSERT_NEAR(out[i * 256 + c], want[i * 256 + c], 2e-6 + 2e-5 * std::fabs(want[i * 256 + c])) << "segment " << s;
  }
}

// The decoder writes the attention output over its queries: out == q must
// give the same bits as a separate output, on the decode (rows) and tiled
// paths, with f32 and f16 K/V.
TEST(Attention, OutputOverTheQueriesEqualsASeparateOutput) {
  ThreadPool pool(2);
  for (const Case cs : {Case{1, 600, 16, 8, 128, true, 599}, Case{7, 130, 4, 1, 32, false, 0},
                        Case{40, 300, 4, 2, 64, true, 260}, Case{97, 97, 2, 1, 72, true, 0}}) {
    AttentionParams p;
    p.nq = cs.nq, p.nkv = cs.nkv, p.q_heads = cs.qh, p.kv_heads = cs.kvh, p.head_dim = cs.d;
    p.q_stride = p.out_stride = cs.qh * cs.d + 4, p.kv_stride = cs.kvh * cs.d;
    p.scale = 1.0f / std::sqrt(float(cs.d)), p.causal = cs.causal, p.q_pos0 = cs.q_pos0;
    const auto q = testing::random_floats(p.nq * p.q_stride, 21, -2, 2);
    const auto k = testing::random_floats(p.nkv * p.kv_stride, 22, -2, 2);
    const auto v = testing::random_floats(p.nkv * p.kv_stride, 23);
    const std::vector<uint16_t> k16 = to_f16(k), v16 = to_f16(v);
    for (bool f16 : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "nq " << cs.nq << (f16 ? " f16" : " f32"));
      std::vector<float> separate(q.size(), 0.0f), inplace = q;
      if (f16) {
        attention(q.data(), k16.data(), v16.data(), separate.data(), p, pool);
        attention(inplace.data(), k16.data(), v16.data(), inplace.data(), p, pool);
      } else {
        attention(q.data(), k.data(), v.data(), separate.data(), p, pool);
        attention(inplace.data(), k.data(), v.data(), inplace.data(), p, pool);
      }
      for (int64_t i = 0; i < p.nq; ++i)
        for (int64_t c = 0; c < p.q_heads * p.head_dim; ++c) {
          const size_t at = static_cast<size_t>(i * p.q_stride + c);
          ASSERT_EQ(inplace[at], separate[at]) << "row " << i << " col " << c;
        }
    }
  }
}

// Prefill in pieces (the engine cuts prompts into chunks of >= 16 tokens
// wherever it likes): a piece of queries [at, at + len) attends to keys
// [0, at + len) with q_pos0 = at, and every row must equal, bit for bit, the
// same row of the whole prompt in one call, whatever the piece's length and
// start; causal, GQA, f32 and f16 K/V, on every target. 300 positions so the
// online softmax spans several key blocks on every target.
TEST(Attention, TiledAttentionRowsIndependentOfChunking) {
  ThreadPool pool(0);
  constexpr int64_t kLen = 300;
  AttentionParams whole;
  whole.nq = whole.nkv = kLen, whole.q_heads = 4, whole.kv_heads = 2, whole.head_dim = 64;
  whole.q_stride = whole.out_stride = 4 * 64 + 4, whole.kv_stride = 2 * 64 + 2;
  whole.scale = 0.125f, whole.causal = true, whole.q_pos0 = 0;
  const auto q = testing::random_floats(kLen * whole.q_stride, 31, -3, 3);
  const auto k = testing::random_floats(kLen * whole.kv_stride, 32, -3, 3);
  const auto v = testing::random_floats(kLen * whole.kv_stride, 33);
  const std::vector<uint16_t> k16 = to_f16(k), v16 = to_f16(v);
  auto run = [&](bool f16, const AttentionParams& p, int64_t at, float* out) {
    if (f16)
      attention(q.data() + at * p.q_stride, k16.data(), v16.data(), out, p, pool);
    else
      attention(q.data() + at * p.q_stride, k.data(), v.data(), out, p, pool);
  };
  auto check = [&](const std::string& target) {
    for (bool f16 : {false, true}) {
      std::vector<float> want(static_cast<size_t>(kLen * whole.out_stride));
      run(f16, whole, 0, want.data());
      for (int64_t chunk : {16, 17, 24, 33, 48, 100}) {
        std::vector<float> got(want.size(), -7.0f);
        for (int64_t at = 0, len = 0; at < kLen; at += len) {
          len = kLen - at - chunk < 16 ? kLen - at : chunk;
          AttentionParams p = whole;
          p.nq = len, p.nkv = at + len, p.q_pos0 = at;
          run(f16, p, at, got.data() + at * p.out_stride);
        }
        for (int64_t i = 0; i < kLen; ++i)
          for (int64_t c = 0; c < whole.q_heads * whole.head_dim; ++c) {
            const size_t at = static_cast<size_t>(i * whole.out_stride + c);
            ASSERT_EQ(got[at], want[at]) << target << (f16 ? " f16" : " f32") << " chunk " << chunk << " row " << i
                                         << " col " << c;
          }
      }
    }
  };
  check("best");
  testing::for_each_target(check);
}

// A prompt piece (AttentionParams::prompt) of any length, down to the one
// token a repeated request recomputes after its cached prefix, gets the bits
// of the same rows in one whole call, in exact and in Fast precision (the
// bf16 kernel where the CPU has one), f32 and f16 K/V; decode pieces of as
// few queries still take the rows kernel.
TEST(Attention, PromptPiecesOfAnyLengthGiveTheBitsOfOneCall) {
  const auto attend = [](auto&&... args) { attention(args...); };
  for (MatmulPrecision precision : {MatmulPrecision::Exact, MatmulPrecision::Fast}) {
    AttentionParams p = testing::attention_params({90, 90, 4, 2, 64, true, 0}, precision);
    p.prompt = true;
    for (int64_t nq : {1, 2, 15}) {
      AttentionParams piece = p;
      piece.nq = nq;
      EXPECT_EQ(std::string(attention_kernel_name(piece)).find("rows"), std::string::npos) << attention_kernel_name(piece);
    }
    const auto q = testing::random_floats(p.nq * p.q_stride, 51, -3, 3);
    const auto k = testing::random_floats(p.nkv * p.kv_stride, 52, -3, 3);
    const auto v = testing::random_floats(p.nkv * p.kv_stride, 53);
    SCOPED_TRACE(matmul_precision_name(precision));
    testing::expect_prefill_pieces_give_one_call(attend, p, q, k, v);
    // f16 K/V: the kernel is handed the cache's halves in place of k and v.
    const std::vector<uint16_t> k16 = to_f16(k), v16 = to_f16(v);
    const auto attend_f16 = [&](const float* qp, const float*, const float*, float* out, const AttentionParams& pp,
                                ThreadPool& pool) { attention(qp, k16.data(), v16.data(), out, pp, pool); };
    testing::expect_prefill_pieces_give_one_call(attend_f16, p, q, k, v);
  }
  AttentionParams decode = testing::attention_params({1, 90, 4, 2, 64, true, 89}, MatmulPrecision::Fast);
  EXPECT_EQ(std::string(attention_kernel_name(decode)), "rows (split-KV), f32 FMA");
}

// Decode attention splits its work by position chunk and by group of kv
// heads, the groups as many as the threads: the output must not depend on the
// thread count, bit for bit, for f32 and f16 K/V, kv heads not a multiple of
// the threads, one and several queries, and contexts of one and several
// chunks; on every target, GQA groups of 1 to 8 and head sizes with and
// without a part short of a whole vector (the scores' transpose-reduce puts
// a varying set of heads in one vector).
TEST(Attention, DecodeRowsIndependentOfThreadCount) {
  struct Shape {
    int64_t qh, kvh, nq, nkv, dh;
  };
  auto check = [&](const std::string& target) {
    for (const Shape sh : {Shape{6, 3, 1, 37, 32}, Shape{16, 8, 1, 300, 32}, Shape{4, 1, 3, 700, 32},
                           Shape{5, 5, 2, 1100, 32}, Shape{16, 8, 1, 150, 128}, Shape{8, 1, 1, 90, 64},
                           Shape{8, 4, 1, 200, 40}, Shape{6, 2, 1, 130, 16}}) {
      AttentionParams p;
      p.nq = sh.nq, p.nkv = sh.nkv, p.q_heads = sh.qh, p.kv_heads = sh.kvh, p.head_dim = sh.dh;
      p.q_stride = p.out_stride = sh.qh * sh.dh + 3, p.kv_stride = sh.kvh * sh.dh + 1;
      p.scale = 0.17f, p.causal = true, p.q_pos0 = sh.nkv - sh.nq;
      const auto q = testing::random_floats(sh.nq * p.q_stride, 41, -3, 3);
      const auto k = testing::random_floats(sh.nkv * p.kv_stride, 42, -3, 3);
      const auto v = testing::random_floats(sh.nkv * p.kv_stride, 43);
      const std::vector<uint16_t> k16 = to_f16(k), v16 = to_f16(v);
      for (bool f16 : {false, true}) {
        std::vector<std::vector<float>> outs;
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          outs.emplace_back(static_cast<size_t>(sh.nq * p.out_stride), -7.0f);
          if (f16)
            attention(q.data(), k16.data(), v16.data(), outs.back().data(), p, pool);
          else
            attention(q.data(), k.data(), v.data(), outs.back().data(), p, pool);
        }
        const auto want = naive(q, k, v, p, 0, sh.nq);
        if (!f16) expect_close(outs[0], want, p, sh.nq, (target + " one thread").c_str());
        for (size_t t = 1; t < outs.size(); ++t)
          for (size_t j = 0; j < outs[0].size(); ++j)
            ASSERT_EQ(outs[t][j], outs[0][j]) << target << (f16 ? " f16" : " f32") << " pool " << t << " heads "
                                              << sh.qh << "/" << sh.kvh << " dh " << sh.dh << " nkv " << sh.nkv
                                              << " at " << j;
      }
    }
  };
  check("best");
  testing::for_each_target(check);
}

TEST(Attention, RejectsBadHeadCounts) {
  ThreadPool pool(1);
  AttentionParams p;
  p.nq = p.nkv = 1, p.q_heads = 3, p.kv_heads = 2, p.head_dim = 4, p.q_stride = 12, p.kv_stride = 8, p.out_stride = 12;
  float buf[16] = {};
  EXPECT_THROW(attention(buf, buf, buf, buf, p, pool), Error);
}

}  // namespace
}  // namespace qvl

namespace qvl {
namespace {

// A batched decode step's attention (attention_batch): streams of different
// lengths, a jump-forward piece of several queries, f32 and f16 K/V, and a
// prompt piece among them (the tiled kernel, alone), each equal bit for bit
// to attention() on that job alone, on 1, 2 and 3 threads, on every target.
TEST(Attention, ABatchOfStreamsGivesEachItsBitsAlone) {
  struct Stream {
    int64_t nq, nkv;
    bool f16, prompt;
  };
  const Stream streams[] = {{1, 1, false, false},   {1, 77, true, false},   {1, 300, false, false},
                            {3, 129, true, false},  {1, 1000, true, false}, {5, 64, false, false},
                            {20, 40, false, true},  {1, 513, false, false}};
  AttentionParams base;
  base.q_heads = 8, base.kv_heads = 2, base.head_dim = 64;
  base.q_stride = base.out_stride = 8 * 64, base.kv_stride = 2 * 64;
  base.scale = 0.125f, base.causal = true;
  std::vector<std::vector<float>> qs, ks, vs;
  std::vector<std::vector<uint16_t>> k16s, v16s;
  uint32_t seed = 70;
  for (const Stream& s : streams) {
    qs.push_back(testing::random_floats(s.nq * base.q_stride, ++seed, -3, 3));
    ks.push_back(testing::random_floats(s.nkv * base.kv_stride, ++seed, -3, 3));
    vs.push_back(testing::random_floats(s.nkv * base.kv_stride, ++seed));
    k16s.push_back(to_f16(ks.back()));
    v16s.push_back(to_f16(vs.back()));
  }
  auto check = [&](const std::string& target) {
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (bool with_prompt : {false, true}) {
        SCOPED_TRACE(::testing::Message() << target << ", " << threads << " threads"
                                          << (with_prompt ? ", a prompt piece" : ""));
        std::vector<AttentionJob> jobs;
        std::vector<std::vector<float>> batched, alone;
        for (size_t i = 0; i < std::size(streams); ++i) {
          const Stream& s = streams[i];
          if (s.prompt && !with_prompt) continue;
          AttentionParams p = base;
          p.nq = s.nq, p.nkv = s.nkv, p.q_pos0 = s.nkv - s.nq, p.prompt = s.prompt;
          batched.push_back(qs[i]);  // in place, as the decoder calls it
          alone.push_back(qs[i]);
          if (s.f16) attention(alone.back().data(), k16s[i].data(), v16s[i].data(), alone.back().data(), p, pool);
          else attention(alone.back().data(), ks[i].data(), vs[i].data(), alone.back().data(), p, pool);
          AttentionJob j;
          j.p = p;
          if (s.f16) j.k16 = k16s[i].data(), j.v16 = v16s[i].data();
          else j.k = ks[i].data(), j.v = vs[i].data();
          jobs.push_back(j);
        }
        for (size_t i = 0; i < jobs.size(); ++i) jobs[i].q = jobs[i].out = batched[i].data();
        attention_batch(jobs, pool);
        for (size_t i = 0; i < jobs.size(); ++i)
          for (size_t c = 0; c < alone[i].size(); ++c)
            ASSERT_EQ(batched[i][c], alone[i][c]) << "job " << i << " at " << c;
      }
    }
  };
  check("best");
  testing::for_each_target(check);
  ThreadPool pool(1);
  AttentionJob neither;  // K/V neither f32 nor f16
  neither.p = base;
  neither.p.nq = neither.p.nkv = 1;
  std::vector<float> q(base.q_stride);
  neither.q = neither.out = q.data();
  EXPECT_THROW(attention_batch({&neither, 1}, pool), Error);
}

}  // namespace
}  // namespace qvl
