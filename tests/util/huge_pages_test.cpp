#include "util/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

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

}  // namespace
}  // namespace qvl
