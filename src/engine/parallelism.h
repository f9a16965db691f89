// How many sequences `qvl serve` decodes together when --parallel is not
// given, the KV capacity they share when --ctx-size is not given, and how
// many pages of one document job are in flight at once (docs/deploy.md,
// "Parallel sequences").
//
// Decode reads every weight once per step whatever the number of sequences
// in it (TextDecoder::forward_batch), so sequences that decode together get
// their tokens for nearly the price of one: the default is as many as the
// cores can still feed (kSequencesPerCore each, at most kMaxSequences) and
// the memory holds. Each sequence keeps the context a lone request has
// (sequence_tokens, --ctx-size's default): a document page (~1,000 image
// tokens) and a long answer fit in every slot, so a larger default never
// shrinks what one request may hold. --ctx-size stays what it always was, the
// KV capacity shared by all sequences: given, it bounds the default to the
// sequences it holds at sequence_tokens each (8192 alone: one, as before).
#pragma once

#include <cstdint>
#include <optional>

#include "engine/engine.h"

namespace qvl {

// Sequences per core that batched decode still turns into tokens: past it a
// step's arithmetic, not the weights' bytes, sets its time.
inline constexpr int kSequencesPerCore = 4;
// The default never exceeds it: the rows for which a bf16 or f32 matmul keeps
// each row's bits (matmul_row_exact_rows), so one pass serves them all.
inline constexpr int kMaxSequences = 8;

// What the choice is made from. Every field is a fact of the model, the
// machine or the command line; nothing is measured.
struct MemoryFacts {
  uint64_t kv_bytes_per_token = 0;  // K and V of one position over every layer, in the KV type
  int64_t sequence_tokens = 8192;   // the context each sequence keeps (a lone request's)
  // --memory-budget when given: the KV caches and media together
  // (media/admission.h); unset: the machine's memory below.
  std::optional<uint64_t> memory_budget;
  uint64_t media_bytes = 0;    // what decoded media keeps beside the KV caches (the image budget)
  uint64_t machine_bytes = 0;  // physical memory (machine_memory_bytes)
  uint64_t weights_bytes = 0;  // the weights in their loaded format
  uint64_t page_bytes = 0;     // one rendered document page, held until preprocessed
  // Another model served beside this one (serve --rerank-model): its weights
  // on the machine, and its one sequence's KV, which comes out of the same
  // room (and budget) as these sequences'.
  uint64_t companion_weights_bytes = 0, companion_kv_bytes = 0;
};

// What the command line fixed; unset fields are chosen.
struct ParallelismAsked {
  std::optional<int> sequences;    // --parallel
  std::optional<int64_t> ctx_size;  // --ctx-size
};

struct Parallelism {
  int sequences = 1;     // slots: sequences generated at once
  int64_t ctx_size = 0;  // KV capacity over all of them (EngineParams::ctx_size)
  int page_window = 2;   // pages of one document job claimed at once (JobRunner)
};

// sequences: as asked, else min(kSequencesPerCore × cores, kMaxSequences,
// what the KV room holds at sequence_tokens each, what a given --ctx-size
// holds at sequence_tokens each), at least 1. The KV room is the budget less
// the media's share when a budget is given, else half of what the machine
// has beside the weights and the media (the other half: vision activations,
// the OS, the page cache). ctx_size: as asked, else sequences ×
// sequence_tokens. page_window: every sequence busy with a page and the next
// page prepared, within what the image budget holds of rendered pages (at
// least 2: one running, one waiting).
Parallelism choose_parallelism(const MemoryFacts& facts, int cores, const ParallelismAsked& asked = {});

// The facts for `params` (model_dir and weights resolved) on this machine:
// the model's KV bytes per token in params.resolved_kv_type(), its weights'
// footprint in their format, physical memory, and the budget as given.
MemoryFacts memory_facts(const EngineParams& params, std::optional<uint64_t> memory_budget, uint64_t media_bytes);

}  // namespace qvl
