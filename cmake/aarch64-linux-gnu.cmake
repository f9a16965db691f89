# Cross-build for arm64 (aarch64) with Debian's cross compiler and the arm64
# libraries installed through multiarch (dpkg --add-architecture arm64), as
# scripts/arm64-root.sh sets up in a root of its own (docs/platforms.md):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Tests and discovery run through qemu-user (scripts/qemu-aarch64.sh, which
# reads the CPU model from QVL_QEMU_CPU at each run), so ctest works as on
# the build machine with no binfmt_misc registration.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: the target's libraries in /usr/lib/aarch64-linux-gnu (find_library
# and find_package search there first), its headers in /usr/include.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# pkg-config reads the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(CMAKE_CROSSCOMPILING_EMULATOR "${CMAKE_CURRENT_LIST_DIR}/../scripts/qemu-aarch64.sh")
