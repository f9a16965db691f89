#!/usr/bin/env python3
"""Load and soak runs of `qvl serve`: good, hostile, slow and abandoned clients, jobs and cancels
for a fixed time, loopback only. Prints one JSON object.

    python3 bench/serve_load.py --qvl build/qvl --duration 300 [--model tests/fixtures/tiny-qwen3vl]
    python3 bench/serve_load.py --soak 10                         # starts qvl serve on the tiny model
    python3 bench/serve_load.py --soak 10 --url http://127.0.0.1:8080 [--pid PID]   # a running server

Without --url it starts the server itself (so it sees it exit); with --url a crash is the server
refusing connections. The report: requests per kind and status, latency per kind (p50, max),
/health latency while it runs (the slow clients must not stall it), crashes, slots and queue
left busy at the end (leaks: they must drain to 0), RSS at start / middle / end and max (from
/metrics process_resident_memory_bytes, else /proc/PID).
--soak adds the slow clients (trickled headers and bodies, idle sockets) and the hostile mix
(wrong content types, a large {"x":[{},...]} body, a JPEG declaring 10000x10000, pipelining).

Not part of `make test` (it runs for minutes). python3 standard library only.
"""
import argparse, http.client, json, os, random, signal, threading, time
import urllib.parse

from serve_clients import (ROOT, Clients, Media, Stats, percentile, read_metrics, rss_bytes, start_server,
                           wait_drained, wait_healthy)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--qvl", default=os.path.join(ROOT, "build/qvl"))
    ap.add_argument("--model", default=os.path.join(ROOT, "tests/fixtures/tiny-qwen3vl"))
    ap.add_argument("--duration", type=float, default=300, help="seconds (the plain load run)")
    ap.add_argument("--soak", type=float, metavar="MINUTES", help="the soak mix for MINUTES instead")
    ap.add_argument("--url", help="a running qvl serve (default: start one on the model)")
    ap.add_argument("--pid", type=int, help="the running server's pid, for RSS when /metrics lacks it")
    ap.add_argument("--workers", type=int, default=6, help="client threads running the request mix")
    ap.add_argument("--slow-clients", type=int, default=8, help="--soak: concurrent slow connections")
    ap.add_argument("--slow-seconds", type=float, default=20, help="how long each slow client trickles")
    ap.add_argument("--huge-json-kb", type=int, default=256, help='size of the {"x":[{},...]} body')
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--queue-size", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    duration = a.soak * 60 if a.soak is not None else a.duration

    proc = None
    if a.url:
        u = urllib.parse.urlparse(a.url)
        host, port = u.hostname, u.port or 80
    else:
        proc, host, port = start_server(a.qvl, ["--model", a.model, "--threads", str(a.threads),
                                                "--parallel", str(a.parallel), "--queue-size", str(a.queue_size),
                                                "--max-body-bytes", str(8 << 20), "--timeout", "60",
                                                "--log-format", "json"])
    pid = proc.pid if proc else a.pid
    wait_healthy(host, port)

    stats = Stats()
    cl = Clients(host, port, Media(), a.huge_json_kb, a.slow_seconds, stats)
    mix = [cl.good_plain, cl.good_image, cl.good_image, cl.good_stream, cl.good_stream, cl.hang_up_stream,
           cl.bad_json, cl.bad_type, cl.deep, cl.bad_b64, cl.corrupt_image, cl.oversized, cl.job, cl.misc]
    if a.soak is not None:
        mix += [cl.good_plain, cl.good_stream, cl.job, cl.response_store_cancel, cl.hang_up_waiting,
                cl.hang_up_mid_body, cl.big_number, cl.huge_list, cl.jpeg_bomb, cl.wrong_content_type,
                cl.pipelined]
    slow_mix = [cl.slow_headers, cl.slow_body, cl.idle]

    t0 = time.time()
    end = t0 + duration
    rss = [(0.0, rss_bytes(host, port, pid))]
    crashes = []
    health = []  # /health latency while the mix runs; None when it failed
    stop = threading.Event()

    def server_down():
        if proc:
            return proc.poll() is not None
        return len(crashes) > 0

    def worker(seed, choices):
        rnd = random.Random(seed)
        while time.time() < end and not server_down():
            rnd.choice(choices)()

    def prober():
        refused = 0
        while not stop.is_set():
            t = time.time()
            try:
                c = http.client.HTTPConnection(host, port, timeout=10)
                c.request("GET", "/health")
                c.getresponse().read()
                health.append(time.time() - t)
                refused = 0
            except ConnectionRefusedError:
                refused += 1
                health.append(None)
                if refused == 3 and not proc:
                    crashes.append(f"refused connections at {round(time.time() - t0, 1)} s")
            except Exception:
                health.append(None)
            stop.wait(0.5)

    threads = [threading.Thread(target=worker, args=(i, mix)) for i in range(a.workers)]
    if a.soak is not None:
        threads += [threading.Thread(target=worker, args=(1000 + i, slow_mix)) for i in range(a.slow_clients)]
    probe = threading.Thread(target=prober)
    for t in threads + [probe]:
        t.start()
    while time.time() < end:
        time.sleep(min(5, max(0, end - time.time())))
        if proc and proc.poll() is not None:
            crashes.append(f"exit code {proc.returncode} at {round(time.time() - t0, 1)} s")
            break
        rss.append((round(time.time() - t0, 1), rss_bytes(host, port, pid)))
    for t in threads:
        t.join()
    stop.set()
    probe.join()

    # Hung-up and cancelled work must drain: slots and queue back to 0 within 30 s.
    drained_after, metrics = wait_drained(host, port) if not server_down() else (None, {})
    rss_end = rss_bytes(host, port, pid) if not server_down() else None
    code = None
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    elif proc:
        code = proc.returncode

    by_kind = stats.report()
    ok_health = [h for h in health if h is not None]
    samples = [r for _, r in rss if r is not None]
    print(json.dumps({
        "mode": "soak" if a.soak is not None else "load", "duration_s": round(time.time() - t0, 1),
        "server": a.url or a.qvl, "workers": a.workers, "slow_clients": a.slow_clients if a.soak is not None else 0,
        "requests": sum(k["requests"] for k in by_kind.values()),
        "served_2xx": sum(k["served_2xx"] for k in by_kind.values()),
        "by_kind": by_kind,
        "health": {"probes": len(health), "failed": len(health) - len(ok_health),
                   "p50_s": percentile(ok_health, 0.5), "p99_s": percentile(ok_health, 0.99),
                   "max_s": percentile(ok_health, 1.0)},
        "crashes": crashes, "exit_code_on_sigterm": code,
        "slots_busy_after": metrics.get("qvl_slots_busy"), "queue_depth_after": metrics.get("qvl_queue_depth"),
        "drained_after_s": drained_after,
        "leaked_slots": metrics.get("qvl_slots_busy"), "leaked_queue": metrics.get("qvl_queue_depth"),
        "generations": {k: v for k, v in metrics.items() if k.startswith("qvl_generations_total")},
        "rss_mb": {"start": samples[0] >> 20 if samples else None,
                   "middle": samples[len(samples) // 2] >> 20 if samples else None,
                   "end": rss_end >> 20 if rss_end else None,
                   "max": max(samples + [rss_end or 0]) >> 20 if samples else None},
        "rss_samples_mb": [(t, r >> 20 if r else None) for t, r in rss],
    }, indent=1))


if __name__ == "__main__":
    main()
