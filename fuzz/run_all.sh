#!/usr/bin/env bash
# Fuzzes every target for MINUTES each, one after another, with the libFuzzer
# build in BUILD_FUZZ (default /work/build-fuzz or build-fuzz beside the repo;
# fuzz/README.md says how to configure it). New inputs go to a working corpus
# per target under $BUILD_FUZZ/corpus-work/<name>, seeded from fuzz/corpus/<name>;
# crashes land in $BUILD_FUZZ/artifacts/<name>/. Prints one line per target:
# its name, runs, and whether it found anything.
#   fuzz/run_all.sh 10            # all targets, 10 minutes each
#   fuzz/run_all.sh 5 tokenizer   # the named targets only
set -uo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 MINUTES [target...]" >&2
  exit 2
fi
minutes=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_FUZZ:-$repo/build-fuzz}
if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for src in "$repo"/fuzz/fuzz_*.cpp; do
    name=$(basename "$src" .cpp)
    targets+=("${name#fuzz_}")
  done
fi

status=0
for name in "${targets[@]}"; do
  bin=$build/fuzz/fuzz_$name
  if [ ! -x "$bin" ]; then
    echo "$name: $bin not built (cmake --build $build --target fuzz_$name)" >&2
    status=1
    continue
  fi
  work=$build/corpus-work/$name
  artifacts=$build/artifacts/$name
  log=$build/logs/$name.log
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  LSAN_OPTIONS=suppressions=$repo/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS} \
    nice -n 10 "$bin" -max_total_time=$((minutes * 60)) -timeout=60 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "$repo/fuzz/corpus/$name" >"$log" 2>&1
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  if [ $rc -eq 0 ]; then
    echo "$name: ${runs:-?} runs in $minutes min, nothing found"
  else
    echo "$name: ${runs:-?} runs, FOUND a failure (exit $rc): see $log and $artifacts/"
    status=1
  fi
done
exit $status
