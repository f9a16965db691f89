#include "ops/cpu_features.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define QVL_X86 1
#else
#define QVL_X86 0
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
#else
CpuFeatures read_features() { return {}; }
bool request_tile_state() { return false; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = read_features();
  return f;
}

bool amx_tile_state_granted() {
  static const bool granted = cpu_features().amx_tile && request_tile_state();
  return granted;
}

}  // namespace qvl
