#include "tokenizer/packed_strings.h"

#include <algorithm>
#include <limits>

#include "util/error.h"

namespace qvl {

void PackedStrings::assign(std::span<const std::string> items) {
  size_t total = 0;
  for (const std::string& s : items) total += s.size();
  if (total > std::numeric_limits<uint32_t>::max()) fail("string table of ", total, " bytes is over 4 GiB");
  bytes_.clear();
  bytes_.reserve(total);
  end_.clear();
  end_.reserve(items.size());
  for (const std::string& s : items) {
    bytes_ += s;
    end_.push_back(static_cast<uint32_t>(bytes_.size()));
  }
}

void PackedIndex::assign(const std::unordered_map<std::string, int32_t>& map) {
  std::vector<const std::pair<const std::string, int32_t>*> order;
  order.reserve(map.size());
  for (const auto& kv : map) order.push_back(&kv);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<std::string> keys;
  keys.reserve(order.size());
  ids_.clear();
  ids_.reserve(order.size());
  for (const auto* kv : order) {
    keys.push_back(kv->first);
    ids_.push_back(kv->second);
  }
  keys_.assign(keys);
}

int32_t PackedIndex::find(std::string_view key) const {
  size_t lo = 0, hi = keys_.size();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (keys_[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < keys_.size() && keys_[lo] == key ? ids_[lo] : -1;
}

}  // namespace qvl
