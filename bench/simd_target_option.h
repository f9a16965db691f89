// `--target NAME` for the kernel benchmarks: the same ceiling as
// QVL_SIMD_TARGET (src/ops/cpu_features.h), which a process reads once when
// it starts, so the option re-executes the benchmark with the variable set.
// Highway then dispatches to nothing better and the hand-written VNNI, BF16
// and AMX kernels step aside too, as they do for qvl itself (restricting
// Highway's targets alone left those kernels running under "--target AVX2").
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace qvl::bench {

// Called with argv[i] == "--target" and argv[i + 1] the name: execs this
// program again without those two arguments and with QVL_SIMD_TARGET=NAME.
// Returns only on failure (exit status 2 then). An unknown or unsupported
// name is refused by the new process itself (exit 2, or 77 for a target this
// CPU cannot run).
[[nodiscard]] inline int reexec_under_simd_target(int argc, char** argv, int i) {
  if (setenv("QVL_SIMD_TARGET", argv[i + 1], 1) != 0) {
    std::fprintf(stderr, "%s: --target %s: setenv: %s\n", argv[0], argv[i + 1], std::strerror(errno));
    return 2;
  }
  std::vector<char*> args;
  for (int k = 0; k < argc; ++k)
    if (k != i && k != i + 1) args.push_back(argv[k]);
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
  std::fprintf(stderr, "%s: --target %s: cannot re-execute /proc/self/exe: %s\n", argv[0], argv[i + 1],
               std::strerror(errno));
  return 2;
}

}  // namespace qvl::bench
