// Anonymous memory on 2 MB pages where Linux grants them (transparent huge
// pages in "always" or "madvise" mode): fewer TLB misses for data streamed
// whole, like weights at decode. One thread read 28 GB/s from 4 KB pages
// against 35 GB/s from 2 MB pages on a Zen 5 VM. Advice only: where
// transparent huge pages are off this is plain memory.
#pragma once

#include <cstddef>
#include <memory>

namespace qvl {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` of zeroed memory starting on a 2 MB boundary, its own mapping,
// unmapped when the last owner goes. Only the whole 2 MB pages of it are
// advised: a huge page over the tail would make the unused rest of that
// page resident too. `what` names the use in the out-of-memory error.
std::shared_ptr<void> allocate_huge_pages(size_t bytes, const char* what);

}  // namespace qvl
