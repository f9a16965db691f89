#!/usr/bin/env bash
# Makes (idempotently) the Debian 12 amd64 root in which qvl is cross-built for arm64: the cross
# compiler, cmake, qemu-user and the arm64 (multiarch) -dev libraries the CMakeLists needs. The arm64
# packages go into this root, never onto the host, so the host's own packages stay as they are.
#
# Usage (as root): scripts/arm64-root.sh [ROOT]     default ROOT: $QVL_ARM64_ROOT or /var/tmp/qvl-roots/arm64-cross
# Once made, a second run only checks the stamp and returns. Delete the folder to start over.
set -euo pipefail

root=${1:-${QVL_ARM64_ROOT:-/var/tmp/qvl-roots/arm64-cross}}
suite=bookworm

# Tools run on the build machine (amd64); libraries are the target's (arm64).
host_packages=(
  crossbuild-essential-arm64 cmake make pkg-config ca-certificates
  qemu-user                                        # runs the tests: qemu-aarch64 -cpu <model> -L /
  nlohmann-json3-dev                               # header-only, Architecture: all
)
arm64_packages=(
  libhwy-dev libgtest-dev libgmock-dev libbenchmark-dev
  libcpp-httplib-dev libcurl4-openssl-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev
  libutf8proc-dev
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev
  libpoppler-cpp-dev libsqlite3-dev libpq-dev
)
packages=("${host_packages[@]}")
for p in "${arm64_packages[@]}"; do packages+=("$p:arm64"); done

stamp="$root/.qvl-arm64-root"
want="$suite ${packages[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "arm64-root: making $root needs root (debootstrap, chroot)" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "arm64-root: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

# The same mirror the host uses (Debian's own, or the one this machine is pointed at).
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

if [ ! -x "$root/usr/bin/apt-get" ]; then
  echo "arm64-root: debootstrap $suite into $root (a few minutes)" >&2
  mkdir -p "$root"
  debootstrap --variant=minbase --arch=amd64 "$suite" "$root" "$mirror" >/dev/null
fi

# apt sources: the host's files when it has them (same mirror, same snapshot), else the plain suite.
if [ -f /etc/apt/sources.list.d/debian.sources ]; then
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  rm -f "$root/etc/apt/sources.list"
elif [ -f /etc/apt/sources.list ]; then
  cp /etc/apt/sources.list "$root/etc/apt/"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  DEBIAN_FRONTEND=noninteractive "$@"; }
in_root dpkg --add-architecture arm64
in_root apt-get update -q >/dev/null
echo "arm64-root: installing ${#packages[@]} packages into $root" >&2
in_root apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null
in_root apt-get clean
echo "$want" > "$stamp"
echo "arm64-root: ready: $root" >&2
