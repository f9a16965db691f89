"""The document as the headline figure: a PDF read out in full, every page's answer, end to end.

Writes a deterministic text PDF of US Letter pages (an invoice, a table and prose in turn;
bench/pdf_writer.py), then runs it the two ways a user does, each page's answer forced to --tokens
tokens (ignore_eos, the repetition guard off, greedy):

  cli     qvl run --image document.pdf --per-page --output-format json   (model loaded in the run)
  server  qvl serve, then POST /v1/jobs with "per_page": true, polled every 0.1 s until every page
          has ended (the server is started and loaded before the clock starts)

and reports for each: seconds to the first token of page 1, seconds per page, total wall time,
pages per minute, aggregate decode tok/s (all pages' tokens over the time some page was decoding)
and peak RSS; the bench checks that every page got exactly --tokens tokens. Pages are rendered at
144 dpi under qvl serve's default image cap (1,048,576 px: a Letter page is 896 x 1152 px, 1008
image tokens), and `qvl run` is given the same cap so both paths read the same pages.

Beside them, unless --skip-pytorch, the seeds' PyTorch stack (/work/shared/baselines/pytorch,
bench.py, bf16, 2 threads) on one page of the same size: its first token (vision + prefill, model
loaded) plus --tokens x its decode time per token is one page, times the pages the document; the
ratio is that estimate over qvl's wall time.

  python3 bench/documents.py --model /tmp/random-2b --weights q8 --json documents-q8.json

Prints a table, and the whole report as JSON to --json. Loopback HTTP with python3's standard
library only. docs/performance.md, "Documents", says how to read it.
"""
import argparse, base64, http.client, json, math, os, platform, subprocess, sys, tempfile, time

from pdf_writer import LETTER, document_pdf, png_of_size
from serve_clients import ROOT, start_server, wait_healthy

PROMPT = "qwenvl markdown"  # Qwen's document-parsing prompt (docs/documents.md, "Markdown")
PAGE_PIXELS = 1048576       # qvl serve's default --max-image-pixels
POLL_S = 0.1


def union_seconds(spans):
    """Length of the union of (start, end) intervals."""
    total, end = 0.0, None
    for s, e in sorted(spans):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def check_pages(path, pages, tokens):
    """Every page answered with exactly `tokens` tokens, cut at the limit: else the figures are wrong."""
    bad = [f"page {p['page']}: {p['completion_tokens']} tokens ({p['finish_reason']})" for p in pages
           if p["completion_tokens"] != tokens or p["finish_reason"] != "length"]
    if bad:
        sys.exit(f"documents.py: {path}: pages not forced to {tokens} tokens: " + "; ".join(bad))


def figures(pages, wall_s, first_token_s, spans, peak_rss_bytes):
    n = len(pages)
    tokens = sum(p["completion_tokens"] for p in pages)
    decoding_s = union_seconds(spans)
    return {"pages": n,
            "first_token_s": round(first_token_s, 3),
            "seconds_per_page": round(wall_s / n, 3),
            "wall_s": round(wall_s, 3),
            "pages_per_minute": round(60 * n / wall_s, 3),
            "completion_tokens": tokens,
            "decode_tok_s": round(tokens / decoding_s, 2) if decoding_s > 0 else None,
            "peak_rss_mb": round(peak_rss_bytes / 2**20, 1) if peak_rss_bytes else None,
            "page_list": pages}


def run_cli(a, pdf, tmp):
    cmd = [a.qvl, "run", "--model", a.model, "--weights", a.weights, "--image", pdf, "--per-page",
           "--prompt", PROMPT, "--max-tokens", str(a.tokens), "--ignore-eos", "--repetition-guard", "0",
           "--temperature", "0", "--max-pixels", str(PAGE_PIXELS), "--output-format", "json"]
    if a.threads:
        cmd += ["--threads", str(a.threads)]
    err_path = os.path.join(tmp, "run.stderr")
    with open(err_path, "w") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        lines = [line for line in proc.stdout]
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"documents.py: qvl run exited with {proc.returncode}: {open(err_path).read().strip()[-2000:]}")
    pages, spans = [], []
    for line in lines:
        j = json.loads(line)
        t = j["timings"]
        # Times since the command started: the page's rendering began at started_ms, its first
        # token came first_token_ms after generation began.
        first = (t["started_ms"] + t["image_decode_ms"] + t["first_token_ms"]) / 1000
        spans.append((first, first + t["decode_ms"] / 1000))
        pages.append({"page": j["page"], "prompt_tokens": j["usage"]["prompt_tokens"],
                      "completion_tokens": j["usage"]["completion_tokens"], "finish_reason": j["finish_reason"],
                      "first_token_s": round(first, 3), "end_s": round(spans[-1][1], 3),
                      "decode_tok_s": round(t["decode_tok_s"], 2)})
    if len(pages) != a.pages:
        sys.exit(f"documents.py: qvl run answered {len(pages)} pages of {a.pages}")
    check_pages("qvl run", pages, a.tokens)
    # ru_maxrss is in KiB on Linux.
    out = figures(pages, wall, pages[0]["first_token_s"], spans, usage.ru_maxrss * 1024)
    out["load_s"] = round(json.loads(lines[0])["timings"]["load_ms"] / 1000, 3)
    return out


def request(host, port, method, path, body=None):
    c = http.client.HTTPConnection(host, port, timeout=60)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        c.close()


def peak_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def run_server(a, pdf):
    # No request deadline: at 500 tokens a page, a page waiting behind another can pass the
    # default 180 s on a slow machine, and a timed-out page is no figure.
    options = ["--model", a.model, "--weights", a.weights, "--jobs-db", "memory", "--timeout", "0"]
    if a.threads:
        options += ["--threads", str(a.threads)]
    t_start = time.monotonic()
    proc, host, port = start_server(a.qvl, options)
    try:
        wait_healthy(host, port, 1800)
        load_s = time.monotonic() - t_start
        with open(pdf, "rb") as f:
            data = base64.b64encode(f.read()).decode()
        body = {"per_page": True,
                "messages": [{"role": "user", "content": [
                    {"type": "file", "file": {"file_data": "data:application/pdf;base64," + data,
                                              "filename": "document.pdf"}},
                    {"type": "text", "text": PROMPT}]}],
                "max_tokens": a.tokens, "temperature": 0, "ignore_eos": True, "repetition_guard": 0}
        t0 = time.monotonic()
        status, accepted = request(host, port, "POST", "/v1/jobs", body)
        if status != 202:
            sys.exit(f"documents.py: POST /v1/jobs answered {status}: {json.dumps(accepted)[:2000]}")
        first_seen, ended, results = {}, {}, {}
        while True:
            status, batch = request(host, port, "GET", "/v1/jobs/" + accepted["id"])
            now = time.monotonic() - t0
            if status != 200:
                sys.exit(f"documents.py: GET /v1/jobs/{accepted['id']} answered {status}")
            for r in batch["results"]:
                page = r["page"]
                if r["status"] == "running" and r.get("progress", {}).get("tokens", 0) > 0:
                    first_seen.setdefault(page, now)
                if r["status"] not in ("queued", "running") and page not in ended:
                    ended[page], results[page] = now, r
            if batch["status"] not in ("queued", "running"):
                break
            time.sleep(POLL_S)
        wall = max(ended.values())
        rss = peak_rss(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    failed = [f"page {p}: {r['status']} {json.dumps(r.get('error'))[:300]}" for p, r in results.items()
              if r["status"] != "succeeded"]
    if failed:
        sys.exit("documents.py: the batch's pages did not all succeed: " + "; ".join(failed))
    pages, spans = [], []
    for page in sorted(results, key=accepted["pages"].index):
        c = results[page]["result"]
        t = c["timings"]
        # Seen running with tokens by a poll, or (a page shorter than a poll) its end less its
        # decode time: either is at most one poll late.
        first = min(first_seen.get(page, ended[page]), ended[page] - t["decode_ms"] / 1000)
        spans.append((first, ended[page]))
        pages.append({"page": page, "prompt_tokens": c["usage"]["prompt_tokens"],
                      "completion_tokens": c["usage"]["completion_tokens"],
                      "finish_reason": c["choices"][0]["finish_reason"],
                      "first_token_s": round(first, 3), "end_s": round(ended[page], 3),
                      "decode_tok_s": round(t.get("decode_tok_s", 0), 2)})
    if len(pages) != a.pages:
        sys.exit(f"documents.py: the batch answered {len(pages)} pages of {a.pages}")
    check_pages("server batch", pages, a.tokens)
    out = figures(pages, wall, pages[0]["first_token_s"], spans, rss)
    out["load_s"] = round(load_s, 3)
    out["poll_s"] = POLL_S
    return out


def page_size():
    """The page in pixels as qvl feeds it: 144 dpi, each side a multiple of 32, under PAGE_PIXELS
    (the server's resize rule, smart_resize's scaling down)."""
    w, h = LETTER[0] * 2, LETTER[1] * 2
    beta = math.sqrt(w * h / PAGE_PIXELS)
    return (max(32, math.floor(w / beta / 32) * 32), max(32, math.floor(h / beta / 32) * 32))


def run_json_worker(cmd, timeout, stderr_tail=1000):
    """Runs a baseline's worker, whose last stdout line is its JSON report: (report, None), or
    (None, a report of why not, with the command)."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, {"error": f"did not finish within {timeout} s", "command": " ".join(cmd)}
    if out.returncode != 0:
        return None, {"error": f"exited with {out.returncode}: {out.stderr.strip()[-stderr_tail:]}",
                      "command": " ".join(cmd)}
    return json.loads(out.stdout.strip().splitlines()[-1]), None


def run_pytorch(a, tmp):
    w, h = page_size()
    png = os.path.join(tmp, "page.png")
    with open(png, "wb") as f:
        f.write(png_of_size(w, h))
    cmd = [a.pytorch_python, os.path.join(a.pytorch_dir, "bench.py"), a.model, png, "bfloat16"]
    r, failed = run_json_worker(cmd, a.pytorch_timeout)
    if failed:
        return failed
    page_s = r["prefill_incl_vision_s"] + a.tokens * r["decode_s_per_tok"]
    return {"dtype": "bfloat16", "image": f"{w}x{h}", "prompt_tokens": r["prompt_tokens"], "load_s": round(r["load_s"], 3),
            "first_token_s": round(r["prefill_incl_vision_s"], 3), "decode_s_per_tok": round(r["decode_s_per_tok"], 4),
            "page_s_estimate": round(page_s, 3), "wall_s_estimate": round(page_s * a.pages, 3),
            "pages_per_minute": round(60 / page_s, 3), "peak_rss_mb": round(r["peak_rss_gb"] * 1e9 / 2**20, 1),
            "command": " ".join(cmd)}


def machine():
    cpu = ""
    try:
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.platform()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qvl", default=os.path.join(ROOT, "build/qvl"))
    ap.add_argument("--model", default="/tmp/random-2b", help="a model folder (build/make_random_model --out DIR)")
    ap.add_argument("--weights", default="q8", choices=["q8", "q4", "bf16"])
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=500, help="every page's answer, forced to this many tokens")
    ap.add_argument("--threads", type=int, default=0, help="qvl's compute threads (0: its default)")
    ap.add_argument("--paths", default="cli,server", help="which of cli, server to run (comma-separated)")
    ap.add_argument("--skip-pytorch", action="store_true", help="no PyTorch baseline")
    ap.add_argument("--pytorch-dir", default="/work/shared/baselines/pytorch")
    ap.add_argument("--pytorch-python", default="/usr/bin/python3", help="a python3 with torch")
    ap.add_argument("--pytorch-timeout", type=float, default=3600)
    ap.add_argument("--pdf-out", help="also keep the document here")
    ap.add_argument("--json", help="write the report here")
    a = ap.parse_args()
    paths = [p for p in a.paths.split(",") if p]
    for p in paths:
        if p not in ("cli", "server"):
            ap.error(f"--paths: unknown path '{p}' (cli, server)")
    if a.pages < 1 or a.tokens < 1:
        ap.error("--pages and --tokens must be at least 1")

    report = {"bench": "documents", "model": a.model, "weights": a.weights, "pages": a.pages, "tokens": a.tokens,
              "threads": a.threads or None, "prompt": PROMPT, "page_size": "x".join(map(str, page_size())),
              "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="qvl-documents-") as tmp:
        pdf = os.path.join(tmp, "document.pdf")
        with open(pdf, "wb") as f:
            f.write(document_pdf(a.pages))
        if a.pdf_out:
            with open(a.pdf_out, "wb") as f:
                f.write(document_pdf(a.pages))
        if "cli" in paths:
            report["cli"] = run_cli(a, pdf, tmp)
        if "server" in paths:
            report["server"] = run_server(a, pdf)
        if not a.skip_pytorch:
            report["pytorch"] = run_pytorch(a, tmp)
    if "cli" in report and "server" in report:
        # The same pages cost the same prompt on both paths, or the paths are not compared fairly.
        report["same_prompts"] = ([p["prompt_tokens"] for p in report["cli"]["page_list"]] ==
                                  [p["prompt_tokens"] for p in report["server"]["page_list"]])
    torch = report.get("pytorch", {})
    for p in paths:
        if "wall_s_estimate" in torch:
            report[p]["pytorch_ratio"] = round(torch["wall_s_estimate"] / report[p]["wall_s"], 2)

    print(f"{a.pages} pages x {a.tokens} tokens, {a.weights}, {report['page_size']} px a page, {a.model}")
    print(f"{'':8} {'1st token s':>11} {'s/page':>8} {'wall s':>8} {'pages/min':>9} {'decode tok/s':>12} "
          f"{'peak RSS MB':>11} {'x PyTorch':>9}")
    for p in paths:
        f = report[p]
        print(f"{p:8} {f['first_token_s']:>11.2f} {f['seconds_per_page']:>8.2f} {f['wall_s']:>8.1f} "
              f"{f['pages_per_minute']:>9.2f} {f['decode_tok_s'] or 0:>12.1f} {f['peak_rss_mb'] or 0:>11.0f} "
              f"{f['pytorch_ratio'] if 'pytorch_ratio' in f else '-':>9}")
    if "wall_s_estimate" in torch:
        print(f"{'pytorch':8} {torch['first_token_s']:>11.2f} {torch['page_s_estimate']:>8.2f} "
              f"{torch['wall_s_estimate']:>8.1f} {torch['pages_per_minute']:>9.2f} "
              f"{1 / torch['decode_s_per_tok']:>12.1f} {torch['peak_rss_mb']:>11.0f}   (bf16, estimated)")
    elif torch:
        print(f"pytorch: {torch['error']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
