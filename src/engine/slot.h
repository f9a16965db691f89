// Sequence slots and prefix reuse. A slot is one KV cache and the
// conversation it holds; a prompt that extends what any slot holds (the next
// turn of a chat, or the same image and question again) starts from that
// prefix instead of computing it again.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/prompt.h"
#include "model/kv_cache.h"

namespace qvl {

struct Slot {
  KvCache cache;
  std::vector<int32_t> cached_ids;    // tokens whose K/V the cache holds, in order
  std::vector<uint64_t> cached_keys;  // their image key hashes (0 for text)
  uint64_t last_used = 0;             // the engine's use clock when a run last began here

  // Tokens [from, to) of `prompt` now have K/V in the cache.
  void hold(const PreparedPrompt& prompt, int64_t from, int64_t to);
  void forget();
};

// The longest prefix of `prompt` whose K/V `slot` holds: same tokens and, for
// image tokens, the same image. It never ends inside an image, and leaves at
// least one token to compute so there are logits to sample from.
int64_t reusable_prefix(const Slot& slot, const PreparedPrompt& prompt);

// The slot among `free_slots` (indexes into `slots`, not empty) where
// `prompt` reuses most and discards least of what is cached: a follow-up
// lands on its conversation, an unrelated prompt on an empty slot rather than
// on one that merely shares the template's first tokens; among equals the
// least recently used, so the conversations of recent clients stay cached.
int choose_slot(std::span<const Slot> slots, std::span<const int> free_slots, const PreparedPrompt& prompt);

// Makes `slot` hold the longest prefix of `prompt` that any slot holds (busy
// ones too: a running sequence only appends past its prefix); another slot's
// K/V rows are copied, far cheaper than computing them again. Returns the
// prefix's length.
int64_t take_prefix(Slot& slot, std::span<const Slot> slots, const PreparedPrompt& prompt);

}  // namespace qvl
