#!/bin/sh
# The emulator of the arm64 cross-build (cmake/aarch64-linux-gnu.cmake): runs an
# aarch64 program under qemu-user on the CPU model QVL_QEMU_CPU names
# (default max: SVE, I8MM, BF16; cortex-a76: NEON with the dot product only),
# its libraries found under QVL_QEMU_SYSROOT (default /: the multiarch root
# it was built in). Read at every run, so one build is tested on any model.
exec qemu-aarch64 -cpu "${QVL_QEMU_CPU:-max}" -L "${QVL_QEMU_SYSROOT:-/}" "$@"
