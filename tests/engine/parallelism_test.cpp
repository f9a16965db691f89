// The rule that picks qvl serve's parallel sequences, their shared context
// and a document's pages in flight (engine/parallelism.h), on facts given
// here: never this machine's.
#include <gtest/gtest.h>

#include "engine/parallelism.h"

namespace qvl {
namespace {

constexpr uint64_t GiB = uint64_t{1} << 30, MiB = uint64_t{1} << 20;

// Qwen3-VL-2B: 28 layers x 8 KV heads x 128 x K and V, f16 (q8/q4 weights).
constexpr uint64_t k2bF16 = 2 * 28 * 8 * 128 * 2;  // 112 KiB per token: 896 MiB per 8192-token sequence

MemoryFacts machine(uint64_t memory, uint64_t weights, uint64_t kv_per_token = k2bF16) {
  MemoryFacts f;
  f.kv_bytes_per_token = kv_per_token;
  f.sequence_tokens = 8192;
  f.media_bytes = GiB;
  f.machine_bytes = memory;
  f.weights_bytes = weights;
  f.page_bytes = 48 * MiB;  // a 4096 x 4096 RGB page
  return f;
}

TEST(Parallelism, CoresSetTheDefaultWhenMemoryIsAmple) {
  const MemoryFacts f = machine(64 * GiB, 2 * GiB);
  EXPECT_EQ(choose_parallelism(f, 1).sequences, 4);
  EXPECT_EQ(choose_parallelism(f, 2).sequences, 8);
  EXPECT_EQ(choose_parallelism(f, 32).sequences, kMaxSequences);
}

TEST(Parallelism, EverySequenceKeepsALoneRequestsContext) {
  const Parallelism p = choose_parallelism(machine(64 * GiB, 2 * GiB), 2);
  EXPECT_EQ(p.ctx_size, 8 * 8192);
  // A page (~1,000 image tokens) and a 500-token answer fit every slot.
  EXPECT_GE(p.ctx_size / p.sequences, 1000 + 500);
}

TEST(Parallelism, MemoryBesideTheWeightsBoundsTheSequences) {
  // (16 GiB - 2 GiB weights - 1 GiB media) / 2 = 6.5 GiB: seven 896 MiB sequences.
  EXPECT_EQ(choose_parallelism(machine(16 * GiB, 2 * GiB), 4).sequences, 7);
  // f32 KV (bf16 weights, 4.3 GB): (16 - 4.3 - 1) / 2 GiB over 1.75 GiB each.
  EXPECT_EQ(choose_parallelism(machine(16 * GiB, 4300 * MiB, 2 * k2bF16), 4).sequences, 3);
  // Too little for one full sequence still serves one.
  const Parallelism small = choose_parallelism(machine(4 * GiB, 2 * GiB), 4);
  EXPECT_EQ(small.sequences, 1);
  EXPECT_EQ(small.ctx_size, 8192);
}

// serve --rerank-model: the reranker's weights and its one sequence come
// out of the room first.
TEST(Parallelism, ACompanionModelTakesItsShareFirst) {
  MemoryFacts f = machine(16 * GiB, 2 * GiB);
  f.companion_weights_bytes = 2 * GiB;
  f.companion_kv_bytes = 896 * MiB;
  // (16 - 2 - 2 - 1) / 2 = 5.5 GiB, less 896 MiB: five 896 MiB sequences (seven alone).
  EXPECT_EQ(choose_parallelism(f, 4).sequences, 5);
  f.memory_budget = 4 * GiB;  // 3 GiB beside the media, less 896 MiB: two (three alone)
  EXPECT_EQ(choose_parallelism(f, 8).sequences, 2);
}

TEST(Parallelism, AGivenBudgetBoundsThemInsteadOfTheMachine) {
  MemoryFacts f = machine(64 * GiB, 2 * GiB);
  f.memory_budget = 4 * GiB;  // 3 GiB beside the media's 1 GiB: three sequences
  EXPECT_EQ(choose_parallelism(f, 8).sequences, 3);
  // The media keep at most a quarter of a small budget: 12 MiB of 16 MiB
  // for KV of 2 KiB per token holds 6,144 tokens, under one sequence.
  f.kv_bytes_per_token = 2048;
  f.memory_budget = 16 * MiB;
  EXPECT_EQ(choose_parallelism(f, 8).sequences, 1);
  f.memory_budget = 64 * MiB;  // 48 MiB: three 16 MiB sequences
  EXPECT_EQ(choose_parallelism(f, 8).sequences, 3);
}

TEST(Parallelism, AGivenContextIsSharedAtALoneRequestsSize) {
  const MemoryFacts f = machine(64 * GiB, 2 * GiB);
  ParallelismAsked asked;
  asked.ctx_size = 8192;  // the old default: one sequence, as before
  Parallelism p = choose_parallelism(f, 8, asked);
  EXPECT_EQ(p.sequences, 1);
  EXPECT_EQ(p.ctx_size, 8192);
  asked.ctx_size = 40000;
  p = choose_parallelism(f, 8, asked);
  EXPECT_EQ(p.sequences, 4);
  EXPECT_EQ(p.ctx_size, 40000);
  asked.ctx_size = 1000;  // under one sequence's context: one, with what was given
  p = choose_parallelism(f, 8, asked);
  EXPECT_EQ(p.sequences, 1);
  EXPECT_EQ(p.ctx_size, 1000);
}

TEST(Parallelism, AGivenParallelIsKept) {
  ParallelismAsked asked;
  asked.sequences = 3;
  Parallelism p = choose_parallelism(machine(4 * GiB, 2 * GiB), 1, asked);
  EXPECT_EQ(p.sequences, 3);
  EXPECT_EQ(p.ctx_size, 3 * 8192);  // each its own 8192 when --ctx-size is not given
  asked.ctx_size = 6000;
  p = choose_parallelism(machine(4 * GiB, 2 * GiB), 1, asked);
  EXPECT_EQ(p.sequences, 3);
  EXPECT_EQ(p.ctx_size, 6000);  // shared, as --ctx-size always was
}

TEST(Parallelism, EverySequenceGetsAPageAndOneMoreWaits) {
  EXPECT_EQ(choose_parallelism(machine(64 * GiB, 2 * GiB), 2).page_window, 9);
  EXPECT_EQ(choose_parallelism(machine(4 * GiB, 2 * GiB), 2).page_window, 2);  // one running, one waiting
  // Rendered pages the image budget cannot hold at once are not claimed.
  MemoryFacts f = machine(64 * GiB, 2 * GiB);
  f.page_bytes = 256 * MiB;  // four in 1 GiB
  EXPECT_EQ(choose_parallelism(f, 2).page_window, 4);
}

}  // namespace
}  // namespace qvl
