#include "util/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

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

std::shared_ptr<void> HugePageArena::allocate(size_t bytes, const char* what) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  if (rounded >= kChunkBytes / 4) return allocate_huge_pages(bytes, what);
  if (!chunk_ || used_ + rounded > kChunkBytes) {
    chunk_ = allocate_huge_pages(kChunkBytes, what);
    used_ = 0;
  }
  void* p = static_cast<uint8_t*>(chunk_.get()) + used_;
  used_ += rounded;
  return std::shared_ptr<void>(chunk_, p);  // shares the chunk's ownership
}

std::vector<MappingResidency> parse_smaps(std::istream& in) {
  std::vector<MappingResidency> out;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    // A mapping's header starts "begin-end perms ..." in hex; its fields are
    // "Name:   N kB". Field names never contain '-', header ranges always do.
    const size_t colon = line.find(':'), dash = line.find('-');
    const size_t space = line.find(' ');
    if (dash != std::string::npos && dash < space && (colon == std::string::npos || dash < colon)) {
      MappingResidency m;
      size_t used = 0;
      try {
        m.begin = std::stoull(line.substr(0, dash), &used, 16);
        if (used != dash) throw std::invalid_argument("begin");
        m.end = std::stoull(line.substr(dash + 1, space - dash - 1), &used, 16);
        if (used != space - dash - 1) throw std::invalid_argument("end");
      } catch (const std::exception&) {
        fail("smaps line ", number, ": not a mapping header: ", line);
      }
      out.push_back(m);
      continue;
    }
    if (colon == std::string::npos) fail("smaps line ", number, ": neither a mapping header nor a field: ", line);
    const std::string name = line.substr(0, colon);
    const bool resident = name == "Rss";
    const bool huge = name == "AnonHugePages" || name == "FilePmdMapped" || name == "ShmemPmdMapped";
    if (!resident && !huge) continue;
    if (out.empty()) fail("smaps line ", number, ": ", name, " before any mapping header");
    std::istringstream value(line.substr(colon + 1));
    size_t kb = 0;
    std::string unit;
    if (!(value >> kb >> unit) || unit != "kB") fail("smaps line ", number, ": ", name, " is not \"N kB\": ", line);
    (resident ? out.back().resident_bytes : out.back().huge_bytes) += kb * 1024;
  }
  return out;
}

std::vector<MappingResidency> own_mappings() {
  std::ifstream in("/proc/self/smaps");
  if (!in) return {};
  return parse_smaps(in);
}

Residency residency_of(std::span<const MappingResidency> mappings, std::span<const MemoryRange> ranges) {
  Residency sum;
  for (const MappingResidency& m : mappings) {
    const bool overlaps = std::any_of(ranges.begin(), ranges.end(), [&](const MemoryRange& r) {
      const auto a = reinterpret_cast<uintptr_t>(r.data);
      return r.bytes > 0 && a < m.end && a + r.bytes > m.begin;
    });
    if (!overlaps) continue;
    ++sum.mappings;
    sum.resident_bytes += m.resident_bytes;
    sum.huge_bytes += m.huge_bytes;
  }
  return sum;
}

}  // namespace qvl
