#!/usr/bin/env python3
"""Sizing figures for docs/deploy.md, measured on this host: memory per weight format, and how to
split the cores between replicas.

    python3 bench/replica_sizing.py --qvl build/qvl --model /work/models/random-2b \\
        [--formats bf16,q8,q4] [--layouts 1x2,2x1] [--clients 4] [--seconds 60] [--rounds 2]

memory: for each --weights format, one `qvl serve` (--ctx-size 8192): RSS after loading, after
  one image question, and qvl_weights_bytes / qvl_kv_cache_bytes from /metrics.
layouts: "RxT" is R replicas with T threads each (R*T = the cores to use), each with
  --parallel = clients / R; CLIENTS concurrent clients, spread round-robin over the replicas (as a
  balancer would), ask short image questions for SECONDS. Layouts alternate over ROUNDS so the
  machine's noise falls on each alike. Reports completion tokens/s and median latency per layout,
  and each layout's throughput as a ratio to the first.
Prints one JSON object. Python standard library only; not part of `make test`.
"""
import argparse, base64, http.client, json, os, socket, statistics, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMAGE = os.path.join(ROOT, "tests/fixtures/golden/images/gradient_320x240.png")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    c.request("GET", path)
    r = c.getresponse()
    return r.status, r.read().decode()


def metrics(port):
    out = {}
    for line in get(port, "/metrics")[1].splitlines():
        if line and line[0] != "#":
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


class Replica:
    def __init__(self, qvl, model, args):
        self.port = free_port()
        self.proc = subprocess.Popen([qvl, "serve", "--model", model, "--port", str(self.port)] + args,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        start = time.time()
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"replica_sizing: qvl serve {' '.join(args)} exited with {self.proc.returncode}")
            try:
                if get(self.port, "/health", 2)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        self.load_s = time.time() - start

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def question(port, image_uri, max_tokens=32):
    body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image_uri}},
                                                      {"type": "text", "text": "What is in this image?"}]}],
            "max_tokens": max_tokens, "temperature": 0}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    payload = json.loads(r.read())
    if r.status != 200:
        raise SystemExit(f"replica_sizing: a question failed: {r.status} {payload}")
    return payload["usage"]["completion_tokens"]


def memory(qvl, model, fmt, image_uri):
    r = Replica(qvl, model, ["--weights", fmt, "--ctx-size", "8192", "--threads", "0"])
    try:
        loaded = metrics(r.port)
        question(r.port, image_uri)
        after = metrics(r.port)
        return {"weights": fmt, "load_s": round(r.load_s, 1),
                "weights_mb": round(loaded.get("qvl_weights_bytes", 0) / 2**20),
                "kv_reserved_mb": round(loaded.get("qvl_kv_cache_bytes", 0) / 2**20),
                "rss_loaded_mb": round(loaded["process_resident_memory_bytes"] / 2**20),
                "rss_after_question_mb": round(after["process_resident_memory_bytes"] / 2**20)}
    finally:
        r.stop()


def run_layout(replicas, clients, seconds, image_uri):
    tokens, latencies, lock = [0], [], threading.Lock()
    end = time.time() + seconds

    def client(i):
        port = replicas[i % len(replicas)].port
        while time.time() < end:
            t = time.time()
            n = question(port, image_uri)
            with lock:
                tokens[0] += n
                latencies.append(time.time() - t)

    start = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tokens[0], time.time() - start, latencies


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qvl", default=os.path.join(ROOT, "build/qvl"))
    ap.add_argument("--model", required=True)
    ap.add_argument("--formats", default="bf16,q8,q4")
    ap.add_argument("--layouts", default="1x2,2x1")
    ap.add_argument("--layout-weights", default="q4")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    image_uri = "data:image/png;base64," + base64.b64encode(open(IMAGE, "rb").read()).decode()
    out = {"cpus": os.cpu_count(), "memory": [], "layouts": {}}
    for fmt in filter(None, a.formats.split(",")):
        out["memory"].append(memory(a.qvl, a.model, fmt, image_uri))
        print(json.dumps(out["memory"][-1]), file=sys.stderr)
    layouts = [tuple(map(int, l.split("x"))) for l in filter(None, a.layouts.split(","))]
    totals = {l: [0, 0.0, []] for l in layouts}
    for rnd in range(a.rounds):
        for reps, threads in layouts:
            parallel = max(1, a.clients // reps)
            rs = [Replica(a.qvl, a.model, ["--weights", a.layout_weights, "--threads", str(threads),
                                           "--parallel", str(parallel), "--ctx-size", str(4096 * parallel)])
                  for _ in range(reps)]
            try:
                question(rs[0].port, image_uri)  # warm: first-touch of the weights
                n, s, lat = run_layout(rs, a.clients, a.seconds, image_uri)
            finally:
                for r in rs:
                    r.stop()
            t = totals[(reps, threads)]
            t[0] += n
            t[1] += s
            t[2] += lat
            print(f"round {rnd + 1}: {reps}x{threads}: {n / s:.2f} tok/s", file=sys.stderr)
    base = None
    for (reps, threads), (n, s, lat) in totals.items():
        rate = n / s if s else 0
        base = base or rate
        out["layouts"][f"{reps}x{threads}"] = {
            "replicas": reps, "threads_each": threads, "completion_tok_s": round(rate, 2),
            "ratio_to_first": round(rate / base, 3) if base else None,
            "median_latency_s": round(statistics.median(lat), 2) if lat else None, "questions": len(lat)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
