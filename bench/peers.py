#!/usr/bin/env python3
"""qvl beside its peers on the same image and prompt: llama.cpp and the seeds' PyTorch stack.

Each stack answers "Describe this image in detail." (the question the PyTorch baseline's bench.py
asks) about the same synthetic 448x448 PNG (196 image tokens), and about a synthetic 896x1152
document page (1008 image tokens); the PNGs are written here, deterministically. Figures per stack:

  vision_s            vision encoder, 448x448 image
  first_token_s       image + question -> first token, from pixels in memory (vision + prefill +
                      the first sample; PNG decoding and model loading left out for every stack)
  decode_tok_s        decode speed after that prompt (qvl and llama.cpp: --decode-tokens tokens;
                      PyTorch: bench.py's median of 12 steps)
  peak_rss_gb         peak resident memory of the whole process (load, vision, prefill, decode),
                      measured here the same way for every stack (wait4's ru_maxrss)
  load_s              model load as each tool reports it (not comparable across tools: qvl converts
                      to q8/q4 at load, llama.cpp reads GGUF files made ahead, PyTorch reads bf16)
  page_vision_s, page_first_token_s, page_peak_rss_gb   the same for the 896x1152 page
  prompt_tokens, page_prompt_tokens                     to check every stack saw the same prompt

Each figure is the median over --rounds rounds; the stacks run one after another, in reverse order
on every other round, so a drift of the machine hits all of them alike. Ratios are qvl/peer of the
raw figures, per pair (every qvl weight format against every peer): for seconds and GB below 1
means qvl is ahead, for tok/s above 1 does. Absolute times drift with the machine; the ratios from
one run are the figures to quote. One JSON object goes to stdout, a readable table to stderr.

Stacks (each optional; one not given is skipped with a message):
  qvl          --qvl build/qvl --model DIR [--qvl-weights q8,q4,bf16]       (`qvl run` JSON timings)
  llama.cpp    --llama-bin DIR --gguf TEXT.gguf [--gguf ...] --mmproj MMPROJ.gguf
               (llama-mtmd-cli's own timing lines)
  PyTorch      --pytorch /work/shared/baselines/pytorch [--torch-dtype bfloat16]
               (its bench.py, run with --torch-python, Debian's /usr/bin/python3 with python3-torch)

Threads: --threads (default 2) for qvl and llama.cpp; the PyTorch bench.py is fixed at 2.

Making the llama.cpp side (outside the repo; nothing of it is committed):

  # (a) build llama.cpp, CPU only: a source tree of ggml-org/llama.cpp with Qwen3-VL support (from
  #     November 2025 on; this script was checked with upstream 82bb48500a9a of 2026-08-07, whose
  #     llama-mtmd-cli prints the timing lines it reads with -lv 4)
  cd /work/peers/llama.cpp
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_OPENSSL=OFF \\
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \\
        -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_APP=OFF -DBUILD_SHARED_LIBS=OFF
  nice -n 15 cmake --build build -j2 --target llama-mtmd-cli llama-quantize

  # (b) GGUF files from the same random checkpoint qvl reads (build/make_random_model --out DIR).
  #     Needs Debian's python3-torch python3-numpy python3-sentencepiece python3-tqdm python3-yaml.
  #     transformers is not packaged: bench/peers_shim/transformers gives the converter the little it
  #     uses (tokenizer.json's vocabulary; encode() through `qvl tokenize`, which the converter
  #     hashes to pick the "qwen2" pre-tokenizer), and bench/peers_shim/convert.py stands in for
  #     the float8 dtypes torch 1.13 lacks. The converter itself runs unchanged. One command does it:
  bench/peers.py gguf --llama /work/peers/llama.cpp --qvl build/qvl --model /work/models/random-2b \\
        --out /work/peers/gguf            # prints and runs the commands below:
  #   QVL_BIN=build/qvl PYTHONPATH=LLAMA/gguf-py:bench/peers_shim /usr/bin/python3 \\
  #     bench/peers_shim/convert.py LLAMA/convert_hf_to_gguf.py MODEL --outtype bf16 --outfile OUT/random-2b-BF16.gguf
  #   ... the same with --mmproj --outtype f16 --outfile OUT/mmproj-random-2b-F16.gguf
  #   LLAMA/build/bin/llama-quantize OUT/random-2b-BF16.gguf OUT/random-2b-Q8_0.gguf Q8_0   (and Q4_0)

  # (c) the comparison
  nice -n 15 bench/peers.py --qvl build/qvl --model /work/models/random-2b --qvl-weights q8,q4 \\
        --llama-bin /work/peers/llama.cpp/build/bin --mmproj /work/peers/gguf/mmproj-random-2b-F16.gguf \\
        --gguf /work/peers/gguf/random-2b-Q8_0.gguf --gguf /work/peers/gguf/random-2b-Q4_0.gguf \\
        --pytorch /work/shared/baselines/pytorch --rounds 3 > peers.json

Video (--video): the same question about one clip, qvl and llama.cpp only (the PyTorch baseline has
no video path). The clip is 10 s of 640x360 at 30 fps, H.264 in MP4 (ffmpeg's moving testsrc2 pattern,
--video-seconds to shorten it for a quick check), written to the work folder by the ffmpeg program.
llama-mtmd-cli decodes video through that same program (its mtmd-helper runs ffmpeg/ffprobe from
PATH), so --video needs it: on Debian `apt-get install -y ffmpeg`. It is a bench-only tool: qvl itself
decodes video with the FFmpeg libraries and never runs ffmpeg (scripts/install-deps.sh leaves it out).
Figures per stack, each the median over --rounds:

  video_decode_s        qvl: the clip's bytes to its sampled RGB frames (`qvl run`'s image_decode_ms);
                        llama.cpp: not reported by its log (ffmpeg runs as a child before encoding)
  video_vision_s        vision encoder over all the frames it keeps
  video_first_token_s   frames in memory -> first token (qvl: generate()'s first_token_ms; llama.cpp:
                        prompt eval, which spans its encoder, see mtmd_first_token_ms)
  video_peak_rss_gb     peak resident memory of the whole process (wait4's ru_maxrss; for llama.cpp
                        the largest of it and its ffmpeg children)
  video_prompt_tokens   the whole prompt: qvl samples 2 fps within --max-video-tokens with Qwen's
                        timestamps; llama.cpp 4 fps at the native size, so the two prompts differ
  video_frames          qvl: frames kept (`qvl run --verbose`), two per temporal group
  video_media_chunks    llama.cpp: media chunks it encoded (its -lv 4 log), one per frame group

  bench/peers.py --video --qvl build/qvl --model /work/models/random-2b --qvl-weights q8 \\
        --llama-bin /work/peers/llama.cpp/build/bin --mmproj /work/peers/gguf/mmproj-random-2b-F16.gguf \\
        --gguf /work/peers/gguf/random-2b-Q8_0.gguf --ctx 16384 --decode-tokens 8 > peers-video.json

Standard library only (the PyTorch baseline brings its own imports).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

PROMPT = "Describe this image in detail."  # bench.py's question: ids 74785 419 2168 304 7716 13
SIZE_448 = (448, 448)
SIZE_PAGE = (896, 1152)  # 28 x 36 merged patches = 1008 image tokens
HERE = Path(__file__).resolve().parent

# Figures, how each reads (unit), and whether lower is better.
FIGURES = [
    ("vision_s", "s", True), ("first_token_s", "s", True), ("decode_tok_s", "tok/s", False),
    ("peak_rss_gb", "GB", True), ("page_vision_s", "s", True), ("page_first_token_s", "s", True),
    ("page_peak_rss_gb", "GB", True), ("load_s", "s", True),
]
VIDEO_FIGURES = [
    ("video_decode_s", "s", True), ("video_vision_s", "s", True), ("video_first_token_s", "s", True),
    ("video_peak_rss_gb", "GB", True), ("decode_tok_s", "tok/s", False),
]
VIDEO_PROMPT = "What happens in this video?"
VIDEO_SIZE, VIDEO_FPS = (640, 360), 30


# ---------------------------------------------------------------------------------------- images

def write_png(path, width, height, page):
    """A deterministic RGB PNG: colour gradients, or dark text-like lines on white for a page."""
    rows = []
    for y in range(height):
        row = bytearray(b"\0")  # filter: none
        if page:
            line = (y % 24) < 12 and 64 <= y < height - 64
            for x in range(width):
                ink = line and 64 <= x < width - 64 and ((x * 7 + y) // 40) % 5 != 0
                v = 30 if ink else 250
                row += bytes((v, v, v))
        else:
            for x in range(width):
                row += bytes(((x * 255) // (width - 1), (y * 255) // (height - 1), ((x ^ y) * 3) & 255))
        rows.append(bytes(row))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    Path(path).write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) +
                           chunk(b"IDAT", zlib.compress(b"".join(rows), 6)) + chunk(b"IEND", b""))


# ------------------------------------------------------------------------------------- processes

def run(cmd, env=None, log=None):
    """Runs cmd to completion; returns (stdout, stderr, wall seconds, peak RSS bytes)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             env=dict(os.environ, **(env or {})))
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        so, se = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"$ {shlex.join(cmd)}\n--- stdout\n{so}\n--- stderr\n{se}\n")
    if p.returncode != 0:
        tail = "\n".join(se.strip().splitlines()[-5:])
        raise RuntimeError(f"{Path(cmd[0]).name} exited with {p.returncode}:\n{tail}")
    return so, se, wall, usage.ru_maxrss * 1024  # ru_maxrss is in KiB on Linux


# ------------------------------------------------------------------------------------------ qvl

def qvl_run(a, weights, image, max_tokens):
    so, _, wall, rss = run([a.qvl, "run", "--model", a.model, "--weights", weights, "--threads", str(a.threads),
                            "--ctx-size", str(a.ctx), "--image", str(image), "--prompt", PROMPT,
                            "--max-tokens", str(max_tokens), "--ignore-eos", "--temperature", "0",
                            "--output-format", "json"], log=a.log)
    j = json.loads(so)
    t = j["timings"]
    return {
        "vision_s": t["vision_ms"] / 1e3,
        # first_token_ms counts from reading the file; PNG decoding and preprocessing are taken out
        # so that every stack starts from pixels in memory.
        "first_token_s": (t["first_token_ms"] - t.get("image_decode_ms", 0) - t.get("image_preprocess_ms", 0)) / 1e3,
        "decode_tok_s": t.get("decode_tok_s"),
        "prompt_tokens": j["usage"]["prompt_tokens"],
        "completion_tokens": j["usage"]["completion_tokens"],
        "load_s": t["load_ms"] / 1e3,
        "peak_rss_gb": rss / 1e9,
        "wall_s": wall,
    }


class Qvl:
    kind = "qvl"

    def __init__(self, a, weights):
        self.a, self.weights = a, weights
        self.name = f"qvl {weights}"
        self.family = weights

    def video(self, clip):
        r = qvl_video(self.a, self.weights, clip)
        return r

    def measure(self, img448, page):
        r = qvl_run(self.a, self.weights, img448, self.a.decode_tokens)
        if page:
            p = qvl_run(self.a, self.weights, page, 1)
            r.update(page_vision_s=p["vision_s"], page_first_token_s=p["first_token_s"],
                     page_prompt_tokens=p["prompt_tokens"], page_peak_rss_gb=p["peak_rss_gb"])
        return r


def qvl_video(a, weights, clip):
    so, se, wall, rss = run([a.qvl, "run", "--model", a.model, "--weights", weights, "--threads", str(a.threads),
                            "--ctx-size", str(a.ctx), "--video", str(clip), "--prompt", VIDEO_PROMPT,
                            "--max-tokens", str(a.decode_tokens), "--ignore-eos", "--temperature", "0",
                            "--output-format", "json", "--verbose"], log=a.log)
    j = json.loads(so.strip().splitlines()[-1])
    t = j["timings"]
    r = {
        "video_decode_s": t["image_decode_ms"] / 1e3,
        "video_vision_s": t["vision_ms"] / 1e3,
        "video_first_token_s": t["first_token_ms"] / 1e3,
        "video_prompt_tokens": j["usage"]["prompt_tokens"],
        "video_peak_rss_gb": rss / 1e9,
        "decode_tok_s": t.get("decode_tok_s"),
        "wall_s": wall,
    }
    m = re.search(r": (\d+) of (\d+) frames sampled", se)  # `qvl run --verbose`
    if m:
        r["video_frames"] = int(m.group(1))
    return r


# ------------------------------------------------------------------------------------ llama.cpp

_NUM = r"([0-9]+(?:\.[0-9]+)?)"


def parse_mtmd_timings(log):
    """Figures from llama-mtmd-cli's log (stderr, with -lv 4): vision encode, prompt eval, eval, load.

    The image's encoder time is the "mtmd batch encoding done in N ms" line (older builds: "image
    slice encoded in N ms"); the image embeddings' decode is "image decoded (batch i/n) in N ms";
    llama_perf's "prompt eval time" covers everything decoded before the first sample and its
    "eval time" the decoded tokens.
    """
    r = {}
    enc = re.findall(r"mtmd batch encoding done in " + _NUM + " ms", log) or \
        re.findall(r"image slice encoded in " + _NUM + " ms", log)
    if enc:
        r["vision_ms"] = sum(float(x) for x in enc)
    dec = re.findall(r"image decoded \(batch \d+/\d+\) in " + _NUM + " ms", log)
    if dec:
        r["image_decode_ms"] = sum(float(x) for x in dec)
    m = re.search(r"prompt eval time =\s*" + _NUM + r" ms /\s*(\d+) tokens", log)
    if m:
        r["prompt_eval_ms"], r["prompt_tokens"] = float(m.group(1)), int(m.group(2))
    m = re.search(r"\beval time =\s*" + _NUM + r" ms /\s*(\d+) runs", log.replace("prompt eval time", "prompt_eval"))
    if m:
        r["eval_ms"], r["eval_runs"] = float(m.group(1)), int(m.group(2))
    m = re.search(r"load time =\s*" + _NUM + " ms", log)
    if m:
        r["load_ms"] = float(m.group(1))
    m = re.search(r"n_tokens_batch = (\d+)", log)
    if m:
        r["image_tokens_first_batch"] = int(m.group(1))
    chunks = re.findall(r"encoding mtmd batch, n_chunks = (\d+)", log)  # an image, or a video's frame group
    if chunks:
        r["media_chunks"] = sum(int(c) for c in chunks)
    return r


def mtmd_first_token_ms(t):
    """Image + question -> first token from parse_mtmd_timings' figures; and whether llama_perf's
    prompt eval time already spans the vision encoder.

    llama_context times a prompt from its first decode to the synchronize that reads logits
    (t_compute_start_us is reset only there), and mtmd-cli decodes the text before the image, encodes
    the image, then decodes its embeddings and the text after it with no synchronize in between: so
    "prompt eval time" spans the encoder too (82bb48500a9a). Should a build synchronize earlier, the
    span is shorter than encoder + image decode, and the encoder is added.
    """
    spans = t["prompt_eval_ms"] >= t["vision_ms"] + t.get("image_decode_ms", 0)
    return (t["prompt_eval_ms"] if spans else t["vision_ms"] + t["prompt_eval_ms"]), spans


def gguf_family(path):
    """The weight format in a GGUF file's name (random-2b-Q8_0.gguf -> Q8_0), else its stem."""
    m = re.search(r"(IQ\d\w*|Q\d_K(?:_[SML])?|Q\d_\d|BF16|F16|F32)", Path(path).name, re.I)
    return m.group(1).upper() if m else Path(path).stem


class Llama:
    kind = "llama.cpp"

    def __init__(self, a, gguf):
        self.a, self.gguf = a, gguf
        self.family = gguf_family(gguf)
        self.name = f"llama.cpp {self.family}"
        self.cli = str(Path(a.llama_bin) / "llama-mtmd-cli")

    def mtmd(self, media, prompt, n):
        """One llama-mtmd-cli answer about `media` (an image, or a clip its helper decodes): its timing
        lines, the first token's ms and whether prompt eval spans the encoder, wall s, peak RSS bytes."""
        a = self.a
        _, se, wall, rss = run([self.cli, "-m", self.gguf, "--mmproj", a.mmproj, "--image", str(media), "-p", prompt,
                                "-n", str(n), "--temp", "0", "--ignore-eos", "-t", str(a.threads),
                                "-c", str(a.ctx), "-lv", "4"], log=a.log)  # -lv 4: the timing lines
        t = parse_mtmd_timings(se)
        missing = {"vision_ms", "prompt_eval_ms"} - t.keys()
        if missing:
            raise RuntimeError(f"llama-mtmd-cli printed no {', '.join(sorted(missing))}; see --log")
        first_ms, spans_vision = mtmd_first_token_ms(t)
        return t, first_ms, spans_vision, wall, rss

    def one(self, image, n):
        t, first_ms, spans_vision, wall, rss = self.mtmd(image, PROMPT, n)
        r = {
            "vision_s": t["vision_ms"] / 1e3,
            "first_token_s": first_ms / 1e3,
            "prompt_eval_spans_vision": spans_vision,
            "prompt_tokens": t["prompt_tokens"],
            "load_s": t.get("load_ms", 0) / 1e3,
            "peak_rss_gb": rss / 1e9,
            "wall_s": wall,
        }
        if t.get("eval_runs") and t["eval_ms"] > 0:  # -n 1 samples once and decodes nothing timed
            r["decode_tok_s"] = t["eval_runs"] / (t["eval_ms"] / 1e3)
        return r

    def video(self, clip):
        t, first_ms, spans_vision, wall, rss = self.mtmd(clip, VIDEO_PROMPT, self.a.decode_tokens)
        r = {
            "video_vision_s": t["vision_ms"] / 1e3,
            "video_first_token_s": first_ms / 1e3,
            "prompt_eval_spans_vision": spans_vision,
            "video_prompt_tokens": t["prompt_tokens"],
            "video_peak_rss_gb": rss / 1e9,
            "wall_s": wall,
        }
        if "media_chunks" in t:
            r["video_media_chunks"] = t["media_chunks"]
        if t.get("eval_runs") and t["eval_ms"] > 0:
            r["decode_tok_s"] = t["eval_runs"] / (t["eval_ms"] / 1e3)
        return r

    def measure(self, img448, page):
        r = self.one(img448, self.a.decode_tokens)
        if page:
            p = self.one(page, 1)
            r.update(page_vision_s=p["vision_s"], page_first_token_s=p["first_token_s"],
                     page_prompt_tokens=p["prompt_tokens"], page_peak_rss_gb=p["peak_rss_gb"])
        return r


# -------------------------------------------------------------------------------------- PyTorch

def parse_torch_bench(stdout):
    """bench.py prints progress lines and, last, one JSON object."""
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{") and line.rstrip().endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise RuntimeError("bench.py printed no JSON line")


class Torch:
    kind = "pytorch"

    def __init__(self, a):
        self.a = a
        self.family = {"bfloat16": "bf16", "float32": "f32"}.get(a.torch_dtype, a.torch_dtype)
        self.name = f"pytorch {self.family}"

    def one(self, image):
        a = self.a
        so, _, wall, rss = run([a.torch_python, str(Path(a.pytorch) / "bench.py"), a.model, str(image), a.torch_dtype],
                               log=a.log)
        j = parse_torch_bench(so)
        return {
            # bench.py times the encoder twice in one process; the faster (warm) run is taken, which
            # favours PyTorch (qvl and llama.cpp run theirs once, cold).
            "vision_s": min(j["vision_s"]),
            "vision_s_runs": j["vision_s"],
            "first_token_s": j["prefill_incl_vision_s"],
            "decode_tok_s": 1.0 / j["decode_s_per_tok"],
            "prompt_tokens": j["prompt_tokens"],
            "load_s": j["load_s"],
            "peak_rss_gb": rss / 1e9,
            "wall_s": wall,
        }

    def measure(self, img448, page):
        r = self.one(img448)
        if page:
            p = self.one(page)
            r.update(page_vision_s=p["vision_s"], page_first_token_s=p["first_token_s"],
                     page_prompt_tokens=p["prompt_tokens"], page_peak_rss_gb=p["peak_rss_gb"])
        return r


# ---------------------------------------------------------------------------------------- report

def median_of(rounds, key):
    xs = [r[key] for r in rounds if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def ratios(qvl, peer, figures=FIGURES):
    out = {}
    for key, _, _ in figures:
        q, p = qvl.get(key), peer.get(key)
        if q is not None and p:
            out[key] = q / p
    return out


def fmt(v, unit=""):
    if v is None:
        return "-"
    return f"{v:.3g} {unit}".strip() if abs(v) < 100 else f"{v:.0f} {unit}".strip()


def table(results, pairs, figures=FIGURES, counts=("prompt_tokens", "page_prompt_tokens")):
    names = list(results)
    w = max(12, *(len(n) for n in names))
    lines = ["figure".ljust(20) + "".join(n.rjust(w + 2) for n in names)]
    for key, unit, _ in figures + [(c, "", True) for c in counts]:
        lines.append(key.ljust(20) + "".join(fmt(results[n]["median"].get(key), unit).rjust(w + 2) for n in names))
    if pairs:
        lines.append("")
        lines.append("qvl/peer (seconds, GB: below 1 = qvl ahead; tok/s: above 1 = qvl ahead)")
        keys = [k for k, _, _ in figures]
        lines.append("pair".ljust(34) + "".join(k.rjust(max(len(k), 6) + 2) for k in keys))
        for pair, rs in pairs.items():
            lines.append(pair.ljust(34) + "".join(
                (f"{rs[k]:.2f}" if k in rs else "-").rjust(max(len(k), 6) + 2) for k in keys))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------- video

def write_clip(path, seconds):
    """The video: ffmpeg's moving testsrc2 pattern, H.264 (yuv420p) in MP4, as a phone would send."""
    if not shutil.which("ffmpeg"):
        raise SystemExit("--video needs the ffmpeg program (llama-mtmd-cli decodes video with it): "
                         "apt-get install -y ffmpeg; qvl itself does not use it")
    w, h = VIDEO_SIZE
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc2=size={w}x{h}:rate={VIDEO_FPS}:duration={seconds}", "-c:v", "libx264",
                    "-pix_fmt", "yuv420p", str(path)], check=True)


def run_rounds(a, stacks, what, measure):
    """Each stack measured a.rounds times, the order reversed every other round so neither always
    runs first on a warm or a cold machine."""
    rounds = {s.name: [] for s in stacks}
    for r in range(a.rounds):
        for s in (stacks if r % 2 == 0 else stacks[::-1]):
            print(f"round {r + 1}/{a.rounds}: {s.name}{what} ...", file=sys.stderr, flush=True)
            try:
                rounds[s.name].append(measure(s))
            except (RuntimeError, OSError, KeyError, ValueError) as e:
                print(f"  {s.name} failed: {e}", file=sys.stderr)
    return rounds


def summarize(stacks, rounds, figures=FIGURES):
    """Each stack's medians, and the qvl/peer ratios of `figures`."""
    results = {}
    for s in stacks:
        rs = rounds[s.name]
        keys = sorted({k for x in rs for k, v in x.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        results[s.name] = {"kind": s.kind, "format": s.family, "rounds": rs,
                           "median": {k: median_of(rs, k) for k in keys}}
    pairs = {}
    for q in (s for s in stacks if s.kind == "qvl"):
        for p in (s for s in stacks if s.kind != "qvl"):
            if results[q.name]["median"] and results[p.name]["median"]:
                pairs[f"{q.name} / {p.name}"] = ratios(results[q.name]["median"], results[p.name]["median"], figures)
    return results, pairs


def video_main(a, stacks, work):
    stacks = [s for s in stacks if s.kind in ("qvl", "llama.cpp")]
    if not stacks:
        raise SystemExit("--video compares qvl and llama.cpp: give --qvl/--model or --llama-bin/--gguf/--mmproj")
    clip = work / f"clip-{VIDEO_SIZE[0]}x{VIDEO_SIZE[1]}-{VIDEO_FPS}fps-{a.video_seconds:g}s.mp4"
    write_clip(clip, a.video_seconds)
    rounds = run_rounds(a, stacks, " video", lambda s: s.video(clip))
    results, pairs = summarize(stacks, rounds, VIDEO_FIGURES)
    report = {
        "prompt": VIDEO_PROMPT, "clip": {"file": clip.name, "bytes": clip.stat().st_size,
                                         "size": list(VIDEO_SIZE), "fps": VIDEO_FPS, "seconds": a.video_seconds},
        "threads": a.threads, "decode_tokens": a.decode_tokens, "ctx": a.ctx, "rounds": a.rounds,
        "stacks": results, "ratios_qvl_over_peer": pairs,
        "notes": "ratios are qvl/peer of the medians: for s and GB below 1 means qvl is ahead, for tok/s above 1; "
                 "the prompts differ (qvl: 2 fps within its video-token budget, llama.cpp: 4 fps, native size)",
    }
    print(json.dumps(report, indent=1))
    print(table(results, pairs, VIDEO_FIGURES, ("video_prompt_tokens", "video_frames", "video_media_chunks")),
          file=sys.stderr)
    return 0 if all(rounds.values()) else 1


# ------------------------------------------------------------------------------------------ gguf

def make_gguf(a):
    llama, out = Path(a.llama), Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    env = {"QVL_BIN": str(Path(a.qvl).resolve()),
           "PYTHONPATH": f"{llama / 'gguf-py'}{os.pathsep}{HERE / 'peers_shim'}"}
    conv = [a.torch_python, str(HERE / "peers_shim" / "convert.py"), str(llama / "convert_hf_to_gguf.py"), a.model]
    name = Path(a.model).name
    bf16 = out / f"{name}-BF16.gguf"
    steps = [
        (conv + ["--outtype", "bf16", "--outfile", str(bf16)], env, bf16),
        (conv + ["--mmproj", "--outtype", "f16", "--outfile", str(out / f"mmproj-{name}-F16.gguf")], env,
         out / f"mmproj-{name}-F16.gguf"),
    ]
    for t in a.types.split(","):
        dst = out / f"{name}-{t}.gguf"
        steps.append(([str(llama / "build" / "bin" / "llama-quantize"), str(bf16), str(dst), t], {}, dst))
    for cmd, e, dst in steps:
        print(" ".join(f"{k}={shlex.quote(v)}" for k, v in e.items()), shlex.join(cmd), file=sys.stderr)
        if dst.exists() and not a.force:
            print(f"  {dst} exists; kept (--force to remake)", file=sys.stderr)
            continue
        subprocess.run(cmd, env=dict(os.environ, **e), check=True, stdout=subprocess.DEVNULL)
    for _, _, dst in steps:
        print(dst)


# ------------------------------------------------------------------------------------------- main

def main(argv):
    if argv[:1] == ["gguf"]:
        g = argparse.ArgumentParser(prog="peers.py gguf", description="GGUF files for llama.cpp from a qvl model folder")
        g.add_argument("--llama", required=True, help="llama.cpp source tree, built (build/bin/llama-quantize)")
        g.add_argument("--qvl", required=True, help="qvl binary (its tokenizer stands in for transformers')")
        g.add_argument("--model", required=True, help="Hugging Face model folder (bf16 safetensors)")
        g.add_argument("--out", required=True, help="folder for the GGUF files (outside the repo)")
        g.add_argument("--types", default="Q8_0,Q4_0", help="llama-quantize types made from the BF16 file")
        g.add_argument("--torch-python", default="/usr/bin/python3", help="a python3 with torch and numpy")
        g.add_argument("--force", action="store_true", help="remake files that exist")
        return make_gguf(g.parse_args(argv[1:]))

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="'peers.py gguf --help': make the GGUF files. The module docstring has the whole recipe.")
    ap.add_argument("--model", help="model folder (safetensors) read by qvl and PyTorch")
    ap.add_argument("--qvl", help="qvl binary")
    ap.add_argument("--qvl-weights", default="q8", help="comma-separated qvl weight formats (q8,q4,bf16)")
    ap.add_argument("--llama-bin", help="folder with llama-mtmd-cli")
    ap.add_argument("--gguf", action="append", default=[], help="llama.cpp text GGUF (repeatable)")
    ap.add_argument("--mmproj", help="llama.cpp vision GGUF (mmproj)")
    ap.add_argument("--pytorch", help="the PyTorch baseline folder (bench.py, qwen3vl_ref.py)")
    ap.add_argument("--torch-python", default="/usr/bin/python3", help="python3 with torch (Debian's)")
    ap.add_argument("--torch-dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--rounds", type=int, default=1, help="rounds over all stacks; figures are medians")
    ap.add_argument("--decode-tokens", type=int, default=64, help="tokens generated after the 448x448 prompt")
    ap.add_argument("--threads", type=int, default=2, help="threads for qvl and llama.cpp (PyTorch's bench.py: 2)")
    ap.add_argument("--ctx", type=int, default=4096, help="context size for qvl and llama.cpp")
    ap.add_argument("--skip-page", action="store_true", help="leave out the 896x1152 page")
    ap.add_argument("--workdir", help="where the PNGs go (default: a temporary folder)")
    ap.add_argument("--log", help="append every command and its output to this file")
    ap.add_argument("--video", action="store_true",
                    help="qvl and llama.cpp on one 640x360 30-fps clip instead of the images (needs ffmpeg)")
    ap.add_argument("--video-seconds", type=float, default=10, help="--video: the clip's length")
    a = ap.parse_args(argv)

    stacks = []
    if a.qvl and a.model:
        stacks += [Qvl(a, w) for w in a.qvl_weights.split(",") if w]
    else:
        print("qvl: skipped (needs --qvl and --model)", file=sys.stderr)
    if a.llama_bin and a.gguf and a.mmproj:
        stacks += [Llama(a, g) for g in a.gguf]
    else:
        print("llama.cpp: skipped (needs --llama-bin, --gguf and --mmproj)", file=sys.stderr)
    if a.pytorch and a.model and not a.video:
        stacks.append(Torch(a))
        if a.threads != 2:
            print(f"pytorch: its bench.py runs 2 threads, the others {a.threads}", file=sys.stderr)
    else:
        print("pytorch: skipped (needs --pytorch and --model)", file=sys.stderr)
    if not stacks:
        ap.error("no stack to run")

    work = Path(a.workdir or tempfile.mkdtemp(prefix="qvl-peers-"))
    work.mkdir(parents=True, exist_ok=True)
    if a.video:
        return video_main(a, stacks, work)
    img448, page = work / "image-448x448.png", work / "page-896x1152.png"
    write_png(img448, *SIZE_448, page=False)
    if not a.skip_page:
        write_png(page, *SIZE_PAGE, page=True)

    rounds = run_rounds(a, stacks, "", lambda s: s.measure(img448, None if a.skip_page else page))
    results, pairs = summarize(stacks, rounds)

    report = {
        "prompt": PROMPT, "image": list(SIZE_448), "page": None if a.skip_page else list(SIZE_PAGE),
        "threads": a.threads, "torch_threads": 2, "decode_tokens": a.decode_tokens, "ctx": a.ctx,
        "rounds": a.rounds, "stacks": results,
        "ratios_qvl_over_peer": pairs,
        "notes": "ratios are qvl/peer of the medians: for s and GB below 1 means qvl is ahead, for tok/s above 1",
    }
    print(json.dumps(report, indent=1))
    print(table(results, pairs), file=sys.stderr)
    return 0 if all(rounds.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
