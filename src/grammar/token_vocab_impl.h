// TokenVocab's byte trie. Internal to src/grammar.
//
// The trie is stored in preorder in one flat array: node i's subtree is
// [i, end), its children start at i + 1. A mask computation is then one
// forward scan that jumps over a subtree the grammar refuses
// (TokenGrammar::Impl::compute_mask), touching memory in order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/grammar.h"

namespace qvl {

struct TokenVocab::Impl {
  struct TrieNode {
    uint32_t end;    // one past the last node of this subtree
    uint32_t token;  // the token spelled by the path to here, or kNoToken
    uint16_t depth;  // bytes from the root (the root's children are at depth 1)
    uint8_t byte;    // the byte on the edge into this node
  };
  // kNoToken is the first id past the vocabulary, padded to a whole word, so
  // a scan can set its bit unconditionally in a scratch mask one word longer
  // (no branch on "does this node end a token").
  uint32_t no_token = 0;

  std::vector<std::string> bytes;   // [vocab]
  std::vector<TrieNode> trie;       // [nodes], preorder, the root itself not stored
  // Ids whose bytes equal an earlier id's (first, other): allowed together.
  std::vector<std::pair<uint32_t, uint32_t>> duplicates;
  uint16_t max_depth = 0;           // the longest token, in bytes
  size_t mask_words = 0;            // ceil(vocab / 64)
};

}  // namespace qvl
