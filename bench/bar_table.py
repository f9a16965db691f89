#!/usr/bin/env python3
"""Puts `qvl bench` figures beside the llama.cpp bar of issue 9.

usage: bench/bar_table.py BF16.json Q8.json Q4.json   (outputs of `qvl bench --weights W`)

The bar was measured on another 2-core machine (FP32 FMA peak 176-180 GFLOP/s, read
bandwidth 33-55 GB/s), so besides the raw ratio each speed is also compared as a fraction
of the machine's limit: compute-bound figures (vision, prefill) against the FMA peak each
`qvl bench` run measures, decode against the read bandwidth it measures. llama.cpp's
fractions are the issue's own (vision ~64 % of peak, F16 decode 63-72 % of bandwidth,
Q8_0/Q4 ~40 %); its prefill fraction is derived here from its time and the same FLOP count.
"""
import json
import sys

BAR_PEAK = 178.0  # GFLOP/s, middle of 176-180

# llama.cpp on the bar machine (issue 9). Ranges as (low, high); None: not given.
BAR = {
    "bf16": {"vision_s": (5.0, 5.6), "prefill_s": (4.3, 5.7), "decode": (8.0, 10.6), "decode_bw": (0.63, 0.72),
             "rss_gb": 4.8, "load_s": (1.5, 1.7)},
    "q8": {"vision_s": (5.0, 5.6), "prefill_s": (5.3, 5.3), "decode": (13.0, 14.0), "decode_bw": (0.40, 0.40),
           "rss_gb": 3.2, "load_s": (1.7, 1.7)},
    "q4": {"vision_s": (4.6, 4.9), "prefill_s": (4.1, 4.4), "decode": (19.7, 21.0), "decode_bw": (0.40, 0.40),
           "rss_gb": 3.2, "load_s": (2.0, 2.3)},
}
GOAL = {"vision": 1.5, "prefill": 1.5, "ttft": 1 / 0.6, "decode": {"bf16": 1.1, "q8": 1.3, "q4": 1.3},
        "rss_gb": {"q8": 2.3, "q4": 1.6}, "load_s": {"bf16": 0.3, "q8": 3.0, "q4": 3.0}}


def prefill_flops(cfg, n):
    """2 x multiply-adds of an n-token text prefill (projections, MLP, causal attention, one lm_head row)."""
    h, q, kv = cfg["hidden"], cfg["q"], cfg["kv"]
    per_token = h * (q + 2 * kv) + q * h + 3 * h * cfg["inter"]
    return cfg["layers"] * (2 * per_token * n + 4 * q * n * (n + 1) / 2) + 2 * h * cfg["vocab"]


QWEN3_VL_2B = {"hidden": 2048, "q": 16 * 128, "kv": 8 * 128, "inter": 6144, "layers": 28, "vocab": 151936}


def fmt_range(r, unit=""):
    lo, hi = r
    return f"{lo:g}{unit}" if lo == hi else f"{lo:g}-{hi:g}{unit}"


def row(name, ours, bar, raw, norm, goal):
    print(f"| {name} | {ours} | {bar} | {raw} | {norm} | {goal} |")


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    print("| figure | qvl (this machine) | llama.cpp bar | raw ratio | ratio at equal machine limits | goal |")
    print("|---|---|---|---|---|---|")
    for j in runs:
        w = j["weights"]
        b = BAR[w]
        peak, bw = j["fma_peak_gflop_s"], j["read_bandwidth_gb_s"]
        scale = peak / BAR_PEAK  # how much faster this machine computes than the bar's
        mode = w + (" --precision fast" if j.get("fast_bf16_matmul") else "") + f", KV {j.get('kv_type', 'f32')}"
        print(f"| **{mode}** (FMA peak {peak:.0f} GFLOP/s, read {bw:.1f} GB/s, {j['threads']} threads) | | | | | |")
        if "vision_ms_448x448" in j:
            v = j["vision_ms_448x448"] / 1e3
            frac = j["vision_fma_fraction_448x448"]
            row("vision 448x448", f"{v:.2f} s ({frac:.0%} of peak)", f"{fmt_range(b['vision_s'], ' s')} (~64 %)",
                f"{b['vision_s'][0] / v:.2f}x", f"{frac / 0.64:.2f}x", f">= {GOAL['vision']}x")
        pf = j["prefill_fma_fraction_256"]
        t212 = 212 / j["prefill_tok_s_256"]
        bar_frac = [prefill_flops(QWEN3_VL_2B, 212) / s / 1e9 / BAR_PEAK for s in b["prefill_s"]]
        row("prefill (212 tokens)", f"{t212:.2f} s ({pf:.0%} of peak)",
            f"{fmt_range(b['prefill_s'], ' s')} ({bar_frac[0]:.0%})", f"{b['prefill_s'][0] / t212:.2f}x",
            f"{pf / bar_frac[0]:.2f}x", f">= {GOAL['prefill']}x")
        if "start_to_first_token_s" in j:
            ttft = j["start_to_first_token_s"]
            bar_ttft = b["load_s"][0] + b["vision_s"][0] + b["prefill_s"][0]
            row("load + image + question to first token", f"{ttft:.2f} s", f"~{bar_ttft:.1f} s",
                f"{bar_ttft / ttft:.2f}x", f"{bar_ttft / (ttft * scale):.2f}x", "<= 0.6x the time")
        if "followup_first_token_ms_448x448" in j:
            row("follow-up question, same image", f"{j['followup_first_token_ms_448x448'] / 1e3:.2f} s", "-", "", "",
                "<= 1 s")
        if "repeat_image_first_token_ms_448x448" in j:
            row("new request, same image and prefix", f"{j['repeat_image_first_token_ms_448x448'] / 1e3:.2f} s", "-",
                "", "", "")
        d, df = j["decode_tok_s"], j["decode_bandwidth_fraction"]
        row("decode", f"{d:.2f} tok/s ({df:.0%} of read BW)",
            f"{fmt_range(b['decode'], ' tok/s')} ({fmt_range(tuple(round(x * 100) for x in b['decode_bw']), ' %')})",
            f"{d / b['decode'][1]:.2f}x", f"{df / b['decode_bw'][1]:.2f}x", f">= {GOAL['decode'][w]}x")
        for n in (2, 4):
            k = f"decode_streams_{n}_vs_1"
            if k in j:
                row(f"decode, {n} streams together", f"{j[f'decode_tok_s_{n}_streams']:.2f} tok/s = {j[k]:.2f}x of 1",
                    "-", "", "", ">= 1.7x" if n == 2 else ">= 2.8x")
        rss = j["peak_rss_bytes"] / 1e9
        goal = f"<= {GOAL['rss_gb'][w]} GB" if w in GOAL["rss_gb"] else \
            f"<= 1.05 x weights + KV = {1.05 * j['weight_bytes'] / 1e9:.2f} GB + KV"
        row("peak RSS (whole bench)", f"{rss:.2f} GB", f"{b['rss_gb']} GB", f"{b['rss_gb'] / rss:.2f}x", "", goal)
        row("load (page cache warm)", f"{j['load_s']:.2f} s", fmt_range(b["load_s"], " s"),
            f"{b['load_s'][0] / j['load_s']:.2f}x", "", f"<= {GOAL['load_s'][w]} s")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
