#include "tokenizer/bpe.h"

#include <algorithm>

namespace qvl {
namespace {

uint64_t key_of(int32_t left, int32_t right) {
  return (uint64_t{static_cast<uint32_t>(left)} << 32) | static_cast<uint32_t>(right);
}

size_t hash_of(uint64_t key) {
  // Murmur3's 64-bit finaliser: spreads the two ids over all bits.
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  key *= 0xc4ceb9fe1a85ec53ULL;
  key ^= key >> 33;
  return static_cast<size_t>(key);
}

}  // namespace

void BpeModel::grow() {
  std::vector<Merge> old = std::move(table_);
  table_.assign(old.empty() ? 1024 : old.size() * 2, Merge{});
  for (const Merge& m : old) {
    if (m.key == kEmpty) continue;
    size_t mask = table_.size() - 1;
    size_t h = hash_of(m.key) & mask;
    while (table_[h].key != kEmpty) h = (h + 1) & mask;
    table_[h] = m;
  }
}

void BpeModel::add_merge(int32_t left, int32_t right, int32_t merged, uint32_t rank) {
  if ((count_ + 1) * 10 > table_.size() * 7) grow();  // load <= 0.7 keeps the table small for the cache
  uint64_t key = key_of(left, right);
  size_t mask = table_.size() - 1;
  size_t h = hash_of(key) & mask;
  while (table_[h].key != kEmpty) {
    if (table_[h].key == key) return;
    h = (h + 1) & mask;
  }
  table_[h] = Merge{key, rank, merged};
  ++count_;
}

const BpeModel::Merge* BpeModel::find(int32_t left, int32_t right) const {
  if (table_.empty()) return nullptr;
  uint64_t key = key_of(left, right);
  size_t mask = table_.size() - 1;
  for (size_t h = hash_of(key) & mask;; h = (h + 1) & mask) {
    if (table_[h].key == key) return &table_[h];
    if (table_[h].key == kEmpty) return nullptr;
  }
}

void BpeModel::encode_word(std::string_view word, Scratch& scratch, std::vector<int32_t>& out) const {
  using Symbol = Scratch::Symbol;
  using Candidate = Scratch::Candidate;
  std::vector<Symbol>& sym = scratch.sym;
  sym.clear();
  for (char c : word) {
    int32_t id = byte_ids_[static_cast<unsigned char>(c)];
    if (id < 0) continue;
    int32_t k = static_cast<int32_t>(sym.size());
    sym.push_back({id, k - 1, k + 1, 1});
  }
  if (sym.empty()) return;
  sym.back().next = -1;

  // Candidate merges in a min-heap by (rank, position). A merge changes its
  // neighbours, so an entry is checked against the current pair when popped.
  std::vector<Candidate>& heap = scratch.heap;
  heap.clear();
  auto later = [](const Candidate& a, const Candidate& b) { return a > b; };
  auto consider = [&](int32_t pos) {
    int32_t next = sym[pos].next;
    if (next < 0) return;
    if (const Merge* m = find(sym[pos].id, sym[next].id)) {
      heap.push_back({m->rank, pos, sym[pos].id, sym[next].id, m->merged});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  for (int32_t k = 0; k + 1 < static_cast<int32_t>(sym.size()); ++k) consider(k);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = sym[c.pos];
    if (left.len == 0 || left.next < 0 || left.id != c.left || sym[left.next].id != c.right) continue;
    Symbol& right = sym[left.next];
    left.id = c.merged;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = c.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(c.pos);
  }
  for (int32_t k = 0; k >= 0; k = sym[k].next) out.push_back(sym[k].id);
}

}  // namespace qvl
