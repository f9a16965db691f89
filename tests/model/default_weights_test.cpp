// The default weight format (model/default_weights.h): the most exact format
// whose matrices fit in half the memory, with the family's real sizes.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "model/default_weights.h"

namespace qvl {
namespace {

constexpr uint64_t GB = 1000ull * 1000 * 1000;
constexpr uint64_t GiB = 1ull << 30;

TEST(DefaultWeights, MostExactFormatInHalfTheMemory) {
  // Checkpoint sizes of the official bf16 folders (docs/weights.md).
  const uint64_t b2 = 4'255'140'312, b4 = 8'900'000'000, b8 = 17'500'000'000, b30 = 62 * GB, b32 = 67 * GB;
  EXPECT_EQ(default_weight_format(b2, 24 * GiB), WeightFormat::BF16);
  EXPECT_EQ(default_weight_format(b4, 24 * GiB), WeightFormat::BF16);
  EXPECT_EQ(default_weight_format(b8, 24 * GiB), WeightFormat::Q8);   // 17.5 GB > 12.9 GB, 9.3 GB fits
  EXPECT_EQ(default_weight_format(b30, 24 * GiB), WeightFormat::Q4);  // a 30B bf16 does not fit 24 GB
  EXPECT_EQ(default_weight_format(b32, 24 * GiB), WeightFormat::Q4);
  EXPECT_EQ(default_weight_format(b2, 8 * GiB), WeightFormat::BF16);  // 4.26 GB of 4.29
  EXPECT_EQ(default_weight_format(b2, 6 * GiB), WeightFormat::Q8);
  EXPECT_EQ(default_weight_format(b30, 64 * GiB), WeightFormat::Q8);
  EXPECT_EQ(default_weight_format(b32, 64 * GiB), WeightFormat::Q4);  // its q8, 35.6 GB, exceeds 34.4
  EXPECT_EQ(default_weight_format(b8, 64 * GiB), WeightFormat::BF16);
  // The boundaries: exactly half fits.
  EXPECT_EQ(default_weight_format(1000, 2000), WeightFormat::BF16);
  EXPECT_EQ(default_weight_format(1001, 2000), WeightFormat::Q8);
  EXPECT_EQ(default_weight_format(64 * 1000, 2 * 34 * 1000), WeightFormat::Q8);
  EXPECT_EQ(default_weight_format(64 * 1000, 2 * 34 * 1000 - 2), WeightFormat::Q4);
}

TEST(DefaultWeights, MemoryOverrideAndCheckpointOfAFolder) {
  const std::string tiny = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl";  // 22.5 MB checkpoint
  ASSERT_EQ(setenv("QVL_MEMORY_BYTES", "100000000", 1), 0);
  EXPECT_EQ(machine_memory_bytes(), 100'000'000u);
  EXPECT_EQ(default_weight_format(tiny), WeightFormat::BF16);
  setenv("QVL_MEMORY_BYTES", "30000000", 1);
  EXPECT_EQ(default_weight_format(tiny), WeightFormat::Q8);
  setenv("QVL_MEMORY_BYTES", "20000000", 1);
  EXPECT_EQ(default_weight_format(tiny), WeightFormat::Q4);
  setenv("QVL_MEMORY_BYTES", "lots", 1);
  EXPECT_THROW(machine_memory_bytes(), std::exception);
  unsetenv("QVL_MEMORY_BYTES");
  EXPECT_GT(machine_memory_bytes(), 0u);
}

// An FP8 checkpoint starts at q8 however much memory there is: bf16 would
// double its size and still not hold FP8 × scale exactly.
TEST(DefaultWeights, AnFp8CheckpointStartsAtQ8) {
  EXPECT_EQ(default_weight_format(1000, 1'000'000'000, true), WeightFormat::Q8);
  EXPECT_EQ(default_weight_format(32 * 1000, 2 * 34 * 1000, true), WeightFormat::Q8);  // 34 bytes per 32 weights
  EXPECT_EQ(default_weight_format(32 * 1000, 2 * 34 * 1000 - 2, true), WeightFormat::Q4);
  const std::string fp8 = std::string(QVL_FIXTURES_DIR) + "/tiny-qwen3vl-fp8";
  ASSERT_EQ(setenv("QVL_MEMORY_BYTES", "100000000000", 1), 0);
  EXPECT_EQ(default_weight_format(fp8), WeightFormat::Q8);
  unsetenv("QVL_MEMORY_BYTES");
}

}  // namespace
}  // namespace qvl
