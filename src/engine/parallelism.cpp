#include "engine/parallelism.h"

#include <algorithm>

#include "io/model_config.h"
#include "model/default_weights.h"
#include "model/weight_footprint.h"

namespace qvl {
namespace {

uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

// Bytes the KV caches may take: with a budget, what it leaves beside the
// media's share (at most a quarter of it, so a small budget is not all
// media); without, half of what the machine has beside weights and media.
// A companion model's sequence comes out of it either way.
uint64_t kv_room(const MemoryFacts& f) {
  if (f.memory_budget)
    return minus(minus(*f.memory_budget, std::min(f.media_bytes, *f.memory_budget / 4)), f.companion_kv_bytes);
  return minus(minus(f.machine_bytes, f.weights_bytes + f.companion_weights_bytes + f.media_bytes) / 2,
               f.companion_kv_bytes);
}

}  // namespace

Parallelism choose_parallelism(const MemoryFacts& facts, int cores, const ParallelismAsked& asked) {
  const int64_t per_sequence = std::max<int64_t>(1, facts.sequence_tokens);
  Parallelism p;
  if (asked.sequences) {
    p.sequences = *asked.sequences;
  } else {
    int64_t n = std::min<int64_t>(int64_t{kSequencesPerCore} * std::max(1, cores), kMaxSequences);
    if (asked.ctx_size) {
      n = std::min(n, *asked.ctx_size / per_sequence);
    } else {
      const uint64_t sequence_bytes = std::max<uint64_t>(1, facts.kv_bytes_per_token * uint64_t(per_sequence));
      n = std::min<int64_t>(n, static_cast<int64_t>(std::min<uint64_t>(kv_room(facts) / sequence_bytes, kMaxSequences)));
    }
    p.sequences = static_cast<int>(std::max<int64_t>(1, n));
  }
  p.ctx_size = asked.ctx_size ? *asked.ctx_size : p.sequences * per_sequence;
  const uint64_t pages_held = facts.page_bytes > 0 ? facts.media_bytes / facts.page_bytes : uint64_t(p.sequences) + 1;
  p.page_window = static_cast<int>(std::max<uint64_t>(2, std::min<uint64_t>(uint64_t(p.sequences) + 1, pages_held)));
  return p;
}

MemoryFacts memory_facts(const EngineParams& params, std::optional<uint64_t> memory_budget, uint64_t media_bytes) {
  const ModelConfig config = ModelFolder::open(params.model_dir).config;
  const TextConfig& t = config.text;
  const uint64_t element = params.resolved_kv_type() == KvType::F16 ? 2 : 4;
  MemoryFacts f;
  f.kv_bytes_per_token = 2 * uint64_t(t.num_hidden_layers) * uint64_t(t.num_key_value_heads) * t.head_dim * element;
  f.sequence_tokens = EngineParams{}.ctx_size;
  f.memory_budget = memory_budget;
  f.media_bytes = media_bytes;
  f.machine_bytes = machine_memory_bytes();
  f.weights_bytes = weight_footprint(config, params.resolved_weights()).memory_bytes;
  return f;
}

}  // namespace qvl
