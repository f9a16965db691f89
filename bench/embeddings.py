"""Embedding speed, issue 47's figures: pages per minute indexed and text passages per second.

With an embedding of any Qwen3-VL checkpoint (the vector is the last token's final-normed hidden
state, so a random-weight 2B made by build/make_random_model serves with --task embed):

  index     qvl index on a deterministic N-page US Letter PDF (bench/pdf_writer.py, as
            bench/documents.py writes it) at the default page settings (144 dpi; the embedding
            model's image range, up to 1,843,200 px: a Letter page is 1184 x 1536 px, 1,776 image
            tokens), into a fresh SQLite index: pages per minute over the wall time less the
            model's load (which a one-page `qvl embed` run measures), and with it
  passages  --passages texts of --passage-tokens tokens each embedded by one `qvl embed --inputs`
            call (the engine packs them into prefill batches): passages per second over the
            command's own compute time (its timings), and over its wall time (the load included).

Beside them, unless --skip-pytorch, the seeds' PyTorch stack (/work/shared/baselines/pytorch,
qwen3vl_ref.py, bf16, --threads threads): it has no embedding function, but an embedding is one
prefill forward to the final norm, so it times that forward (no output head) on one page's image
tokens (preprocessing and the vision tower included; rendering the PDF is not) and on
--torch-passages passages of the same prompt length, one at a time (the reference has no batch
dimension: that is how it runs). The ratios are qvl's rate over PyTorch's. PyTorch needs
/usr/bin/python3 with Debian's python3-torch; without it that part is skipped with a message.

  /usr/bin/python3 bench/embeddings.py --model /tmp/random-2b --weights q8 --json embeddings-q8.json

Prints one JSON object (and writes it to --json). A short smoke run with the tiny fixture model:

  python3 bench/embeddings.py --model tests/fixtures/tiny-qwen3vl --weights f32 --pages 2 \\
      --passages 8 --torch-passages 2
"""
import argparse, json, os, random, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from documents import machine, run_json_worker  # noqa: E402  (the same machine facts and worker runs in both)
from pdf_writer import LETTER, document_pdf, png_of_size  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RETRIEVAL_MIN_PIXELS, RETRIEVAL_MAX_PIXELS = 4096, 1843200  # the official scripts' image range (docs/embeddings.md)
DPI = 144
# Common English words, each one token after a space in Qwen's vocabulary: passages of a known length.
WORDS = ("the of and to in is was for on that with as by at from his an were are which this be or has had not "
         "but first one their its new after who they have her she two been other when there all during into "
         "school time may years more most only over city some world would where later up such used many can "
         "state about national out known university united then made").split()


def run(cmd, **kw):
    t0 = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall = time.time() - t0
    if out.returncode != 0:
        sys.exit(f"embeddings.py: {' '.join(cmd[:3])} … exited with {out.returncode}: {out.stderr.strip()[-2000:]}")
    return out.stdout, wall


def compute_s(timings):
    return (timings.get("preprocess_ms", 0) + timings.get("vision_ms", 0) + timings.get("prefill_ms", 0)) / 1000


def passages(n, words_each):
    rng = random.Random(47)
    return [" ".join(rng.choice(WORDS) for _ in range(words_each)) for _ in range(n)]


def qvl_args(a):
    args = ["--model", a.model, "--task", "embed", "--weights", a.weights]
    if a.threads:
        args += ["--threads", str(a.threads)]
    return args


def run_qvl(a, tmp):
    pdf = os.path.join(tmp, "document.pdf")
    with open(pdf, "wb") as f:
        f.write(document_pdf(a.pages))
    out = {}
    # One page through qvl embed: the page's prompt tokens, and the load time (wall less compute).
    text, wall = run([a.qvl, "embed", *qvl_args(a), "--image", pdf, "--pages", "1"])
    one = json.loads(text)
    load_s = max(0.0, wall - compute_s(one["timings"]))
    out["load_s"] = round(load_s, 3)
    out["page_prompt_tokens"] = one["data"][0]["prompt_tokens"]
    out["page_embed_s"] = round(compute_s(one["timings"]), 3)

    db = os.path.join(tmp, "search.db")
    text, wall = run([a.qvl, "index", *qvl_args(a), "--collection", "bench", "--index-db", "sqlite:" + db, pdf])
    r = json.loads(text)
    outcomes = [f.get("outcome") for f in r.get("files", [])]
    if outcomes and outcomes != ["added"]:
        sys.exit(f"embeddings.py: qvl index did not add the document: {text[:2000]}")
    # The load as the one-page run measured it (the same files, the same weight cache).
    work_s = wall - load_s if wall > 2 * load_s else wall
    out["index"] = {"pages": a.pages, "wall_s": round(wall, 3),
                    "pages_per_minute": round(60 * a.pages / work_s, 2),
                    "pages_per_minute_with_load": round(60 * a.pages / wall, 2)}

    inputs = os.path.join(tmp, "passages.json")
    with open(inputs, "w") as f:
        json.dump(passages(a.passages, a.passage_tokens), f)
    text, wall = run([a.qvl, "embed", *qvl_args(a), "--inputs", inputs])
    r = json.loads(text)
    if len(r["data"]) != a.passages:
        sys.exit(f"embeddings.py: qvl embed gave {len(r['data'])} vectors for {a.passages} passages")
    tokens = [d["prompt_tokens"] for d in r["data"]]
    c = compute_s(r["timings"])
    out["passages"] = {"passages": a.passages, "prompt_tokens_mean": round(sum(tokens) / len(tokens), 1),
                       "wall_s": round(wall, 3), "compute_s": round(c, 3),
                       "passages_per_s": round(a.passages / c, 2),
                       "passages_per_s_with_load": round(a.passages / wall, 2)}
    return out


def page_pixels():
    """A Letter page at DPI in the embedding model's image range: smart_resize, factor 32."""
    import math
    h, w = LETTER[1] * DPI // 72, LETTER[0] * DPI // 72
    if h * w > RETRIEVAL_MAX_PIXELS:
        beta = math.sqrt(h * w / RETRIEVAL_MAX_PIXELS)
        return max(32, math.floor(w / beta / 32) * 32), max(32, math.floor(h / beta / 32) * 32)
    return round(w / 32) * 32, round(h / 32) * 32


def run_pytorch(a, tmp, prompt_tokens):
    probe = subprocess.run([a.pytorch_python, "-c", "import torch, numpy, PIL"], capture_output=True, text=True)
    if probe.returncode != 0:
        msg = f"skipped: {a.pytorch_python} cannot import torch, numpy and PIL (apt-get install python3-torch python3-numpy python3-pil)"
        print(f"embeddings.py: PyTorch {msg}", file=sys.stderr)
        return {"skipped": msg}
    w, h = page_pixels()
    png = os.path.join(tmp, "page.png")
    with open(png, "wb") as f:
        f.write(png_of_size(w, h))
    cmd = [a.pytorch_python, os.path.abspath(__file__), "--pytorch-worker", "--model", a.model, "--page", png,
           "--passage-prompt-tokens", str(prompt_tokens), "--torch-passages", str(a.torch_passages),
           "--pytorch-dir", a.pytorch_dir, "--threads", str(a.threads or 2)]
    r, failed = run_json_worker(cmd, a.pytorch_timeout, stderr_tail=1500)
    if failed:
        return failed
    r["command"] = " ".join(cmd)
    return r


def pytorch_worker(a):
    """Runs under a python3 with torch: the reference's forward to the final norm, timed."""
    import resource
    sys.path.insert(0, a.pytorch_dir)
    import numpy as np
    import torch
    import torch.nn.functional as F
    from PIL import Image
    import qwen3vl_ref as R

    torch.set_num_threads(a.threads)
    t0 = time.time()
    m = R.Qwen3VL(a.model, dtype=torch.bfloat16)
    load_s = time.time() - t0
    cfg = m.cfg
    # Chat-template ids around the content: <|im_start|>system\n … <|im_end|>\n<|im_start|>user\n …
    # <|im_end|>\n<|im_start|>assistant\n (the instruction's words as filler ids).
    head = [151644, 8948, 198] + [1000 + i for i in range(8)] + [151645, 198, 151644, 872, 198]
    tail = [151645, 198, 151644, 77091, 198]

    def last_hidden(ids, pv=None, grid=None):
        ids_t = torch.tensor(ids, dtype=torch.int64)
        x = m.text.embed(ids_t)
        mask = ids_t == cfg.image_token_id
        deepstack = None
        if grid is not None:
            merged, deepstack = m.encode_images([pv], [grid])
            x = x.clone()
            x[mask] = merged.to(x.dtype)
        pos, _ = R.get_rope_index(ids, [grid] if grid is not None else [], cfg.vision.spatial_merge_size,
                                  cfg.image_token_id, cfg.vision_start_token_id)
        cos, sin = m.text.rope_cos_sin(pos)
        for i in range(cfg.text.num_hidden_layers):
            x = m.text.layer(x, i, cos, sin, None)
            if deepstack is not None and i < len(deepstack):
                x = x.clone()
                x[mask] = x[mask] + deepstack[i].to(x.dtype)
        h = R.rms_norm(x[-1:], m.text.w["norm.weight"], cfg.text.rms_norm_eps)
        return F.normalize(h.float(), dim=-1)

    res = {"dtype": "bfloat16", "threads": a.threads, "load_s": round(load_s, 3)}
    with torch.no_grad():
        rgb = np.array(Image.open(a.page).convert("RGB"))
        page_s = []
        for _ in range(2):  # the second run is the figure (the first warms the allocator)
            t0 = time.time()
            p = R.preprocess_image(rgb, m.pp, min_pixels=RETRIEVAL_MIN_PIXELS, max_pixels=RETRIEVAL_MAX_PIXELS)
            grid = tuple(p["image_grid_thw"])
            ntok = grid[1] * grid[2] // (cfg.vision.spatial_merge_size ** 2)
            ids = head + [cfg.vision_start_token_id] + [cfg.image_token_id] * ntok + [151653] + tail
            last_hidden(ids, p["pixel_values"], grid)
            page_s.append(time.time() - t0)
        res["page"] = {"image": "x".join(map(str, p["resized_hw"][::-1])), "prompt_tokens": len(ids),
                       "seconds": [round(s, 3) for s in page_s],
                       "pages_per_minute": round(60 / page_s[-1], 2)}
        rng = random.Random(47)
        n_fill = max(1, a.passage_prompt_tokens - len(head) - len(tail))
        times = []
        for _ in range(a.torch_passages):
            ids = head + [rng.randrange(1000, 100000) for _ in range(n_fill)] + tail
            t0 = time.time()
            last_hidden(ids)
            times.append(time.time() - t0)
        steady = times[1:] if len(times) > 1 else times
        res["passages"] = {"passages": a.torch_passages, "prompt_tokens": len(head) + n_fill + len(tail),
                           "seconds": [round(s, 3) for s in times],
                           "passages_per_s": round(len(steady) / sum(steady), 2)}
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(res), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qvl", default=os.path.join(ROOT, "build/qvl"))
    ap.add_argument("--model", default="/tmp/random-2b", help="a model folder (build/make_random_model --out DIR)")
    ap.add_argument("--weights", default="q8", choices=["q8", "q4", "bf16", "f32"])
    ap.add_argument("--threads", type=int, default=0, help="compute threads (0: qvl's default; PyTorch 2)")
    ap.add_argument("--pages", type=int, default=10, help="pages of the indexed PDF")
    ap.add_argument("--passages", type=int, default=64, help="passages embedded by one qvl embed call")
    ap.add_argument("--passage-tokens", type=int, default=128, help="words (one token each) per passage")
    ap.add_argument("--torch-passages", type=int, default=6, help="passages PyTorch runs (the first is warm-up)")
    ap.add_argument("--skip-pytorch", action="store_true", help="no PyTorch baseline")
    ap.add_argument("--pytorch-dir", default="/work/shared/baselines/pytorch")
    ap.add_argument("--pytorch-python", default="/usr/bin/python3", help="a python3 with torch")
    ap.add_argument("--pytorch-timeout", type=float, default=3600)
    ap.add_argument("--json", help="also write the report here")
    # The PyTorch part, run by the main process under --pytorch-python.
    ap.add_argument("--pytorch-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--page", help=argparse.SUPPRESS)
    ap.add_argument("--passage-prompt-tokens", type=int, default=150, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.pytorch_worker:
        return pytorch_worker(a)
    if min(a.pages, a.passages, a.passage_tokens, a.torch_passages) < 1:
        ap.error("--pages, --passages, --passage-tokens and --torch-passages must be at least 1")

    report = {"bench": "embeddings", "model": a.model, "weights": a.weights, "threads": a.threads or None,
              "pages": a.pages, "dpi": DPI, "passages": a.passages, "passage_words": a.passage_tokens,
              "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="qvl-embeddings-") as tmp:
        report["qvl"] = run_qvl(a, tmp)
        if not a.skip_pytorch:
            report["pytorch"] = run_pytorch(a, tmp, round(report["qvl"]["passages"]["prompt_tokens_mean"]))
    torch = report.get("pytorch", {})
    if "page" in torch:
        q = report["qvl"]
        report["ratios"] = {
            "index_pages_per_minute": round(q["index"]["pages_per_minute"] / torch["page"]["pages_per_minute"], 2),
            "passages_per_s": round(q["passages"]["passages_per_s"] / torch["passages"]["passages_per_s"], 2),
            "note": "qvl over PyTorch bf16; qvl's index figure includes rendering, thumbnails and SQLite, "
                    "PyTorch's page is preprocessing + vision + prefill only"}
    text = json.dumps(report, indent=1)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
