#include "util/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

#include "util/error.h"

namespace qvl {

std::shared_ptr<void> allocate_huge_pages(size_t bytes, const char* what) {
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const size_t span = rounded + kHugePageBytes;  // room to align the start
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("out of memory allocating ", bytes, " bytes for ", what);
  const uintptr_t base = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = (base + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  // Unmap the slack on both sides, so the deleter needs only (start, rounded).
  if (start > base) munmap(p, start - base);
  if (base + span > start + rounded) munmap(reinterpret_cast<void*>(start + rounded), base + span - start - rounded);
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(start), bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  return std::shared_ptr<void>(reinterpret_cast<void*>(start), [rounded](void* q) { munmap(q, rounded); });
}

}  // namespace qvl
