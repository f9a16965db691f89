#!/usr/bin/env bash
# The Qwen3-VL family on this machine, random weights in the real shapes
# (issue 35): for each of 4B, 8B, 32B and 30B-A3B, a random bf16 checkpoint
# (make_random_model), its q4 (and q8 where it fits) weight cache made ahead
# (`qvl quantize`), and `qvl bench` on it under /usr/bin/time -v. Printed per
# model and format: decode tok/s and its fraction of the read bandwidth (over
# the bytes a token reads: attention, router and chosen experts for the MoE,
# lm_head, and the KV rows; `qvl bench`'s decode_weight_bytes_per_token is
# ModelWeights::decode_bytes), prefill tok/s (256 tokens) and its fraction of
# the multiply unit's peak, peak RSS, and the load time from the cache.
#
# 32B and 30B-A3B do not fit this machine's disk and memory whole (~67 and
# ~62 GB of bf16): they are made with their real widths and the first
# --layers N text layers (the vision tower whole), and the figures are scaled
# to the full depth with the byte and parameter counts `qvl info` gives from
# config.json alone (a bandwidth-bound decode step takes time in proportion
# to the bytes it reads; a compute-bound prefill in proportion to the
# multiply-adds, 2 per active text parameter outside the embedding tables;
# memory grows by the weights the extra layers add). Every file made is
# deleted when its model is done (the weight cache lives in the work folder,
# not ~/.cache). One model at a time: at most ~19 GB on disk (32B or
# 30B-A3B with 8 layers: a ~12 GB bf16 checkpoint + one weight cache).
#
#   bench/family.sh build                         # all four, the defaults
#   bench/family.sh build --sizes 4b --decode-tokens 8 --formats q4
#   bench/family.sh build --sizes 30b-a3b --layers 8 --llama /work/peers/llama.cpp
#
# Options:
#   --sizes "4b 8b 32b 30b-a3b"   which members (default all four)
#   --layers N                    text layers of 32B and 30B-A3B (default 8; 4B and 8B run whole)
#   --formats "q4 q8"             formats to measure (q8 is skipped where its weights would take more
#                                 than half the memory, as the default rule would)
#   --decode-tokens N             `qvl bench --decode-tokens` (default 32)
#   --threads N                   (default 2)
#   --work DIR                    scratch folder (default /tmp/qvl-family); emptied per model
#   --llama DIR                   also llama.cpp: its converter (through bench/peers.py gguf) makes a
#                                 Q4_0 GGUF of the same checkpoint and llama-bench decodes
#                                 --decode-tokens tokens with --threads threads (checked: the converter
#                                 takes the random 30B-A3B, fused experts and all). Converting holds a
#                                 BF16 GGUF as big as the checkpoint beside it: with 8 layers of the 32B
#                                 or the 30B-A3B ~29 GB in all, so with --llama give --layers 6 (~24 GB)
#   --keep                        keep each model's files (for a second look; mind the disk)
#
# Run it on a quiet machine: the figures are speeds. One JSON line per model
# and format goes to stdout (FAMILY {...}), a readable summary to stderr.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed 's/^# \{0,1\}//; /^set -euo/d'; }
[[ $# -ge 1 && $1 != -h && $1 != --help ]] || { usage; exit 2; }
BUILD=$(cd "$1" && pwd); shift
HERE=$(cd "$(dirname "$0")" && pwd)
SIZES="4b 8b 32b 30b-a3b"; LAYERS=8; FORMATS="q4 q8"; DECODE=32; THREADS=2
WORK=/tmp/qvl-family; LLAMA=""; KEEP=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --sizes) SIZES=$2; shift 2 ;;
    --layers) LAYERS=$2; shift 2 ;;
    --formats) FORMATS=$2; shift 2 ;;
    --decode-tokens) DECODE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --llama) LLAMA=$(cd "$2" && pwd); shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "family.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
QVL=$BUILD/qvl; MAKE=$BUILD/make_random_model
for f in "$QVL" "$MAKE" /usr/bin/time; do [[ -x $f ]] || { echo "family.sh: $f is missing (build qvl and make_random_model)" >&2; exit 1; }; done
CONFIGS=$(cd "$HERE/../tests/fixtures/configs" && pwd)
mkdir -p "$WORK"
log() { echo "family.sh: $*" >&2; }

# The figures of one bench run, scaled to the full depth, as one JSON line.
# Args: size format info_made.json info_full.json bench.json time.txt [llama_tok_s]
summarise() {
  python3 - "$@" <<'EOF'
import json, re, sys
size, fmt, info_made, info_full, bench, timev = sys.argv[1:7]
llama = float(sys.argv[7]) if len(sys.argv) > 7 and sys.argv[7] else None
made, full, b = (json.load(open(p)) for p in (info_made, info_full, bench))
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(timev).read()).group(1))
def layer_params(info):  # text parameters a prefill token multiplies (embedding tables out)
    t = info["text"]
    tables = t["vocab_size"] * t["hidden_size"] * (1 if info["tie_word_embeddings"] else 2)
    return info["parameters"]["text_active_per_token"] - tables
fm, ff = made["formats"][fmt], full["formats"][fmt]
decode_scale = fm["decode_bytes"] / ff["decode_bytes"]  # bandwidth-bound: time per token ~ bytes read
prefill_scale = layer_params(made) / layer_params(full)  # compute-bound: time per token ~ multiply-adds
out = {
    "model": size, "weights": b["weights"], "threads": b["threads"],
    "text_layers_measured": made["text"]["num_hidden_layers"], "text_layers_full": full["text"]["num_hidden_layers"],
    "decode_tok_s": b["decode_tok_s"],
    "decode_weight_bytes_per_token": b["decode_weight_bytes_per_token"],
    "decode_bandwidth_fraction": b["decode_bandwidth_fraction"],
    "read_bandwidth_gb_s": b["read_bandwidth_gb_s"],
    "prefill_tok_s_256": b["prefill_tok_s_256"],
    "prefill_unit_256": b.get("prefill_unit_256"),
    "prefill_unit_fraction_256": b.get("prefill_unit_fraction_256"),
    "peak_rss_bytes": rss_kb * 1024,
    "cached_load_s": b["load_s"],
    "full_decode_tok_s_est": b["decode_tok_s"] * decode_scale,
    "full_decode_weight_bytes_per_token": ff["decode_bytes"],
    "full_prefill_tok_s_256_est": b["prefill_tok_s_256"] * prefill_scale,
    "full_peak_rss_bytes_est": rss_kb * 1024 + ff["memory_bytes"] - fm["memory_bytes"],
    "full_cached_load_s_est": b["load_s"] * ff["memory_bytes"] / fm["memory_bytes"],
}
if llama is not None:
    out["llama_cpp_q4_0_decode_tok_s"] = llama
    out["llama_cpp_full_decode_tok_s_est"] = llama * decode_scale
print("FAMILY " + json.dumps(out))
g = lambda v: f"{v / 2**30:.1f} GiB"
layers_note = "" if out["text_layers_measured"] == out["text_layers_full"] else \
    f" ({out['text_layers_measured']} of {out['text_layers_full']} layers; full depth estimated)"
print(f"{size} {fmt}{layers_note}\n"
      f"  decode   {out['decode_tok_s']:.2f} tok/s, {out['decode_bandwidth_fraction']:.2f} of read bandwidth "
      f"({out['read_bandwidth_gb_s']:.1f} GB/s; {out['decode_weight_bytes_per_token'] / 1e6:.0f} MB of weights per token)"
      f" -> full {out['full_decode_tok_s_est']:.2f} tok/s\n"
      f"  prefill  {out['prefill_tok_s_256']:.1f} tok/s, {out['prefill_unit_fraction_256'] or 0:.2f} of the "
      f"{out['prefill_unit_256']} peak -> full {out['full_prefill_tok_s_256_est']:.1f} tok/s\n"
      f"  memory   peak RSS {g(out['peak_rss_bytes'])} -> full {g(out['full_peak_rss_bytes_est'])}\n"
      f"  load     {out['cached_load_s']:.2f} s from the weight cache -> full {out['full_cached_load_s_est']:.2f} s"
      + (f"\n  llama.cpp Q4_0 decode {llama:.2f} tok/s -> full {out['llama_cpp_full_decode_tok_s_est']:.2f} tok/s"
         if llama is not None else ""), file=sys.stderr)
EOF
}

# Decode tok/s of llama-bench on a Q4_0 GGUF made from DIR by llama.cpp's own
# converter (bench/peers.py gguf); empty, with the converter's complaint on
# stderr, when it refuses the checkpoint.
llama_decode() {
  local dir=$1 out=$WORK/gguf
  [[ -n $LLAMA ]] || return 0
  # The converter writes a BF16 GGUF as big as the checkpoint, then Q4_0 from it.
  local need=$(( $(du -cb "$dir"/*.safetensors | tail -1 | cut -f1) * 14 / 10 ))
  local free=$(( $(df -k --output=avail "$WORK" | tail -1) * 1024 ))
  if (( need > free )); then
    log "llama.cpp skipped for $(basename "$dir"): converting needs ~$((need >> 30)) GiB, $((free >> 30)) GiB free (fewer --layers?)"
    return 0
  fi
  if ! "$HERE/peers.py" gguf --llama "$LLAMA" --qvl "$QVL" --model "$dir" --out "$out" --types Q4_0 \
       > "$WORK/gguf.log" 2>&1; then
    log "llama.cpp's converter or llama-quantize failed on $(basename "$dir"):"; tail -5 "$WORK/gguf.log" >&2
    rm -rf "$out"; return 0
  fi
  rm -f "$out"/*-BF16.gguf "$out"/mmproj-*.gguf  # only the Q4_0 file is benchmarked
  "$LLAMA/build/bin/llama-bench" -m "$out/$(basename "$dir")-Q4_0.gguf" -t "$THREADS" -p 0 -n "$DECODE" -o json \
    2> "$WORK/llama-bench.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["avg_ts"])'
  rm -rf "$out"
}

for size in $SIZES; do
  case $size in
    4b|8b) layer_args=() ;;
    32b|30b-a3b) layer_args=(--layers "$LAYERS") ;;
    *) log "unknown size '$size' (4b, 8b, 32b, 30b-a3b)"; exit 2 ;;
  esac
  dir=$WORK/random-$size; cache=$WORK/weight-cache; full=$WORK/config-$size
  rm -rf "$dir" "$cache" "$full"
  mkdir -p "$full" && cp "$CONFIGS/qwen3-vl-$size/config.json" "$full/"
  log "$size: making the random checkpoint ${layer_args[*]}"
  "$MAKE" --out "$dir" --size "$size" "${layer_args[@]}" --threads "$THREADS" >&2
  "$QVL" info --model "$dir" --json > "$WORK/info-made.json"
  "$QVL" info --model "$full" --json > "$WORK/info-full.json"  # config.json alone: the full depth
  llama_tok_s=$(llama_decode "$dir")
  for fmt in $FORMATS; do
    if [[ $fmt == q8 ]] && ! python3 -c 'import json,sys; i=json.load(open(sys.argv[1])); sys.exit(i["formats"]["q8"]["memory_bytes"] * 2 > i["machine_memory_bytes"])' "$WORK/info-made.json"; then
      log "$size: q8 skipped (its weights would take more than half the memory)"; continue
    fi
    log "$size: qvl quantize --weights $fmt"
    QVL_WEIGHT_CACHE=$cache "$QVL" quantize --model "$dir" --weights "$fmt" --threads "$THREADS" >&2
    log "$size: qvl bench --weights $fmt"
    QVL_WEIGHT_CACHE=$cache /usr/bin/time -v -o "$WORK/time.txt" "$QVL" bench --model "$dir" --weights "$fmt" \
      --threads "$THREADS" --decode-tokens "$DECODE" --skip-page > "$WORK/bench.json"
    summarise "$size" "$fmt" "$WORK/info-made.json" "$WORK/info-full.json" "$WORK/bench.json" \
      "$WORK/time.txt" "$([[ $fmt == q4 ]] && echo "$llama_tok_s")"
    rm -rf "$cache"
  done
  [[ $KEEP == 1 ]] || rm -rf "$dir" "$cache" "$full"
done
[[ $KEEP == 1 ]] || rm -f "$WORK"/{bench.json,info-made.json,info-full.json,time.txt,gguf.log,llama-bench.log}
