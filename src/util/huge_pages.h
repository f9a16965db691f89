// Anonymous memory on 2 MB pages where Linux grants them (transparent huge
// pages in "always" or "madvise" mode): fewer TLB misses for data streamed
// whole, like weights at decode. One thread read 28 GB/s from 4 KB pages
// against 35 GB/s from 2 MB pages on a Zen 5 VM. Advice only: where
// transparent huge pages are off this is plain memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <span>
#include <vector>

namespace qvl {

constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` of zeroed memory starting on a 2 MB boundary, its own mapping,
// unmapped when the last owner goes. Only the whole 2 MB pages of it are
// advised: a huge page over the tail would make the unused rest of that
// page resident too. `what` names the use in the out-of-memory error.
std::shared_ptr<void> allocate_huge_pages(size_t bytes, const char* what);

// Many allocations carved in order from chunks on 2 MB pages, for matrices
// of any size that are streamed whole. allocate_huge_pages alone leaves a
// matrix under 2 MB, and the tail of a larger one, on 4 KB pages: 21 % of the
// 2B model's q4 decode weights (its k and v projections are 1.2 MB each). A
// chunk's unused end is never touched, so it costs address space only, and
// at most its last, partly filled 2 MB page is resident in vain; chunks are
// large so that there are few of those. An allocation of a quarter chunk or
// more gets a mapping of its own. Each allocation keeps its chunk alive.
// Not thread-safe.
class HugePageArena {
 public:
  static constexpr size_t kChunkBytes = size_t{256} << 20;
  // 64-byte aligned, zeroed, writable `bytes`; `what` names the use in the
  // out-of-memory error.
  std::shared_ptr<void> allocate(size_t bytes, const char* what);

 private:
  std::shared_ptr<void> chunk_;
  size_t used_ = 0;
};

// One mapping of the process as /proc/PID/smaps describes it: its resident
// bytes and how many of them sit on 2 MB page-table entries (AnonHugePages,
// FilePmdMapped, ShmemPmdMapped). Streaming weights from 4 KB pages read ~20 %
// slower than from 2 MB pages on a Zen 5 VM (bf16 gemv, 2 threads: 59-63
// against 71-76 GB/s), and a checkpoint read in place lands on whatever pages
// the page cache holds, so decode figures are read beside this.
struct MappingResidency {
  uintptr_t begin = 0, end = 0;
  size_t resident_bytes = 0, huge_bytes = 0;
};

// Parses smaps text. Throws qvl::Error naming the line that is not smaps.
std::vector<MappingResidency> parse_smaps(std::istream& in);
// This process's mappings; empty where /proc/self/smaps is absent (not Linux).
std::vector<MappingResidency> own_mappings();

// Residency of the mappings that overlap any of `ranges`, each mapping counted
// once (a mapping is the unit smaps reports, so one that overlaps a range
// partly is counted whole).
struct MemoryRange {
  const void* data;
  size_t bytes;
};
struct Residency {
  int mappings = 0;
  size_t resident_bytes = 0, huge_bytes = 0;
};
Residency residency_of(std::span<const MappingResidency> mappings, std::span<const MemoryRange> ranges);

}  // namespace qvl
