#!/bin/sh
# Tokenizer encode speed, qvl vs Hugging Face's Rust tokenizers, single-threaded,
# on the same ~1 MB of generated English/Chinese/code text, in the same run;
# also checks that both produce the same ids.
#   bench/tokenizer_vs_hf.sh [BUILD_DIR] [TOKENIZER_JSON]
# Needs node + npm (installs @anush008/tokenizers into bench/tokenizer once).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build}
tokenizer=${2:-$root/tests/fixtures/tiny-qwen3vl/tokenizer.json}
runs=${RUNS:-5}

if [ ! -d "$here/tokenizer/node_modules/@anush008/tokenizers" ]; then
  (cd "$here/tokenizer" && npm install --no-audit --no-fund --silent)
fi
if [ ! -x "$build/bench/tokenizer_speed" ]; then
  cmake --build "$build" --target tokenizer_speed
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$here/tokenizer/make_corpus.js" > "$tmp/corpus.txt"

# One process at a time, each on one thread: the figures are comparable.
# "whole": the text as one input; "lines": each line as its own input.
for mode in whole lines; do
  flag=; [ "$mode" = lines ] && flag=--lines
  "$build/bench/tokenizer_speed" --tokenizer "$tokenizer" --text "$tmp/corpus.txt" --runs "$runs" \
    --ids-out "$tmp/qvl_ids_$mode.json" $flag > "$tmp/qvl_$mode.json"
  (cd "$here/tokenizer" && RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false \
    node hf_encode.js "$tokenizer" "$tmp/corpus.txt" "$runs" "$tmp/hf_ids_$mode.json" "$mode") > "$tmp/hf_$mode.json"
done

node -e '
const fs = require("fs");
const dir = process.argv[1];
const read = (f) => fs.readFileSync(dir + "/" + f, "utf8");
let ok = true;
const report = {};
for (const mode of ["whole", "lines"]) {
  const qvl = JSON.parse(read(`qvl_${mode}.json`)), hf = JSON.parse(read(`hf_${mode}.json`));
  const same = read(`qvl_ids_${mode}.json`) === read(`hf_ids_${mode}.json`);
  ok = ok && same;
  report[mode] = { identical_ids: same, tokens: qvl.tokens,
    qvl_mb_per_s: +qvl.mb_per_s_median.toFixed(2), hf_mb_per_s: +hf.mb_per_s_median.toFixed(2),
    qvl_over_hf: +(qvl.mb_per_s_median / hf.mb_per_s_median).toFixed(2),
    qvl_mb_per_cpu_s: +qvl.mb_per_cpu_s_median.toFixed(2), hf_mb_per_cpu_s: +hf.mb_per_cpu_s_median.toFixed(2),
    qvl_over_hf_cpu: +(qvl.mb_per_cpu_s_median / hf.mb_per_cpu_s_median).toFixed(2),
    qvl_mb_per_s_cold: +qvl.mb_per_s_cold.toFixed(2), hf_mb_per_s_cold: +hf.mb_per_s_cold.toFixed(2), qvl, hf };
}
console.log(JSON.stringify({ text_bytes: report.whole.qvl.bytes, ...report }, null, 1));
if (!ok) { console.error("ids differ between qvl and Hugging Face"); process.exit(1); }
' "$tmp"
