#!/usr/bin/env bash
# `make test-arm64`: cross-builds qvl for arm64 in the root scripts/arm64-root.sh makes
# (made first if missing) and runs the kernel, model and engine tests under qemu-user on
# two CPU models (docs/platforms.md, "ARM64"):
#   cortex-a76  NEON with the dot product (SDOT); no I8MM, BF16 or SVE
#   max         everything qemu emulates: SVE/SVE2, I8MM (SMMLA), BF16 (BFDOT, BFMMLA)
# The repository is bind-mounted at its own path inside the root (a private mount
# namespace: nothing is left mounted), so the build folder works from either side.
#
# Environment: QVL_ARM64_ROOT (default /var/tmp/qvl-roots/arm64-cross), ARM64_BUILD
# (default build-arm64), ARM64_CPUS (default "cortex-a76 max"), ARM64_LABELS (ctest -L
# regex), ARM64_EXCLUDE (ctest -E regex), JOBS (default nproc). Needs root (debootstrap, chroot, mount): run through sudo.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
root=${QVL_ARM64_ROOT:-/var/tmp/qvl-roots/arm64-cross}
build=${ARM64_BUILD:-build-arm64}
cpus=${ARM64_CPUS:-cortex-a76 max}
jobs=${JOBS:-$(nproc)}
# Layers whose tests run in-process (gtest binaries, no subprocess or server):
# kernels, model (goldens), engine (generation goldens), and the layers beneath.
labels=${ARM64_LABELS:-^(ops|model|engine|io|util|tokenizer|image|grammar)$}
# The test executables of those labels (test_<layer>), so nothing else is built.
targets=${ARM64_TARGETS:-test_ops test_model test_engine test_io test_util test_tokenizer test_image test_grammar}
# Engine suites left out: constrained decoding and jump-forward (grammar masks over the
# whole vocabulary), thinking, choices, log-probabilities, caches and request checks are
# integer and string logic above the model, the same on any CPU, and slow under qemu
# (10-140 s a test; with them a run took over an hour). The engine's goldens, generation
# (Engine.*: the bit-identity of repeated requests), batched decode and video prompts stay.
exclude=${ARM64_EXCLUDE:-^(ConstrainedGenerations|Constrained|Thinking|EngineCache|EngineInfo|Choices|Logprobs|LogitBias|Validate|VideoPromptBudget|JumpForwardBatched)[.]|^Formats/(JumpForward|ThinkingJumpForward)[.]}

if [ "$(id -u)" -ne 0 ]; then
  echo "test-arm64: needs root for chroot and mounts; run: sudo make test-arm64" >&2
  exit 1
fi
"$repo/scripts/arm64-root.sh" "$root"

# The build runs in the root, the repository at the same path there.
inner=$(cat <<EOF
set -euo pipefail
cd "$repo"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
    -DQVL_BUILD_BENCH=OFF >/dev/null
fi
start=\$(date +%s)
cmake --build "$build" -j$jobs --target $targets
echo "test-arm64: built in \$((\$(date +%s) - start)) s" >&2
status=0
for cpu in $cpus; do
  echo "test-arm64: === qemu-aarch64 -cpu \$cpu ===" >&2
  t0=\$(date +%s)
  QVL_QEMU_CPU=\$cpu ctest --test-dir "$build" --output-on-failure -j$jobs -L '$labels' -E '$exclude' || status=1
  echo "test-arm64: -cpu \$cpu took \$((\$(date +%s) - t0)) s" >&2
done
exit \$status
EOF
)

exec unshare -m -- bash -c '
  set -e
  root=$1 repo=$2 inner=$3
  mkdir -p "$root$repo" "$root/proc" "$root/dev" "$root/sys"
  mount --bind "$repo" "$root$repo"
  mount -t proc proc "$root/proc"
  mount --bind /dev "$root/dev"
  mount --bind -o ro /sys "$root/sys" 2>/dev/null || true
  exec chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TMPDIR=/tmp bash -c "$inner"
' test-arm64 "$root" "$repo" "$inner"
