#!/usr/bin/env bash
# `systemd-analyze verify` on deploy/qvl.service, with ExecStart pointed at
# the built binary (the unit names /usr/local/bin/qvl, absent on a build
# machine). Skips (exit 77) where systemd-analyze is not installed.
#   verify_unit.sh UNIT QVL_BINARY
set -euo pipefail
unit=$1 qvl=$2
if ! command -v systemd-analyze >/dev/null; then
  echo "verify_unit: systemd-analyze not found, skipped"; exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed "s|/usr/local/bin/qvl|$qvl|g" "$unit" > "$dir/qvl.service"
out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$dir/qvl.service" 2>&1) || {
  echo "$out"; echo "verify_unit: systemd-analyze verify failed"; exit 1; }
# verify exits 0 on some warnings (unknown settings, bad values): fail on those too.
if echo "$out" | grep -E "$dir/qvl.service" | grep -v "^$" ; then
  echo "verify_unit: warnings about the unit"; exit 1
fi
echo "$out"
echo "verify_unit: OK"
