// The AArch64 unit-peak loops (neon_peaks.h).
#include "ops/neon_peaks.h"

#include "util/error.h"

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_neon.h>

namespace qvl::neon {
namespace {
// 12 chains: latency (3-4 cycles) × up to 4 vector pipes (Neoverse V1/V2).
constexpr int kChains = 12;
}  // namespace

__attribute__((target("arch=armv8.2-a+dotprod"))) double sdot_loop(int64_t iterations, int seed) {
  int32x4_t acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = vdupq_n_s32(seed + i);
  const int8x16_t a = vdupq_n_s8(static_cast<int8_t>(3 + seed)), b = vdupq_n_s8(1);
  for (int64_t it = 0; it < iterations; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = vdotq_s32(acc[i], a, b);
  int32x4_t s = acc[0];
  for (int i = 1; i < kChains; ++i) s = vaddq_s32(s, acc[i]);
  volatile int32_t sink = vgetq_lane_s32(s, 0);
  (void)sink;
  return double(iterations) * kChains * 16 * 2;
}

__attribute__((target("arch=armv8.2-a+i8mm"))) double smmla_loop(int64_t iterations, int seed) {
  int32x4_t acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = vdupq_n_s32(seed + i);
  const int8x16_t a = vdupq_n_s8(static_cast<int8_t>(3 + seed)), b = vdupq_n_s8(1);
  for (int64_t it = 0; it < iterations; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = vmmlaq_s32(acc[i], a, b);
  int32x4_t s = acc[0];
  for (int i = 1; i < kChains; ++i) s = vaddq_s32(s, acc[i]);
  volatile int32_t sink = vgetq_lane_s32(s, 0);
  (void)sink;
  return double(iterations) * kChains * 32 * 2;
}

__attribute__((target("arch=armv8.2-a+bf16"))) double bfmmla_loop(int64_t iterations, int seed) {
  float32x4_t acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = vdupq_n_f32(float(seed + i));
  // Operands from the seed (1 and about 1e-7): as constants, GCC 12 makes the
  // first an FP16 immediate (fmov v.8h), which FEAT_BF16 does not imply.
  const uint16_t one = static_cast<uint16_t>(0x3f80 + (seed & 1)), small = static_cast<uint16_t>(0x33d6 + (seed & 1));
  const bfloat16x8_t a = vreinterpretq_bf16_u16(vdupq_n_u16(one)), b = vreinterpretq_bf16_u16(vdupq_n_u16(small));
  for (int64_t it = 0; it < iterations; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = vbfmmlaq_f32(acc[i], a, b);
  float32x4_t s = acc[0];
  for (int i = 1; i < kChains; ++i) s = vaddq_f32(s, acc[i]);
  volatile float sink = vgetq_lane_f32(s, 0);
  (void)sink;
  return double(iterations) * kChains * 16 * 2;
}

}  // namespace qvl::neon

#else

namespace qvl::neon {
double sdot_loop(int64_t, int) { fail("sdot_loop: AArch64 only"); }
double smmla_loop(int64_t, int) { fail("smmla_loop: AArch64 only"); }
double bfmmla_loop(int64_t, int) { fail("bfmmla_loop: AArch64 only"); }
}  // namespace qvl::neon

#endif
