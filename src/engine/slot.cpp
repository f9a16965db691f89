#include "engine/slot.h"

#include <algorithm>
#include <climits>

namespace qvl {

void Slot::hold(const PreparedPrompt& prompt, int64_t from, int64_t to) {
  cached_ids.insert(cached_ids.end(), prompt.ids.begin() + from, prompt.ids.begin() + to);
  cached_keys.insert(cached_keys.end(), prompt.token_key.begin() + from, prompt.token_key.begin() + to);
}

void Slot::forget() {
  cache.set_size(0);
  cached_ids.clear();
  cached_keys.clear();
}

int64_t reusable_prefix(const Slot& slot, const PreparedPrompt& prompt) {
  const int64_t length = static_cast<int64_t>(prompt.ids.size());
  const int64_t limit = std::min<int64_t>(static_cast<int64_t>(slot.cached_ids.size()), length - 1);
  int64_t same = 0;
  while (same < limit && slot.cached_ids[same] == prompt.ids[same] && slot.cached_keys[same] == prompt.token_key[same])
    ++same;
  // Back off to the start of an image the prefix would cut.
  while (same > 0 && prompt.token_key[same] != 0 && prompt.token_key[same - 1] == prompt.token_key[same]) --same;
  return same;
}

int choose_slot(std::span<const Slot> slots, std::span<const int> free_slots, const PreparedPrompt& prompt) {
  int chosen = free_slots[0];
  int64_t best = INT64_MIN;
  for (const int s : free_slots) {
    const Slot& slot = slots[s];
    const int64_t reused = reusable_prefix(slot, prompt);
    const int64_t score = reused - (static_cast<int64_t>(slot.cached_ids.size()) - reused);
    if (score > best || (score == best && slot.last_used < slots[chosen].last_used)) {
      best = score;
      chosen = s;
    }
  }
  return chosen;
}

int64_t take_prefix(Slot& slot, std::span<const Slot> slots, const PreparedPrompt& prompt) {
  const Slot* from = &slot;
  int64_t reused = reusable_prefix(slot, prompt);
  for (const Slot& other : slots) {
    const int64_t other_reused = reusable_prefix(other, prompt);
    if (other_reused > reused) {
      reused = other_reused;
      from = &other;
    }
  }
  if (from == &slot) slot.cache.set_size(reused);
  else slot.cache.copy_prefix(from->cache, reused);
  slot.cached_ids.assign(prompt.ids.begin(), prompt.ids.begin() + reused);
  slot.cached_keys.assign(prompt.token_key.begin(), prompt.token_key.begin() + reused);
  return reused;
}

}  // namespace qvl
