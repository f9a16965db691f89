#!/usr/bin/env bash
# A Debian root of another release (debootstrap from Debian's own mirror), kept outside the repo,
# and commands run in it with the repo mounted at the same path as on the host. This is how qvl
# is built and tested on Debian 13 from a Debian 12 machine (docs/platforms.md).
#
#   scripts/distro-root.sh make SUITE [ROOT]             make the root unless it is complete
#   scripts/distro-root.sh run  SUITE [ROOT] -- CMD...   make it if needed, then run CMD inside, in the repo
#
# ROOT defaults to $QVL_ROOTS/SUITE (QVL_ROOTS: /var/tmp/qvl-roots). Needs root (debootstrap,
# mount, chroot; through sudo otherwise). A root is made once (minbase, a few minutes) and
# reused; one whose making was cut short is made again. The mounts (/proc, /sys, /dev, /dev/pts,
# /dev/shm and the repo) live in a mount namespace of their own and are also unmounted on exit,
# so nothing stays mounted on the host when CMD ends, fails or is interrupted.
set -euo pipefail

usage() {
  sed -n '6,7p' "$0" | sed 's/^# *//' >&2
  exit 2
}

# Anything mounted below the root (a run killed by SIGKILL outside a namespace) would be deleted
# with it.
mounted_below() { awk -v r="$root/" 'index($2, r) == 1 {print $2}' /proc/self/mounts; }

make_root() {
  local marker=$root/etc/qvl-root-complete
  if [ -f "$marker" ] && [ "$(cat "$marker")" = "$suite" ]; then return 0; fi
  if [ -n "$(mounted_below)" ]; then
    echo "distro-root: $root is incomplete and has mounts below it; unmount them first:" >&2
    mounted_below >&2
    exit 1
  fi
  command -v debootstrap >/dev/null || { echo "distro-root: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
  # Debian's own mirror, as the host reaches it (../shared/tools/container-setup.sh does the same).
  local mirror
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)
  [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  echo "distro-root: debootstrap $suite into $root from $mirror (once; a few minutes)" >&2
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.debootstrap.log" 2>&1 || {
    echo "distro-root: debootstrap failed; see $root.debootstrap.log" >&2
    exit 1
  }
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${mirror%/debian}/debian-security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -f "$root/etc/apt/sources.list"
  # Packages install without starting their services: the tests start postgres and nginx in
  # folders of their own, and a daemon left running would keep the root's mounts busy.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod 755 "$root/usr/sbin/policy-rc.d"
  echo "$suite" >"$marker"
}

mounts=()
unmount_all() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[i]}" 2>/dev/null || umount -R -l "${mounts[i]}" || true
  done
}
mnt() {  # mnt TARGET MOUNT-ARGS...
  local target=$1
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounts+=("$target")
}

# The certificate authorities the host trusts beyond Debian's (/usr/local/share/ca-certificates,
# e.g. a proxy's that inspects TLS), so npm reaches its registry from the root as from the host.
# ca-certificates, once install-deps has put it in the root, adds them to its store.
trust_host_cas() {
  local crt changed=
  for crt in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$crt" ] || continue
    mkdir -p "$root/usr/local/share/ca-certificates"
    cmp -s "$crt" "$root/usr/local/share/ca-certificates/${crt##*/}" && continue
    cp "$crt" "$root/usr/local/share/ca-certificates/"
    changed=1
  done
  if [ -n "$changed" ] && [ -x "$root/usr/sbin/update-ca-certificates" ]; then
    chroot "$root" /usr/sbin/update-ca-certificates >/dev/null
  fi
}

run_in_root() {
  local repo common
  repo=$(cd "$(dirname "$0")/.." && pwd -P)
  trap unmount_all EXIT
  trap 'exit 130' INT TERM
  mnt "$root/proc" -t proc proc
  mnt "$root/sys" --rbind /sys
  mnt "$root/dev" --bind /dev
  mnt "$root/dev/pts" --bind /dev/pts
  mnt "$root/dev/shm" -t tmpfs -o mode=1777,nosuid,nodev shm  # Chromium's shared memory
  mnt "$root$repo" --bind "$repo"
  # A git worktree's .git names the main repository's git folder: mount that too, read-only.
  common=$(git -C "$repo" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  if [ -n "$common" ] && [ "${common#"$repo"/}" = "$common" ]; then
    mnt "$root$common" --bind "$common"
    mount -o remount,bind,ro "$root$common"
  fi
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true  # npm's registry, apt's mirror
  trust_host_cas
  # A clean environment: the host's PATH, locale and tool settings stay out.
  env -i HOME=/root USER=root LOGNAME=root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    chroot "$root" /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$repo" "$@"
}

main() {
  [ $# -ge 2 ] || usage
  action=$1 suite=$2
  shift 2
  root=${QVL_ROOTS:-/var/tmp/qvl-roots}/$suite
  if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    root=$1
    shift
  fi
  case $action in
    make) [ $# -eq 0 ] || usage ;;
    run) { [ "${1:-}" = "--" ] && [ $# -ge 2 ]; } || usage; shift ;;
    *) usage ;;
  esac
  local again=("$action" "$suite" "$root")
  [ "$action" = make ] || again+=(--)
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "distro-root: needs root or sudo (debootstrap, mount, chroot)" >&2; exit 1; }
    exec sudo "$0" "${again[@]}" "$@"
  fi
  make_root
  if [ "$action" = make ]; then
    echo "distro-root: $root ($suite) is ready" >&2
    return 0
  fi
  # The mounts in a namespace of their own: they vanish with this process even if it is killed.
  if [ -z "${QVL_DISTRO_ROOT_NS:-}" ] && unshare --mount --propagation private true 2>/dev/null; then
    QVL_DISTRO_ROOT_NS=1 exec unshare --mount --propagation private "$0" "${again[@]}" "$@"
  fi
  run_in_root "$@"
}

main "$@"  # parsed whole before it runs: editing this file during a long run cannot derail it
