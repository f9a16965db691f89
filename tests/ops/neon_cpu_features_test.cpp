// AArch64 feature detection (cpu_features.h): the hardware capabilities Linux
// passes the process (getauxval) against the "Features" line it prints in
// /proc/cpuinfo (Documentation/arch/arm64/elf_hwcaps.rst names both).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "ops/cpu_features.h"

namespace qvl {
namespace {

#if defined(__aarch64__)
std::set<std::string> linux_arm_features() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("Features", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> features;
    for (std::string w; words >> w;) features.insert(w);
    return features;
  }
  return {};
}

TEST(CpuFeatures, ArmAgreeWithLinux) {
  const std::set<std::string> features = linux_arm_features();
  // qemu-user passes the emulated CPU's capabilities but shows the host's /proc/cpuinfo.
  if (features.empty()) GTEST_SKIP() << "no Features line in /proc/cpuinfo (under qemu-user it is the host's)";
  auto has = [&](const char* f) { return features.count(f) > 0; };
  const CpuFeatures& c = cpu_features();
  EXPECT_EQ(c.arm_dotprod, has("asimddp"));
  EXPECT_EQ(c.arm_i8mm, has("i8mm"));
  EXPECT_EQ(c.arm_bf16, has("bf16"));
  EXPECT_EQ(c.arm_sve, has("sve"));
}
#endif

// Each architecture's fields only: the other's stay false.
TEST(CpuFeatures, ArmFieldsOnlyOnArm) {
  const CpuFeatures& c = cpu_features();
#if defined(__aarch64__)
  EXPECT_FALSE(c.avx512 || c.avx512_vnni || c.avx_vnni || c.avx512_bf16 || c.amx_tile || c.amd);
#else
  EXPECT_FALSE(c.arm_dotprod || c.arm_i8mm || c.arm_bf16 || c.arm_sve);
#endif
}

}  // namespace
}  // namespace qvl
