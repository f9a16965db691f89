// QVL_SIMD_TARGET (cpu_features.h, SimdLimit): the rule that limits the
// features, and, when the suite runs under a limit (ctest -L targets), that
// no dispatch takes a better target than the limit.
#include <gtest/gtest.h>

#include <hwy/targets.h>

#include <string>

#include "ops/cpu_features.h"
#include "ops/machine_limits.h"
#include "ops/matmul.h"

namespace qvl {
namespace {

CpuFeatures everything() {
  CpuFeatures f;
  f.avx512 = f.avx512_vnni = f.avx_vnni = f.avx512_bf16 = true;
  f.amx_tile = f.amx_bf16 = f.amx_int8 = true;
  f.amd = true;
  f.family = 0x1A;
  return f;
}

TEST(SimdLimit, NoLimitKeepsEveryFeature) {
  const CpuFeatures f = limit_features(everything(), 0);
  EXPECT_TRUE(f.avx512 && f.avx512_vnni && f.avx_vnni && f.avx512_bf16 && f.amx_tile && f.amx_bf16 && f.amx_int8);
}

TEST(SimdLimit, ALimitKeepsOnlyWhatItsTargetIncludes) {
  const CpuFeatures emu = limit_features(everything(), HWY_EMU128);
  EXPECT_FALSE(emu.avx512 || emu.avx512_vnni || emu.avx_vnni || emu.avx512_bf16 || emu.amx_tile || emu.amx_bf16 ||
               emu.amx_int8);
  EXPECT_TRUE(emu.amd);  // who made it is not a feature
  EXPECT_EQ(emu.family, 0x1A);
#if HWY_ARCH_X86
  const CpuFeatures avx2 = limit_features(everything(), HWY_AVX2);
  EXPECT_FALSE(avx2.avx512 || avx2.avx512_vnni || avx2.avx_vnni || avx2.avx512_bf16 || avx2.amx_tile);
  const CpuFeatures avx3 = limit_features(everything(), HWY_AVX3);
  EXPECT_TRUE(avx3.avx512);
  EXPECT_FALSE(avx3.avx512_vnni || avx3.avx512_bf16 || avx3.amx_int8);
  const CpuFeatures dl = limit_features(everything(), HWY_AVX3_DL);
  EXPECT_TRUE(dl.avx512 && dl.avx512_vnni);
  EXPECT_FALSE(dl.avx512_bf16 || dl.avx_vnni || dl.amx_bf16);
  // A limit never adds what the CPU lacks.
  EXPECT_FALSE(limit_features(CpuFeatures{}, HWY_AVX3_DL).avx512_vnni);
#endif
}

// The Highway target bit a dispatched name stands for; 0 if none.
int64_t target_bit(const std::string& name) {
  for (int b = 0; b < 63; ++b)
    if (name == hwy::TargetName(int64_t{1} << b)) return int64_t{1} << b;
  return 0;
}

TEST(SimdLimit, NoDispatchTakesABetterTarget) {
  const SimdLimit& limit = simd_limit();
  if (limit.target == 0) GTEST_SKIP() << "QVL_SIMD_TARGET is not set (ctest -L targets runs the suite under it)";
  // Lower bits are better targets.
  EXPECT_GE(target_bit(simd_target_name()), limit.target) << simd_target_name() << " under " << limit.name;
  EXPECT_GE(target_bit(matmul_simd_target()), limit.target) << matmul_simd_target() << " under " << limit.name;
  EXPECT_GE(hwy::SupportedTargets() & -hwy::SupportedTargets(), limit.target);
}

}  // namespace
}  // namespace qvl
