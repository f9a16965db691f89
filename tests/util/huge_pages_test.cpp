#include "util/huge_pages.h"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <vector>

namespace qvl {
namespace {

TEST(HugePages, AlignedZeroedAndWritableToTheLastByte) {
  for (size_t bytes : {size_t{1}, kHugePageBytes, 3 * kHugePageBytes + 5}) {
    std::shared_ptr<void> p = allocate_huge_pages(bytes, "a test");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p.get()) % kHugePageBytes, 0u) << bytes;
    auto* b = static_cast<unsigned char*>(p.get());
    EXPECT_EQ(b[0], 0);
    EXPECT_EQ(b[bytes - 1], 0);
    std::memset(b, 0xab, bytes);
    EXPECT_EQ(b[bytes - 1], 0xab);
  }
}

TEST(HugePages, OutOfMemoryNamesTheUse) {
  try {
    allocate_huge_pages(size_t{1} << 62, "the probe");
    FAIL() << "a 4 EiB mapping succeeded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("for the probe"), std::string::npos) << e.what();
  }
}

TEST(HugePageArena, SlicesAreAlignedDisjointZeroedAndOutliveTheArena) {
  constexpr size_t kChunk = HugePageArena::kChunkBytes;
  const std::vector<size_t> sizes = {
      1, 100, 1234567, 64, kChunk / 4 - 64, 3 * kHugePageBytes + 5, kChunk / 4, kChunk / 4 - 64};
  std::vector<std::shared_ptr<void>> slices;
  {
    HugePageArena arena;
    for (size_t bytes : sizes) slices.push_back(arena.allocate(bytes, "a test"));
  }  // the arena is gone; its chunks live on in the slices
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto* b = static_cast<unsigned char*>(slices[i].get());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u) << sizes[i];
    EXPECT_EQ(b[0], 0);
    EXPECT_EQ(b[sizes[i] - 1], 0);
    b[0] = b[sizes[i] - 1] = static_cast<unsigned char>(i + 1);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {  // no slice's ends are another's
    auto* b = static_cast<unsigned char*>(slices[i].get());
    EXPECT_EQ(b[0], i + 1);
    EXPECT_EQ(b[sizes[i] - 1], i + 1);
  }
  // Packed in order (64-byte steps) while they fit; a quarter chunk gets a
  // 2 MB-aligned mapping of its own.
  auto at = [&](int i) { return reinterpret_cast<uintptr_t>(slices[i].get()); };
  EXPECT_EQ(at(0) % kHugePageBytes, 0u);
  EXPECT_EQ(at(1) - at(0), 64u);
  EXPECT_EQ(at(2) - at(1), 128u);
  EXPECT_EQ(at(3) - at(2), 1234624u);
  EXPECT_EQ(at(4) - at(3), 64u);
  EXPECT_EQ(at(5) - at(4), kChunk / 4 - 64);
  EXPECT_EQ(at(6) % kHugePageBytes, 0u);
  EXPECT_EQ(at(7) - at(5), 3 * kHugePageBytes + 64);
}

TEST(HugePageArena, ASliceThatDoesNotFitStartsAChunk) {
  constexpr size_t kSlice = HugePageArena::kChunkBytes / 4 - 64;  // untouched: costs address space only
  HugePageArena arena;
  std::vector<std::shared_ptr<void>> slices;
  for (int i = 0; i < 5; ++i) slices.push_back(arena.allocate(kSlice, "a test"));
  auto at = [&](int i) { return reinterpret_cast<uintptr_t>(slices[i].get()); };
  for (int i = 1; i < 4; ++i) EXPECT_EQ(at(i) - at(i - 1), kSlice);
  EXPECT_EQ(at(4) % kHugePageBytes, 0u);
  EXPECT_TRUE(at(4) >= at(0) + HugePageArena::kChunkBytes || at(4) + HugePageArena::kChunkBytes <= at(0));
}

TEST(HugePageArena, OutOfMemoryNamesTheUse) {
  HugePageArena arena;
  try {
    arena.allocate(size_t{1} << 62, "the embedding");
    FAIL() << "a 4 EiB slice succeeded";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("for the embedding"), std::string::npos) << e.what();
  }
}

// Two mappings as Linux 6.x prints them (fields trimmed): a file mapped
// partly on 2 MB entries, then an anonymous one with a transparent huge page.
constexpr const char* kSmaps =
    "7f0000000000-7f0000600000 r--p 00000000 fd:01 1234    /models/x/model.safetensors\n"
    "Size:               6144 kB\n"
    "Rss:                6000 kB\n"
    "AnonHugePages:         0 kB\n"
    "FilePmdMapped:      4096 kB\n"
    "THPeligible:    1\n"
    "VmFlags: rd mr mw me hg\n"
    "7f0000800000-7f0000a01000 rw-p 00000000 00:00 0 \n"
    "Rss:                2052 kB\n"
    "AnonHugePages:      2048 kB\n"
    "ShmemPmdMapped:        0 kB\n";

TEST(PageResidency, ParsesEachMappingsResidentAndHugeBytes) {
  std::istringstream in(kSmaps);
  const std::vector<MappingResidency> m = parse_smaps(in);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].begin, 0x7f0000000000u);
  EXPECT_EQ(m[0].end, 0x7f0000600000u);
  EXPECT_EQ(m[0].resident_bytes, 6000u * 1024);
  EXPECT_EQ(m[0].huge_bytes, 4096u * 1024);
  EXPECT_EQ(m[1].begin, 0x7f0000800000u);
  EXPECT_EQ(m[1].end, 0x7f0000a01000u);
  EXPECT_EQ(m[1].resident_bytes, 2052u * 1024);
  EXPECT_EQ(m[1].huge_bytes, 2048u * 1024);
}

TEST(PageResidency, CountsEachOverlappingMappingOnce) {
  std::istringstream in(kSmaps);
  const std::vector<MappingResidency> m = parse_smaps(in);
  auto at = [](uintptr_t a) { return reinterpret_cast<const void*>(a); };
  // Two ranges in the first mapping, one straddling its end: it counts once.
  const MemoryRange first[] = {{at(0x7f0000001000), 4096}, {at(0x7f00005ff000), 0x3000}};
  Residency r = residency_of(m, first);
  EXPECT_EQ(r.mappings, 1);
  EXPECT_EQ(r.resident_bytes, 6000u * 1024);
  EXPECT_EQ(r.huge_bytes, 4096u * 1024);
  const MemoryRange both[] = {{at(0x7f0000000000), 1}, {at(0x7f0000a00fff), 1}};
  r = residency_of(m, both);
  EXPECT_EQ(r.mappings, 2);
  EXPECT_EQ(r.resident_bytes, 8052u * 1024);
  EXPECT_EQ(r.huge_bytes, 6144u * 1024);
  // The gap between them, an empty range, and the byte after the last: none.
  const MemoryRange none[] = {{at(0x7f0000600000), 0x200000}, {at(0x7f0000000000), 0}, {at(0x7f0000a01000), 1}};
  r = residency_of(m, none);
  EXPECT_EQ(r.mappings, 0);
  EXPECT_EQ(r.resident_bytes, 0u);
}

TEST(PageResidency, MalformedTextNamesTheLine) {
  for (const char* bad : {"Rss: 4 kB\n", "7f00-7f10 r--p 0 0:0 0\nRss: four kB\n", "7f00-zz r--p 0 0:0 0\n",
                          "7f00-7f10 r--p 0 0:0 0\nRss: 4 MB\n", "7f00-7f10 r--p 0 0:0 0\ngarbage\n"}) {
    std::istringstream in(bad);
    try {
      parse_smaps(in);
      FAIL() << "accepted: " << bad;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("smaps line "), std::string::npos) << e.what();
    }
  }
}

// This process's own smaps: a touched allocation is resident whole, and a
// mapping advised against huge pages has none. (Linux may merge a mapping
// with a neighbour of the same kind, so the counts are lower bounds.)
TEST(PageResidency, OwnMappingsSeeAnAllocation) {
  if (own_mappings().empty()) GTEST_SKIP() << "no /proc/self/smaps on this system";
  const size_t bytes = 3 * kHugePageBytes;
  std::shared_ptr<void> p = allocate_huge_pages(bytes, "a test");
  std::memset(p.get(), 1, bytes);
  const MemoryRange range[] = {{p.get(), bytes}};
  Residency r = residency_of(own_mappings(), range);
  EXPECT_EQ(r.mappings, 1);
  EXPECT_GE(r.resident_bytes, bytes);
  EXPECT_LE(r.huge_bytes, r.resident_bytes);

  void* q = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(q, MAP_FAILED);
  madvise(q, bytes, MADV_NOHUGEPAGE);
  std::memset(q, 1, bytes);
  const MemoryRange small[] = {{q, bytes}};
  r = residency_of(own_mappings(), small);
  EXPECT_GE(r.resident_bytes, bytes);
  EXPECT_EQ(r.huge_bytes, 0u);
  munmap(q, bytes);
}

}  // namespace
}  // namespace qvl
