// Internal: included first by every Highway translation unit in ops/ so all
// of them compile the same set of targets. SSSE3/SSE4 are skipped to halve
// build time: a pre-AVX2 x86-64 runs the portable EMU128 code instead, and
// ARM builds its own NEON/SVE targets.
#pragma once

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#endif
