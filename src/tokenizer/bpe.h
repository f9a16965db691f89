// Byte-level BPE: a word (the raw bytes of one pre-tokenized piece) starts as
// one symbol per byte and the adjacent pair with the lowest merge rank is
// merged, leftmost first, until no pair has a rank (Sennrich et al. 2016; the
// order Hugging Face `tokenizers` applies).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace qvl {

class BpeModel {
 public:
  // byte_ids[b]: the token of the single byte b (-1 when the vocabulary lacks
  // it: that byte is then dropped, as `tokenizers` does without an unk token).
  explicit BpeModel(std::array<int32_t, 256> byte_ids) : byte_ids_(byte_ids) {}

  // Merge of (left, right) into `merged` with the given rank (its line in
  // "merges"); a later duplicate of a pair is ignored.
  void add_merge(int32_t left, int32_t right, int32_t merged, uint32_t rank);

  // Working memory of encode_word(), reusable across calls.
  struct Scratch {
    struct Symbol {
      int32_t id;
      int32_t prev, next;  // -1 at the ends
      uint32_t len;        // 0 once merged into its left neighbour
    };
    struct Candidate {
      uint32_t rank;
      int32_t pos;
      int32_t left, right, merged;  // the pair as it was when queued
      bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::vector<Symbol> sym;
    std::vector<Candidate> heap;
  };

  // Appends the tokens of `word` to `out`.
  void encode_word(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const;

 private:
  struct Merge {
    uint64_t key = kEmpty;  // left << 32 | right
    uint32_t rank = 0;
    int32_t merged = -1;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  const Merge* find(int32_t left, int32_t right) const;
  void grow();

  std::array<int32_t, 256> byte_ids_;
  std::vector<Merge> table_;  // open addressing, linear probing, power-of-two size
  size_t count_ = 0;
};

}  // namespace qvl
