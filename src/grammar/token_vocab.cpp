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
  for (size_t id = 0; id < v.bytes.size(); ++id) {
    if (v.bytes[id].empty()) continue;
    if (v.bytes[id].size() > std::numeric_limits<uint16_t>::max())
      fail("token vocabulary: token ", id, " is ", v.bytes[id].size(), " bytes long");
    v.sorted_ids.push_back(static_cast<int32_t>(id));
  }
  // Sorted by bytes (std::string compares bytes as unsigned), tokens sharing
  // a prefix are adjacent, so the trie comes out in preorder in one pass.
  std::stable_sort(v.sorted_ids.begin(), v.sorted_ids.end(),
                   [&](int32_t a, int32_t b) { return v.bytes[static_cast<size_t>(a)] < v.bytes[static_cast<size_t>(b)]; });
  std::vector<uint32_t> open;  // the nodes on the path to the previous token, by depth - 1
  const std::string* prev = nullptr;
  for (size_t k = 0; k < v.sorted_ids.size(); ++k) {
    const std::string& s = v.bytes[static_cast<size_t>(v.sorted_ids[k])];
    if (prev && s == *prev) {  // another id for the same bytes
      Impl::TrieNode& n = v.trie[open.back()];
      if (n.tok_count == std::numeric_limits<uint8_t>::max()) fail("token vocabulary: too many tokens spell the same bytes");
      ++n.tok_count;
      continue;
    }
    size_t common = 0;
    if (prev)
      while (common < prev->size() && common < s.size() && (*prev)[common] == s[common]) ++common;
    for (; open.size() > common; open.pop_back()) v.trie[open.back()].end = static_cast<uint32_t>(v.trie.size());
    for (size_t d = common; d < s.size(); ++d) {
      open.push_back(static_cast<uint32_t>(v.trie.size()));
      v.trie.push_back({0, 0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(s[d]), 0});
    }
    v.trie.back().tok_begin = static_cast<uint32_t>(k);
    v.trie.back().tok_count = 1;
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
