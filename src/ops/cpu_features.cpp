#include "ops/cpu_features.h"

#include <hwy/targets.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define QVL_X86 1
#else
#define QVL_X86 0
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define QVL_ARM64_LINUX 1
#else
#define QVL_ARM64_LINUX 0
#endif

namespace qvl {
namespace {

#if QVL_X86
bool bit(unsigned reg, int b) { return (reg >> b) & 1u; }

// XCR0: which register states the OS saves on a context switch.
unsigned long long xgetbv0() {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuFeatures read_features() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (__get_cpuid(0, &a, &b, &c, &d)) f.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.family = static_cast<int>((a >> 8) & 0xF) + ((((a >> 8) & 0xF) == 0xF) ? static_cast<int>((a >> 20) & 0xFF) : 0);
  if (!bit(c, 27)) return f;  // OSXSAVE: xgetbv is usable
  const unsigned long long xcr0 = xgetbv0();
  const bool zmm_state = (xcr0 & 0xE6) == 0xE6;  // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
  const bool ymm_state = (xcr0 & 0x6) == 0x6;
  const bool tile_state = ((xcr0 >> 17) & 3) == 3;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const unsigned ebx7 = b, ecx7 = c, edx7 = d;
  f.avx512 = zmm_state && bit(ebx7, 16) && bit(ebx7, 17) && bit(ebx7, 30) && bit(ebx7, 31);  // F, DQ, BW, VL
  f.avx512_vnni = f.avx512 && bit(ecx7, 11);
  f.amx_tile = tile_state && bit(edx7, 24);
  f.amx_bf16 = f.amx_tile && bit(edx7, 22);
  f.amx_int8 = f.amx_tile && bit(edx7, 25);
  __cpuid_count(7, 1, a, b, c, d);
  f.avx512_bf16 = f.avx512 && bit(a, 5);
  f.avx_vnni = ymm_state && bit(a, 4);
  return f;
}

bool request_tile_state() {
  // arch/x86/include/uapi/asm/prctl.h and fpu/xstate: ARCH_REQ_XCOMP_PERM
  // 0x1023, ARCH_GET_XCOMP_PERM 0x1022, XFEATURE_XTILEDATA 18.
  constexpr long kGetPerm = 0x1022, kReqPerm = 0x1023, kXtileData = 18;
  if (syscall(SYS_arch_prctl, kReqPerm, kXtileData) != 0) return false;
  unsigned long long granted = 0;
  if (syscall(SYS_arch_prctl, kGetPerm, &granted) != 0) return false;
  return (granted >> kXtileData) & 1;
}
#elif QVL_ARM64_LINUX
// Bits of AT_HWCAP and AT_HWCAP2 (arch/arm64/include/uapi/asm/hwcap.h),
// spelled out for C libraries whose headers predate them.
constexpr unsigned long kHwcapAsimdDp = 1ul << 20, kHwcapSve = 1ul << 22;
constexpr unsigned long kHwcap2I8mm = 1ul << 13, kHwcap2Bf16 = 1ul << 14;

CpuFeatures read_features() {
  CpuFeatures f;
  const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  f.arm_dotprod = (hwcap & kHwcapAsimdDp) != 0;
  f.arm_sve = (hwcap & kHwcapSve) != 0;
  f.arm_i8mm = (hwcap2 & kHwcap2I8mm) != 0;
  f.arm_bf16 = (hwcap2 & kHwcap2Bf16) != 0;
  return f;
}
bool request_tile_state() { return false; }
#else
CpuFeatures read_features() { return {}; }
bool request_tile_state() { return false; }
#endif

// QVL_SIMD_TARGET, matched against the targets this CPU supports (all of
// them, not only those one file compiles). Not an exception: it is read
// while the process starts, where nothing could catch one. A target of this
// architecture that the CPU cannot run exits 77, which ctest's
// SKIP_RETURN_CODE reports as skipped (tests/CMakeLists.txt, the "targets"
// runs): the machine lacks it, the suite is not wrong.
SimdLimit read_simd_limit() {
  const char* want = std::getenv("QVL_SIMD_TARGET");
  if (!want || !*want) return {};
  std::string names;
  for (int64_t bits = hwy::SupportedTargets(); bits != 0; bits &= bits - 1) {
    const int64_t t = bits & -bits;
    if (std::string(want) == hwy::TargetName(t)) return {t, hwy::TargetName(t)};
    names += std::string(names.empty() ? "" : " ") + hwy::TargetName(t);
  }
  bool known = false;
  for (int b = 0; b < 63; ++b) known = known || std::string(want) == hwy::TargetName(int64_t{1} << b);
  std::fprintf(stderr, "qvl: QVL_SIMD_TARGET=%s: %s (it runs: %s)\n", want,
               known ? "this CPU cannot run that target" : "not a SIMD target", names.c_str());
  std::exit(known ? 77 : 2);
}

}  // namespace

CpuFeatures limit_features(CpuFeatures f, int64_t target) {
  if (target == 0) return f;
#if HWY_ARCH_X86
  const bool avx3 = target <= HWY_AVX3, avx3_dl = target <= HWY_AVX3_DL;
#ifdef HWY_AVX3_ZEN4
  const bool zen4 = target <= HWY_AVX3_ZEN4;
#else
  const bool zen4 = false;
#endif
#else
  const bool avx3 = false, avx3_dl = false, zen4 = false;
#endif
  f.avx512 = f.avx512 && avx3;
  f.avx512_vnni = f.avx512_vnni && avx3_dl;
  f.avx512_bf16 = f.avx512_bf16 && zen4;
  f.avx_vnni = false;
  f.amx_tile = f.amx_bf16 = f.amx_int8 = false;
#if HWY_ARCH_ARM_A64
#ifdef HWY_NEON_BF16
  const bool neon_bf16 = target <= HWY_NEON_BF16;
#else
  const bool neon_bf16 = false;
#endif
  f.arm_dotprod = f.arm_dotprod && neon_bf16;
  f.arm_i8mm = f.arm_i8mm && neon_bf16;
  f.arm_bf16 = f.arm_bf16 && neon_bf16;
  f.arm_sve = f.arm_sve && target <= HWY_SVE;
#endif
  return f;
}

const SimdLimit& simd_limit() {
  static const SimdLimit limit = [] {
    SimdLimit l = read_simd_limit();
    // Every target better than the limit (lower bits are better targets).
    if (l.target != 0) hwy::DisableTargets(l.target - 1);
    return l;
  }();
  return limit;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = limit_features(read_features(), simd_limit().target);
  return f;
}

namespace {
// The limit must hold from the first dispatch on: read while the process
// starts (this file is linked wherever a kernel is), not at first use.
[[maybe_unused]] const bool kSimdLimitRead = (simd_limit(), true);
}  // namespace

bool amx_tile_state_granted() {
  static const bool granted = cpu_features().amx_tile && request_tile_state();
  return granted;
}

}  // namespace qvl
