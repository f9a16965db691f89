#!/usr/bin/env python3
"""Load run of `qvl serve`: mixed good and bad requests for a fixed time, loopback only.

Starts the server itself (so it can watch its RSS and that it never dies), runs WORKERS client
threads for DURATION seconds, then checks that no slot leaked and prints one JSON object:
requests by kind and status, crashes, RSS at start/end/max, leaked slots.

    python3 bench/serve_load.py --qvl build/qvl --duration 300 [--model tests/fixtures/tiny-qwen3vl]

Not part of `make test` (it runs for minutes).
"""
import argparse, base64, http.client, json, os, random, re, signal, socket, subprocess, sys, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Load:
    def __init__(self, port, image_b64):
        self.port = port
        self.img = image_b64
        self.lock = threading.Lock()
        self.counts = {}

    def count(self, kind, status):
        with self.lock:
            key = f"{kind}:{status}"
            self.counts[key] = self.counts.get(key, 0) + 1

    def conn(self, timeout=120):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def post(self, path, body, kind, ctype="application/json"):
        c = self.conn()
        try:
            c.request("POST", path, body=body, headers={"Content-Type": ctype})
            r = c.getresponse()
            data = r.read()
            self.count(kind, r.status)
            return r.status, data
        except Exception as e:  # a dropped connection is a finding, counted
            self.count(kind, type(e).__name__)
            return None, b""
        finally:
            c.close()

    def chat(self, text, image=False, max_tokens=16, **extra):
        content = [{"type": "text", "text": text}]
        if image:
            content.insert(0, {"type": "image_url", "image_url": {"url": "data:image/png;base64," + self.img}})
        body = {"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": max_tokens}
        body.update(extra)
        return body

    # ---- the request mix
    def good_plain(self):
        self.post("/v1/chat/completions", json.dumps(self.chat("Hello there", max_tokens=8)), "good_plain")

    def good_image(self):
        self.post("/v1/chat/completions", json.dumps(self.chat("What is this?", True)), "good_image")

    def good_stream(self):
        self.post("/v1/chat/completions", json.dumps(self.chat("Describe", True, stream=True,
                                                                stream_options={"include_usage": True})), "good_stream")

    def stream_then_hang_up(self):
        body = json.dumps(self.chat("Describe at great length", True, 2000, stream=True)).encode()
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        try:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            s.recv(2048)  # the headers / first chunk, then gone
            self.count("hang_up", "sent")
        except Exception as e:
            self.count("hang_up", type(e).__name__)
        finally:
            s.close()

    def bad_json(self):
        self.post("/v1/chat/completions", b'{"messages": [', "bad_json")

    def bad_type(self):
        self.post("/v1/chat/completions", json.dumps(self.chat("x", temperature="hot")), "bad_type")

    def deep(self):
        self.post("/v1/chat/completions", b'{"messages":' + b"[" * 100000 + b"]" * 100000 + b"}", "deep")

    def bad_b64(self):
        b = self.chat("x")
        b["messages"][0]["content"].insert(0, {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}})
        self.post("/v1/chat/completions", json.dumps(b), "bad_base64")

    def corrupt_image(self):
        junk = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(2000)).decode()
        b = self.chat("x")
        b["messages"][0]["content"].insert(0, {"type": "image_url", "image_url": {"url": "data:image/png;base64," + junk}})
        self.post("/v1/chat/completions", json.dumps(b), "corrupt_image")

    def oversized(self):
        self.post("/v1/chat/completions", b'{"x":"' + b"a" * (9 << 20) + b'"}', "oversized")

    def job(self):
        status, data = self.post("/v1/jobs", json.dumps(self.chat("Job?", True)), "job_create")
        if status != 202:
            return
        jid = json.loads(data)["id"]
        c = self.conn()
        try:
            if random.random() < 0.3:
                c.request("DELETE", "/v1/jobs/" + jid)
                r = c.getresponse(); r.read(); self.count("job_delete", r.status)
                return
            for _ in range(200):
                c.request("GET", "/v1/jobs/" + jid)
                r = c.getresponse(); d = json.loads(r.read())
                if d["status"] not in ("queued", "running"):
                    self.count("job_final", d["status"])
                    return
                time.sleep(0.05)
        except Exception as e:
            self.count("job_poll", type(e).__name__)
        finally:
            c.close()

    def misc(self):
        c = self.conn()
        try:
            for path in ("/health", "/metrics", "/v1/models", "/", "/nope"):
                c.request("GET", path)
                r = c.getresponse(); r.read(); self.count("get" + path, r.status)
        except Exception as e:
            self.count("misc", type(e).__name__)
        finally:
            c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qvl", default=os.path.join(ROOT, "build/qvl"))
    ap.add_argument("--model", default=os.path.join(ROOT, "tests/fixtures/tiny-qwen3vl"))
    ap.add_argument("--duration", type=float, default=300)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--queue-size", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()

    proc = subprocess.Popen([a.qvl, "serve", "--model", a.model, "--port", "0", "--threads", str(a.threads),
                             "--parallel", str(a.parallel), "--queue-size", str(a.queue_size),
                             "--max-body-bytes", str(8 << 20), "--timeout", "60", "--log-format", "json"],
                            stderr=subprocess.PIPE, text=True)
    port = None
    while port is None:
        line = proc.stderr.readline()
        if not line:
            sys.exit("qvl serve exited before listening")
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
    log_lines = [0]
    threading.Thread(target=lambda: [log_lines.__setitem__(0, log_lines[0] + 1) for _ in proc.stderr],
                     daemon=True).start()
    while True:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5); c.request("GET", "/health")
            if c.getresponse().status == 200:
                break
        except OSError:
            pass
        time.sleep(0.1)

    img = base64.b64encode(open(os.path.join(ROOT, "tests/fixtures/golden/images/gradient_320x240.png"), "rb").read()).decode()
    load = Load(port, img)
    mix = [load.good_plain, load.good_image, load.good_image, load.good_stream, load.good_stream,
           load.stream_then_hang_up, load.bad_json, load.bad_type, load.deep, load.bad_b64, load.corrupt_image,
           load.oversized, load.job, load.misc]
    rss = [(0.0, rss_kb(proc.pid))]
    t0 = time.time()
    end = t0 + a.duration
    crashed = []

    def worker(seed):
        rnd = random.Random(seed)
        while time.time() < end and proc.poll() is None:
            rnd.choice(mix)()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(a.workers)]
    for t in threads:
        t.start()
    while time.time() < end:
        time.sleep(5)
        if proc.poll() is not None:
            crashed.append(proc.returncode)
            break
        rss.append((round(time.time() - t0, 1), rss_kb(proc.pid)))
    for t in threads:
        t.join()

    time.sleep(1)  # hung-up streams are cancelled within a step; give them one
    metrics = {}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    for line in c.getresponse().read().decode().splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            metrics[k] = float(v)
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=60)
    total = sum(load.counts.values())
    print(json.dumps({
        "duration_s": round(time.time() - t0, 1), "workers": a.workers, "requests": total,
        "by_kind_status": dict(sorted(load.counts.items())),
        "crashes": len(crashed), "exit_code_on_sigterm": code,
        "slots_busy_after": metrics.get("qvl_slots_busy"), "queue_depth_after": metrics.get("qvl_queue_depth"),
        "generations": {k: v for k, v in metrics.items() if k.startswith("qvl_generations_total")},
        "rss_kb_start": rss[1][1] if len(rss) > 1 else rss[0][1], "rss_kb_end": rss[-1][1],
        "rss_kb_max": max(r for _, r in rss), "rss_samples": rss, "log_lines": log_lines[0],
    }, indent=1))


if __name__ == "__main__":
    main()
