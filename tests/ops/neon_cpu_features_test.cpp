// AArch64 feature detection (cpu_features.h): the hardware capabilities Linux
// passes the process (getauxval) against the "Features" line it prints in
// /proc/cpuinfo (Documentation/arch/arm64/elf_hwcaps.rst names both).
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "ops/cpu_features.h"

#include <hwy/targets.h>

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

// Under QVL_SIMD_TARGET=NEON a CPU is a plain Armv8.0 one (limit_features).
TEST(CpuFeatures, ArmLimitToNeonDropsTheExtensions) {
  CpuFeatures all;
  all.arm_dotprod = all.arm_i8mm = all.arm_bf16 = all.arm_sve = true;
  const CpuFeatures neon = limit_features(all, HWY_NEON);
#ifdef HWY_NEON_BF16
  EXPECT_TRUE(limit_features(all, HWY_NEON_BF16).arm_i8mm);
#endif
  EXPECT_FALSE(neon.arm_dotprod || neon.arm_i8mm || neon.arm_bf16 || neon.arm_sve);
  EXPECT_TRUE(limit_features(all, 0).arm_dotprod);  // no limit
}

TEST(CpuFeatures, ArmAgreeWithLinux) {
  const std::set<std::string> features = linux_arm_features();
  // qemu-user passes the emulated CPU's capabilities but shows the host's /proc/cpuinfo.
  if (features.empty()) GTEST_SKIP() << "no Features line in /proc/cpuinfo (under qemu-user it is the host's)";
  auto has = [&](const char* f) { return features.count(f) > 0; };
  CpuFeatures seen;
  seen.arm_dotprod = has("asimddp");
  seen.arm_i8mm = has("i8mm");
  seen.arm_bf16 = has("bf16");
  seen.arm_sve = has("sve");
  const CpuFeatures want = limit_features(seen, simd_limit().target);  // QVL_SIMD_TARGET
  const CpuFeatures& c = cpu_features();
  EXPECT_EQ(c.arm_dotprod, want.arm_dotprod);
  EXPECT_EQ(c.arm_i8mm, want.arm_i8mm);
  EXPECT_EQ(c.arm_bf16, want.arm_bf16);
  EXPECT_EQ(c.arm_sve, want.arm_sve);
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
