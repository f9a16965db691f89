// TokenVocab: the tokens' bytes and the byte trie over them.
#include <algorithm>
#include <limits>
#include <numeric>

#include "grammar/token_vocab_impl.h"
#include "util/error.h"

namespace qvl {

TokenVocab::TokenVocab(std::vector<std::string> token_bytes) : impl_(std::make_unique<Impl>()) {
  Impl& v = *impl_;
  if (token_bytes.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    fail("token vocabulary: ", token_bytes.size(), " tokens is too many");
  v.bytes = std::move(token_bytes);
  v.mask_words = (v.bytes.size() + 63) / 64;
  v.no_token = static_cast<uint32_t>(v.mask_words * 64);
  std::vector<int32_t> sorted;  // non-empty tokens, ordered by bytes
  for (size_t id = 0; id < v.bytes.size(); ++id) {
    if (v.bytes[id].empty()) continue;
    if (v.bytes[id].size() > std::numeric_limits<uint16_t>::max())
      fail("token vocabulary: token ", id, " is ", v.bytes[id].size(), " bytes long");
    sorted.push_back(static_cast<int32_t>(id));
  }
  // Sorted by bytes (std::string compares bytes as unsigned), tokens sharing
  // a prefix are adjacent, so the trie comes out in preorder in one pass.
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](int32_t a, int32_t b) { return v.bytes[static_cast<size_t>(a)] < v.bytes[static_cast<size_t>(b)]; });
  std::vector<uint32_t> open;  // the nodes on the path to the previous token, by depth - 1
  const std::string* prev = nullptr;
  for (int32_t id : sorted) {
    const std::string& s = v.bytes[static_cast<size_t>(id)];
    if (prev && s == *prev) {  // another id for the same bytes
      v.duplicates.emplace_back(v.trie[open.back()].token, static_cast<uint32_t>(id));
      continue;
    }
    size_t common = 0;
    if (prev)
      while (common < prev->size() && common < s.size() && (*prev)[common] == s[common]) ++common;
    for (; open.size() > common; open.pop_back()) v.trie[open.back()].end = static_cast<uint32_t>(v.trie.size());
    for (size_t d = common; d < s.size(); ++d) {
      open.push_back(static_cast<uint32_t>(v.trie.size()));
      v.trie.push_back({0, v.no_token, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d])});
    }
    v.trie.back().token = static_cast<uint32_t>(id);
    v.max_depth = std::max(v.max_depth, static_cast<uint16_t>(s.size()));
    prev = &s;
  }
  for (; !open.empty(); open.pop_back()) v.trie[open.back()].end = static_cast<uint32_t>(v.trie.size());
}

TokenVocab::~TokenVocab() = default;

size_t TokenVocab::size() const { return impl_->bytes.size(); }

const std::string& TokenVocab::bytes(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= impl_->bytes.size()) fail("token vocabulary: no token ", id);
  return impl_->bytes[static_cast<size_t>(id)];
}

}  // namespace qvl
