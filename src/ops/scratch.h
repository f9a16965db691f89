// Internal: per-thread scratch buffers that kernels keep across calls.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace qvl {

// Scratch that kernels read with full-width vector loads starts on a cache
// line, so no 64-byte load straddles two lines (malloc gives 16 bytes). A
// straddling x held bf16 decode's dot products at 68 GB/s a core even from
// L1; on a line, 93-107 GB/s (Zen 5).
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
};

template <class T>
using ScratchVector = std::vector<T, CacheLineAllocator<T>>;

// Resizes `buf` to n elements, first giving its memory back when it holds
// more than twice n and over 1 MiB: one big call (a large image's vision
// encode) does not pin its buffers for the life of the process, while calls
// of similar size reuse them. Only for buffers whose size is steady within a
// forward pass (attention: the same for every layer); matmul scratch, whose
// size changes with k from one projection to the next, would be reallocated
// on every call.
template <class T, class A>
void fit_scratch(std::vector<T, A>& buf, size_t n) {
  if (buf.capacity() > 2 * n && buf.capacity() * sizeof(T) > (size_t{1} << 20)) std::vector<T, A>().swap(buf);
  buf.resize(n);
}

}  // namespace qvl
