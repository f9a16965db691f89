#!/usr/bin/env python3
"""Soak of `qvl serve`: a mix of clients for a given time while the server's resources are sampled
every 10 s; fails when one of them grows without bound or when any request is answered 5xx.

    python3 bench/soak.py --minutes 2 --out build/soak                  # starts qvl serve on the tiny model
    python3 bench/soak.py --minutes 30 --model /tmp/random-2b --weights q4 --out /tmp/soak
    python3 bench/soak.py --minutes 30 --url http://127.0.0.1:8080 --pid PID [--jobs-db PATH]

The mix (--mix kind=weight,... changes the weights; --list-kinds names them): chat answers whole
and streamed, with an image, a video and a PDF; a PDF's pages and a clip's frames; jobs polled to
their end or cancelled, per-page batches polled or cancelled, stored responses deleted; clients
that hang up mid-stream, while queued and mid-body; malformed, oversized, deep, bomb and wrong-type
bodies, broken videos and PDFs, pipelining; and on threads of their own, clients that trickle
headers or bodies or connect and send nothing.

Sampled every --interval s (default 10) into soak.json and soak.csv, drawn in soak.png:
  rss_anon_mb   anonymous resident memory (heap, stacks, KV cache: what a leak holds), /proc/PID/status
                RssAnon: the least of the reads taken 4 times a second since the last sample (its
                floor: a JPEG bomb's 300 MB decode lasts under a second)
  rss_mb        all resident memory, VmRSS (else /metrics process_resident_memory_bytes), its floor
                likewise (its peak: rss_peak_mb). Judged only when RssAnon cannot be read (no PID):
                it also counts the pages of the model files the server maps (the weights, the q8/q4
                weight cache), which come in as they are first touched -- an embedding row when its
                token first appears -- so it rises for as long as new tokens do, up to the files'
                size, and the kernel may drop those pages again at will
  fds           open file descriptors, /proc/PID/fd (else /metrics process_open_fds): the floor of
                the reads between samples, as RSS (fds_peak beside it)
  threads       /proc/PID/status Threads (only with the PID)
  jobs_stored   /metrics qvl_jobs_stored: the job store's rows as the server counts them
  store_rows    the SQLite job store read-only (jobs + batches + media + media_refs + responses +
                response_items rows): every table a leak could fill, counted by SQLite itself
  store_orphans the rows among them that nothing refers to (a job's media, a batch without jobs,
                a response's items without it): 0 in every snapshot of a store that cleans up
  latency_s     median latency of the answered (2xx) chat requests of the interval
  health_s      one GET /health at the sample

The verdict. Each series is fitted by least squares over the second half of the run (the first
half lets caches, allocator arenas and the store's TTL window fill) and fails when the fitted line
rises across that half by more than the series' band:

  rss_anon_mb  max(48 MiB, 5 % of the half's median)  (rss_mb the same, when it is judged)
  fds          2 x (mix threads + slow clients) + 8
  threads      2
  jobs_stored  max(24, 50 % of the half's median);  store_rows  max(32, 50 %);  store_orphans  4
  latency_s    max(1 s, 100 % of the half's median);  health_s  max(0.5 s, 100 % of its median)

Why a band over the window, i.e. a slope limit of band / (duration / 2): a bounded series (a cache
at its cap, connections that follow the mix, the store's jobs within their TTL) wanders within a
band, so its fitted slope over a window of length W is at most about band / W, shrinking as the
run grows; a leak's slope is a constant, so it rises past any band once the run is long enough.
Each band is what the mix can move a bounded series by. fds: every mix thread and slow client
holds at most one connection, and one the server has not yet seen closed one more. threads: the
server's are fixed at start (HTTP workers, scheduler, job runner). jobs_stored, store_rows: an
ended job is kept its TTL, so the rows follow the job rate, which moves with the machine's other
load (+15 rows in a clean run whose neighbour finished); store_orphans: none may exist at all.
rss_anon_mb: glibc's per-thread arenas keep what requests freed (bodies, parsed JSON, decoded
media; a sixth of it is in use), and fill slowly, so the floor still rises by up to ~30 MiB in
the second half of a clean 2-minute tiny-model run. latency: it doubles when another process
takes a core. Checked on the 2-minute run of `make test` (tests/soak) with a
second one beside it and the 30-minute soak on the same 2 cores: clean runs stayed within 5/8 of
each band (the closest: anonymous RSS, +30 of 48 MiB, and store rows, +14 of 32); the deliberate
leaks docs/soak.md lists (an fd per 20 chat requests, 64 KiB per chat request, a thread per 50,
media rows never deleted) each failed the series they leak into, by 1.4x to 19x, and only that
one. A 2-minute run catches leaks of more than band / 60 s (fds: ~0.4 a second; memory: ~0.8 MiB
a second); the 30-minute run one fifteenth of that.

It fails also when: any request is answered 5xx (named by kind and status), a job of good input
ends failed (the job's 5xx), the server exits, the good kinds (chat, streams, video, PDF, jobs)
get no 2xx at all (a run that proved nothing), slots and queue are not back to 0 within 30 s of
the end, or the server it started does not exit 0 on SIGTERM. Each failure is one line
"soak: FAIL: ..." on stderr; exit code 1.

Starting the server itself (no --url), it keeps the job store in a temporary SQLite file and gives
it --job-ttl (default: an eighth of the run, 10-120 s) so the store reaches its steady state in the
first half; against --url, run the server with a --job-ttl under a quarter of the run, or the ended
jobs it keeps legitimately grow the store series through the second half. python3 standard
library only (matplotlib draws the plot when it can be imported).
"""
import argparse, csv, json, os, random, signal, sqlite3, statistics, sys, tempfile, threading, time
import http.client
import urllib.parse

from serve_clients import (ROOT, Clients, Media, Stats, percentile, read_metrics, start_server, wait_drained,
                           wait_healthy)
from soak_plot import render_png

# Kinds and their weights in the mix (each worker draws one at a time).
DEFAULT_MIX = {
    "good_plain": 2, "good_image": 1, "good_stream": 2, "good_video": 1, "good_pdf": 1, "pdf_pages": 1,
    "video_frames": 1, "misc": 1, "job": 2, "job_per_page": 1, "response_store_cancel": 1,
    "hang_up_stream": 1, "hang_up_waiting": 1, "hang_up_mid_body": 1,
    "bad_json": 1, "bad_type": 1, "big_number": 1, "deep": 1, "huge_list": 1, "bad_b64": 1, "corrupt_image": 1,
    "corrupt_video": 1, "corrupt_pdf": 1, "jpeg_bomb": 1, "oversized": 1, "wrong_content_type": 1, "pipelined": 1,
}
SLOW_KINDS = ("slow_headers", "slow_body", "idle")
# A run proves nothing unless each of these was answered 2xx at least once.
GOOD_KINDS = ("good_plain", "good_image", "good_stream", "good_video", "good_pdf", "pdf_pages", "video_frames",
              "job_create", "batch_create")
CHAT_KINDS = ("good_plain", "good_image", "good_stream", "good_video", "good_pdf")

SERIES = {  # name: (unit, band(second-half median, run) -> allowed rise over the second half)
    "rss_anon_mb": ("MiB", lambda med, run: max(48.0, 0.05 * med)),
    "rss_mb": ("MiB", lambda med, run: max(48.0, 0.05 * med)),  # judged only without rss_anon_mb
    "fds": ("count", lambda med, run: 2 * run.connections + 8),
    "threads": ("count", lambda med, run: 2),
    "jobs_stored": ("rows", lambda med, run: max(24.0, 0.5 * med)),
    "store_rows": ("rows", lambda med, run: max(32.0, 0.5 * med)),
    "store_orphans": ("rows", lambda med, run: 4),
    "latency_s": ("s", lambda med, run: max(1.0, med)),
    "health_s": ("s", lambda med, run: max(0.5, med)),
}
STORE_TABLES = ("jobs", "batches", "media", "media_refs", "responses", "response_items")
# Rows that nothing refers to any more: the store deletes them in the transaction that deletes
# their owner (job_store_sqlite.cpp, drop_unowned), so a committed snapshot holds none.
ORPHANS = """SELECT
  (SELECT count(*) FROM media_refs r WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.owner)
                                     AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.id = r.owner)) +
  (SELECT count(*) FROM media m WHERE NOT EXISTS (SELECT 1 FROM media_refs r WHERE r.hash = m.hash)) +
  (SELECT count(*) FROM batches b WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.batch = b.id)) +
  (SELECT count(*) FROM response_items i WHERE NOT EXISTS (SELECT 1 FROM responses r WHERE r.seq = i.response_seq))"""


def parse_mix(text):
    mix = dict(DEFAULT_MIX)
    for item in filter(None, (text or "").split(",")):
        kind, _, weight = item.partition("=")
        if kind not in mix:
            sys.exit(f"soak: --mix: no client kind '{kind}' (--list-kinds names them)")
        try:
            mix[kind] = int(weight)
        except ValueError:
            sys.exit(f"soak: --mix: weight of '{kind}' must be an integer, got '{weight}'")
    if not any(mix.values()):
        sys.exit("soak: --mix leaves no client")
    return mix


def proc_status(pid):
    """VmRSS and RssAnon (MiB) and Threads from /proc/PID/status."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "Threads"):
                fields[key] = int(value.split()[0])
    return fields


def store_rows(path):
    """(rows of the job store's tables, orphan rows), read in one snapshot through a read-only
    connection (a WAL reader never waits for the server's writes)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        db.execute("BEGIN")
        rows = sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in STORE_TABLES)
        return rows, db.execute(ORPHANS).fetchone()[0]
    finally:
        db.close()


def timed_health(host, port):
    t = time.time()
    c = http.client.HTTPConnection(host, port, timeout=30)
    try:
        c.request("GET", "/health")
        c.getresponse().read()
        return round(time.time() - t, 4)
    except OSError:
        return None
    finally:
        c.close()


class Sampler:
    """One row of every series per sample(); a source that cannot be read gives None. RSS and fds
    are also read at every tick() between samples (4 a second): a row holds their floor (the
    least read since the last row) and their peak. The floor is what a leak raises; the reads
    between are moved by what requests hold for a moment (a body, a decoded clip, a socket)."""

    def __init__(self, host, port, pid, db_path, stats):
        self.host, self.port, self.pid, self.db_path, self.stats = host, port, pid, db_path, stats
        self.rows = []
        self.errors = {}  # source: the last error reading it
        self.reads = []   # (rss MiB, anonymous rss MiB, fds) since the last row

    def rss_fds(self, metrics=None):
        rss = anon = fds = None
        if self.pid:
            status = self.read("proc", lambda: proc_status(self.pid)) or {}
            rss = status["VmRSS"] / 1024 if "VmRSS" in status else None
            anon = status["RssAnon"] / 1024 if "RssAnon" in status else None
            fds = self.read("proc", lambda: len(os.listdir(f"/proc/{self.pid}/fd")))
        if rss is None or fds is None:
            if metrics is None:
                metrics = self.read("metrics", lambda: read_metrics(self.host, self.port)) or {}
            if rss is None and "process_resident_memory_bytes" in metrics:
                rss = metrics["process_resident_memory_bytes"] / (1 << 20)
            if fds is None and "process_open_fds" in metrics:
                fds = int(metrics["process_open_fds"])
        return rss, anon, fds

    def tick(self):
        self.reads.append(self.rss_fds())

    def read(self, source, fn):
        try:
            return fn()
        except Exception as e:
            self.errors[source] = f"{type(e).__name__}: {e}"
            return None

    def sample(self, t):
        metrics = self.read("metrics", lambda: read_metrics(self.host, self.port)) or {}
        threads = (self.read("proc", lambda: proc_status(self.pid)) or {}).get("Threads") if self.pid else None
        reads, self.reads = self.reads + [self.rss_fds(metrics)], []
        rss_reads, anon_reads, fd_reads = ([r[k] for r in reads if r[k] is not None] for k in range(3))
        rows, orphans = (self.db_path and self.read("sqlite", lambda: store_rows(self.db_path))) or (None, None)
        window = self.stats.take_window()
        chat = [s for k in CHAT_KINDS for s in window.get(k, [])]
        report = self.stats.report()
        row = {
            "t_s": round(t, 1),
            "rss_anon_mb": round(min(anon_reads), 1) if anon_reads else None,
            "rss_mb": round(min(rss_reads), 1) if rss_reads else None,
            "fds": min(fd_reads) if fd_reads else None,
            "threads": threads,
            "jobs_stored": int(metrics["qvl_jobs_stored"]) if "qvl_jobs_stored" in metrics else None,
            "store_rows": rows,
            "store_orphans": orphans,
            "latency_s": percentile(chat, 0.5),
            "health_s": timed_health(self.host, self.port),
            "chat_answers": len(chat),
            "latency_max_s": percentile(chat, 1.0),
            "rss_peak_mb": round(max(rss_reads), 1) if rss_reads else None,
            "fds_peak": max(fd_reads) if fd_reads else None,
            "slots_busy": metrics.get("qvl_slots_busy"),
            "queue_depth": metrics.get("qvl_queue_depth"),
            "requests": sum(k["requests"] for k in report.values()),
            "served_2xx": sum(k["served_2xx"] for k in report.values()),
        }
        self.rows.append(row)
        return row


def fit(ts, ys):
    """Least-squares line through the points: (slope, intercept)."""
    n = len(ts)
    mt, my = sum(ts) / n, sum(ys) / n
    var = sum((t - mt) ** 2 for t in ts)
    slope = sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / var if var else 0.0
    return slope, my - slope * mt


def judge(rows, duration, run):
    """Per series: the fit over the second half, its rise across the half, the band it must stay in."""
    half = duration / 2
    out = {}
    for name, (unit, band) in SERIES.items():
        pts = [(r["t_s"], r[name]) for r in rows if r[name] is not None and half <= r["t_s"] <= duration + 1]
        if name == "rss_mb" and out["rss_anon_mb"]["judged"]:
            out[name] = {"unit": unit, "judged": False, "why": "rss_anon_mb is judged: this one counts the model's "
                         "mapped files too, whose pages come in as they are first touched"}
            continue
        if not any(r[name] is not None for r in rows):
            out[name] = {"unit": unit, "judged": False, "why": "not read (RssAnon and threads need the server's "
                         "PID, the store series its SQLite file: --pid, --jobs-db)"}
            continue
        if len(pts) < 3:
            out[name] = {"unit": unit, "judged": False, "why": f"{len(pts)} samples in the second half"}
            continue
        ts, ys = zip(*pts)
        slope, icpt = fit(ts, ys)
        median = statistics.median(ys)
        allowed = band(median, run)
        window = max(ts) - min(ts)
        rise = slope * window
        out[name] = {"unit": unit, "judged": True, "slope_per_min": round(slope * 60, 4),
                     "limit_per_min": round(allowed / window * 60, 4), "rise": round(rise, 3),
                     "band": round(allowed, 3), "median": round(median, 3), "ok": rise <= allowed,
                     "fit": (min(ts), icpt + slope * min(ts), max(ts), icpt + slope * max(ts)), "samples": len(pts)}
    return out


def failures(verdict, stats, exit_info, drained_after, server_gone):
    lines = []
    for name, v in verdict.items():
        if v["judged"] and not v["ok"]:
            lines.append(f"{name} grows without bound: {v['slope_per_min']:+g} {v['unit']}/min fitted over the "
                         f"second half, a rise of {v['rise']:g} {v['unit']} past its band of {v['band']:g} "
                         f"(limit {v['limit_per_min']:g} {v['unit']}/min)")
    errors = ", ".join(f"{kind} {status} x{n}" for kind, by in sorted(stats.server_errors.items())
                       for status, n in sorted(by.items()))
    if errors:
        lines.append(f"requests answered 5xx: {errors}")
    report = stats.report()
    if "job_failed" in report:
        lines.append(f"jobs of good input ended failed: {report['job_failed']['statuses']} (by error code)")
    unserved = [k for k in GOOD_KINDS if k in report and report[k]["served_2xx"] == 0]
    if unserved:
        lines.append("no 2xx at all for " + ", ".join(f"{k} {report[k]['statuses']}" for k in unserved))
    if server_gone:
        lines.append(server_gone)
    elif drained_after is None:
        lines.append("slots or queue still busy 30 s after the load stopped (leaked slots)")
    if exit_info:
        lines.append(exit_info)
    return lines


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=2, help="how long the mix runs")
    ap.add_argument("--out", default="soak-out", help="folder for soak.json, soak.csv, soak.png (and server.log)")
    ap.add_argument("--qvl", default=os.path.join(ROOT, "build/qvl"))
    ap.add_argument("--model", default=os.path.join(ROOT, "tests/fixtures/tiny-qwen3vl"))
    ap.add_argument("--weights", help="the server's --weights (default: its own choice)")
    ap.add_argument("--threads", type=int, default=1, help="the server's compute threads")
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--queue-size", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=300, help="the server's --timeout (a 504 fails the run)")
    ap.add_argument("--job-ttl", type=float, help="the server's --job-ttl (default: an eighth of the run, 10-120 s)")
    ap.add_argument("--url", help="a running qvl serve instead of starting one")
    ap.add_argument("--pid", type=int, help="with --url: the server's PID, for /proc (RSS, fds, threads)")
    ap.add_argument("--jobs-db", help="with --url: the server's SQLite job store file, read read-only")
    ap.add_argument("--interval", type=float, default=10, help="seconds between samples")
    ap.add_argument("--workers", type=int, default=6, help="threads drawing clients from the mix")
    ap.add_argument("--slow-clients", type=int, default=3, help="threads running slow clients")
    ap.add_argument("--slow-seconds", type=float, default=20, help="how long each slow client trickles")
    ap.add_argument("--huge-json-kb", type=int, default=256, help='size of the {"x":[{},...]} body')
    ap.add_argument("--mix", help="kind=weight,... over the default weights (0 drops a kind)")
    ap.add_argument("--list-kinds", action="store_true", help="print the mix's kinds and weights, then exit")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    mix = parse_mix(a.mix)
    if a.list_kinds:
        print(json.dumps({"mix": mix, "slow": list(SLOW_KINDS)}, indent=1))
        return 0
    duration = a.minutes * 60
    if duration < 6 * a.interval:
        sys.exit(f"soak: --minutes {a.minutes} gives under 3 samples in the second half at --interval {a.interval}")
    os.makedirs(a.out, exist_ok=True)

    proc = state = None
    db_path = a.jobs_db
    job_ttl = a.job_ttl if a.job_ttl is not None else min(120, max(10, duration / 8))
    if a.url:
        u = urllib.parse.urlparse(a.url)
        host, port = u.hostname, u.port or 80
    else:
        state = tempfile.TemporaryDirectory(prefix="qvl-soak-")
        db_path = os.path.join(state.name, "jobs.db")
        options = ["--model", a.model, "--threads", str(a.threads), "--parallel", str(a.parallel),
                   "--queue-size", str(a.queue_size), "--timeout", str(a.timeout), "--job-ttl", str(job_ttl),
                   "--jobs-db", "sqlite:" + db_path, "--state-dir", state.name,
                   "--max-body-bytes", str(8 << 20), "--log-format", "json"]
        if a.weights:
            options += ["--weights", a.weights]
        proc, host, port = start_server(a.qvl, options, log=os.path.join(a.out, "server.log"))
    # Stopped from outside (SIGTERM, Ctrl-C), the server it started goes with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("soak: stopped by SIGTERM"))
    try:
        pid = proc.pid if proc else a.pid
        wait_healthy(host, port, seconds=600)

        random.seed(a.seed)
        stats = Stats()
        cl = Clients(host, port, Media(), a.huge_json_kb, a.slow_seconds, stats, job_seconds=a.timeout)
        kinds = [k for k, w in mix.items() for _ in range(w)]
        run = argparse.Namespace(connections=a.workers + a.slow_clients)
        sampler = Sampler(host, port, pid, db_path, stats)
        crashes = []
        t0 = time.time()
        end = t0 + duration

        def server_gone():
            if proc and proc.poll() is not None:
                return f"qvl serve exited with {proc.returncode} during the run"
            return crashes[0] if crashes else None

        def worker(seed, choices):
            rnd = random.Random(seed)
            while time.time() < end and not server_gone():
                getattr(cl, rnd.choice(choices))()

        threads = [threading.Thread(target=worker, args=(a.seed * 1000 + i, kinds)) for i in range(a.workers)]
        threads += [threading.Thread(target=worker, args=(a.seed * 1000 + 500 + i, SLOW_KINDS))
                    for i in range(a.slow_clients)]
        sampler.sample(0.0)
        for t in threads:
            t.start()
        k = 1
        while not server_gone():
            next_at = t0 + k * a.interval
            if next_at > end + 0.5:
                break
            while time.time() < next_at - 0.25:
                time.sleep(0.25)
                sampler.tick()
            time.sleep(max(0, next_at - time.time()))
            row = sampler.sample(time.time() - t0)
            if row["health_s"] is None and not proc and timed_health(host, port) is None:
                crashes.append(f"the server stopped answering /health at {row['t_s']} s")
            print(json.dumps(row), file=sys.stderr, flush=True)
            k += 1
        cl.stopping.set()  # polls still running end at their next look
        for t in threads:
            t.join()

        gone = server_gone()
        drained_after, metrics = wait_drained(host, port) if not gone else (None, {})
        exit_info = None
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(timeout=60)
                if code != 0:
                    exit_info = f"qvl serve exited with {code} on SIGTERM after the run"
            except Exception:
                proc.kill()
                exit_info = "qvl serve did not exit within 60 s of SIGTERM"

        rows = sampler.rows
        verdict = judge(rows, duration, run)
        fails = failures(verdict, stats, exit_info, drained_after, gone)
        summary = {
            "server": a.url or f"{a.qvl} serve --model {a.model}" + (f" --weights {a.weights}" if a.weights else ""),
            "minutes": a.minutes, "interval_s": a.interval, "workers": a.workers, "slow_clients": a.slow_clients,
            "job_ttl_s": None if a.url else job_ttl, "mix": mix,
            "requests": sum(v["requests"] for v in stats.report().values()),
            "served_2xx": sum(v["served_2xx"] for v in stats.report().values()),
            "server_errors_5xx": {k: v for k, v in stats.server_errors.items()},
            "drained_after_s": drained_after, "sources_failed": sampler.errors,
            "series": {k: {kk: vv for kk, vv in v.items() if kk != "fit"} for k, v in verdict.items()},
            "failures": fails, "by_kind": stats.report(), "samples": rows,
        }
        with open(os.path.join(a.out, "soak.json"), "w") as f:
            json.dump(summary, f, indent=1)
        write_csv(os.path.join(a.out, "soak.csv"), rows)
        panels = [{"name": name, "unit": v["unit"], "t": [r["t_s"] for r in rows], "y": [r[name] for r in rows],
                   "fit": v.get("fit"), "ok": v.get("ok", True),
                   "label": (f"{v['slope_per_min']:+.3g}/MIN, LIMIT {v['limit_per_min']:.3g}/MIN" if v["judged"]
                             else "NOT JUDGED")}
                  for name, v in verdict.items()]
        title = f"QVL SOAK {a.minutes:g} MIN: {os.path.basename(a.model.rstrip('/')) if not a.url else a.url}" + \
                (f" {a.weights}" if a.weights and not a.url else "") + (" - FAIL" if fails else " - PASS")
        drawn = render_png(os.path.join(a.out, "soak.png"), title, panels)

        for name, v in verdict.items():
            if v["judged"]:
                print(f"soak: {name:12s} slope {v['slope_per_min']:+10.4g} {v['unit']}/min  limit "
                      f"{v['limit_per_min']:8.4g}  median {v['median']:g}  {'ok' if v['ok'] else 'GROWS'}")
            else:
                print(f"soak: {name:12s} not judged ({v['why']})")
        print(f"soak: {summary['requests']} requests, {summary['served_2xx']} answered 2xx; series in "
              f"{a.out}/soak.json, soak.csv, soak.png ({drawn})")
        for line in fails:
            print("soak: FAIL: " + line, file=sys.stderr)
        return 1 if fails else 0
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        if state:
            state.cleanup()


if __name__ == "__main__":
    sys.exit(main())
