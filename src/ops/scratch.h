// Internal: per-thread scratch buffers that kernels keep across calls.
#pragma once

#include <cstddef>
#include <vector>

namespace qvl {

// Resizes `buf` to n elements, first giving its memory back when it holds
// more than twice n and over 1 MiB: one big call (a large image's vision
// encode) does not pin its buffers for the life of the process, while calls
// of similar size reuse them. Only for buffers whose size is steady within a
// forward pass (attention: the same for every layer); matmul scratch, whose
// size changes with k from one projection to the next, would be reallocated
// on every call.
template <class T>
void fit_scratch(std::vector<T>& buf, size_t n) {
  if (buf.capacity() > 2 * n && buf.capacity() * sizeof(T) > (size_t{1} << 20)) std::vector<T>().swap(buf);
  buf.resize(n);
}

}  // namespace qvl
