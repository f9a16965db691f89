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
import argparse, base64, http.client, json, os, random, re, signal, socket, struct, subprocess, sys, threading, time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHAT = "/v1/chat/completions"


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 3)


def jpeg_bomb(path):
    """A real JPEG whose frame header claims 10000x10000, cut off after the first scan bytes:
    a few hundred bytes that a decoder which allocates by the header turns into 300 MB."""
    data = bytearray(open(path, "rb").read())
    i = 2
    while i + 4 < len(data):
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            data[i + 5:i + 9] = struct.pack(">HH", 10000, 10000)
        if marker == 0xDA:
            return bytes(data[:i + 2 + length + 64])
        i += 2 + length
    return bytes(data)


class Stats:
    """Outcomes by kind: status (or exception name) counts and latencies."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.latency = {}

    def count(self, kind, status, seconds=None):
        with self.lock:
            by_status = self.counts.setdefault(kind, {})
            by_status[str(status)] = by_status.get(str(status), 0) + 1
            if seconds is not None:
                self.latency.setdefault(kind, []).append(seconds)

    def report(self):
        with self.lock:
            return {k: {"statuses": dict(sorted(v.items())), "requests": sum(v.values()),
                        "served_2xx": sum(n for s, n in v.items() if s.startswith("2")),
                        "p50_s": percentile(self.latency.get(k, []), 0.5),
                        "max_s": percentile(self.latency.get(k, []), 1.0)}
                    for k, v in sorted(self.counts.items())}


class Clients:
    def __init__(self, host, port, image_b64, bomb_b64, huge_json_kb, slow_seconds, stats):
        self.host, self.port = host, port
        self.img, self.bomb = image_b64, bomb_b64
        self.huge_json_kb = huge_json_kb
        self.slow_seconds = slow_seconds
        self.stats = stats

    def conn(self, timeout=120):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body, kind, ctype="application/json", read=True):
        t0 = time.time()
        c = self.conn()
        try:
            headers = {"Content-Type": ctype} if ctype else {}
            c.request(method, path, body=body, headers=headers)
            r = c.getresponse()
            data = r.read() if read else b""
            self.stats.count(kind, r.status, time.time() - t0)
            return r.status, data
        except Exception as e:  # a dropped connection is a finding, counted
            self.stats.count(kind, type(e).__name__, time.time() - t0)
            return None, b""
        finally:
            c.close()

    def post(self, path, body, kind, ctype="application/json"):
        return self.request("POST", path, body, kind, ctype)

    def raw(self, payload, kind, read_until_close=True, timeout=30):
        """Sends bytes on a socket; the status is the first response line's code, or how it ended."""
        t0 = time.time()
        s = socket.create_connection((self.host, self.port), timeout=timeout)
        try:
            s.sendall(payload)
            got = b""
            while read_until_close:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
            m = re.match(rb"HTTP/1\.[01] (\d+)", got)
            self.stats.count(kind, m.group(1).decode() if m else "closed_without_answer", time.time() - t0)
            return got
        except Exception as e:
            self.stats.count(kind, type(e).__name__, time.time() - t0)
            return b""
        finally:
            s.close()

    def chat(self, text, image=None, max_tokens=16, **extra):
        content = [{"type": "text", "text": text}]
        if image:
            content.insert(0, {"type": "image_url", "image_url": {"url": image}})
        body = {"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": max_tokens}
        body.update(extra)
        return body

    def png_url(self):
        return "data:image/png;base64," + self.img

    def http_post(self, body, ctype="application/json", extra_headers=b""):
        return (f"POST {CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\n").encode() + extra_headers + b"\r\n" + body

    # ---- good clients
    def good_plain(self):
        self.post(CHAT, json.dumps(self.chat("Hello there", max_tokens=8)), "good_plain")

    def good_image(self):
        self.post(CHAT, json.dumps(self.chat("What is this?", self.png_url())), "good_image")

    def good_stream(self):
        body = json.dumps(self.chat("Describe", self.png_url(), stream=True, stream_options={"include_usage": True}))
        status, data = self.post(CHAT, body, "good_stream")
        if status == 200 and not data.rstrip().endswith(b"data: [DONE]"):
            self.stats.count("good_stream_incomplete", "no_done")

    def misc(self):
        for path in ("/health", "/metrics", "/v1/models", "/", "/nope"):
            self.request("GET", path, None, "get" + path, ctype=None)

    # ---- jobs and cancels
    def job(self):
        status, data = self.post("/v1/jobs", json.dumps(self.chat("Job?", self.png_url())), "job_create")
        if status != 202:
            return
        jid = json.loads(data)["id"]
        if random.random() < 0.3:
            time.sleep(random.random() * 0.5)
            self.request("DELETE", "/v1/jobs/" + jid, None, "job_cancel", ctype=None)
            return
        for _ in range(400):
            status, data = self.request("GET", "/v1/jobs/" + jid, None, "job_poll", ctype=None)
            if status != 200:
                return
            state = json.loads(data)["status"]
            if state not in ("queued", "running"):
                self.stats.count("job_final", state)
                return
            time.sleep(0.05)
        self.stats.count("job_final", "still_running_after_poll")

    def response_store_cancel(self):
        body = json.dumps({"input": "Say hi", "max_output_tokens": 8, "store": True})
        status, data = self.post("/v1/responses", body, "response_create")
        if status == 200:
            rid = json.loads(data).get("id", "")
            self.request("DELETE", "/v1/responses/" + rid, None, "response_delete", ctype=None)

    # ---- abandoned clients
    def hang_up_stream(self):
        body = json.dumps(self.chat("Describe at great length", self.png_url(), 2000, stream=True)).encode()
        t0 = time.time()
        s = socket.create_connection((self.host, self.port), timeout=60)
        try:
            s.sendall(self.http_post(body))
            s.recv(2048)  # the headers / first chunk, then gone
            self.stats.count("hang_up_stream", "sent", time.time() - t0)
        except Exception as e:
            self.stats.count("hang_up_stream", type(e).__name__, time.time() - t0)
        finally:
            s.close()

    def hang_up_waiting(self):
        body = json.dumps(self.chat("Write a long story", None, 500)).encode()
        s = socket.create_connection((self.host, self.port), timeout=30)
        try:
            s.sendall(self.http_post(body))
            time.sleep(random.random() * 2)  # queued or generating, then gone
            self.stats.count("hang_up_waiting", "sent")
        except Exception as e:
            self.stats.count("hang_up_waiting", type(e).__name__)
        finally:
            s.close()

    def hang_up_mid_body(self):
        body = json.dumps(self.chat("x" * 4000)).encode()
        s = socket.create_connection((self.host, self.port), timeout=30)
        try:
            s.sendall(self.http_post(body)[:len(body) // 2])
            self.stats.count("hang_up_mid_body", "sent")
        except Exception as e:
            self.stats.count("hang_up_mid_body", type(e).__name__)
        finally:
            s.close()

    # ---- hostile clients
    def bad_json(self):
        self.post(CHAT, b'{"messages": [', "bad_json")

    def bad_type(self):
        self.post(CHAT, json.dumps(self.chat("x", temperature="hot")), "bad_type")

    def big_number(self):
        self.post(CHAT, b'{"messages":[{"role":"user","content":"x"}],"max_tokens":1e400}', "big_number")

    def deep(self):
        self.post(CHAT, b'{"messages":' + b"[" * 100000 + b"]" * 100000 + b"}", "deep_json")

    def huge_list(self):
        n = self.huge_json_kb * 1024 // 3
        self.post(CHAT, b'{"x":[' + b"{}," * n + b'{}],"messages":[{"role":"user","content":"x"}]}', "huge_list_json")

    def bad_b64(self):
        self.post(CHAT, json.dumps(self.chat("x", "data:image/png;base64,@@@")), "bad_base64")

    def corrupt_image(self):
        junk = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(2000)).decode()
        self.post(CHAT, json.dumps(self.chat("x", "data:image/png;base64," + junk)), "corrupt_image")

    def jpeg_bomb(self):
        self.post(CHAT, json.dumps(self.chat("x", "data:image/jpeg;base64," + self.bomb)), "jpeg_bomb")

    def oversized(self):
        self.post(CHAT, b'{"x":"' + b"a" * (9 << 20) + b'"}', "oversized")

    def wrong_content_type(self):
        body = json.dumps(self.chat("Hello", max_tokens=4))
        ctype = random.choice(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])
        self.post(CHAT, body, "ctype:" + ctype.split(";")[0], ctype)

    def pipelined(self):
        one = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        got = self.raw(one + one + b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                       "pipelined", timeout=10)
        self.stats.count("pipelined_answers", len(re.findall(rb"HTTP/1\.1 \d+", got)))

    # ---- slow clients: each holds a connection for up to slow_seconds
    def slow_headers(self):
        request = self.http_post(json.dumps(self.chat("Hi", max_tokens=4)).encode())
        head = request.split(b"\r\n\r\n")[0]
        self.trickle("slow_headers", head, len(head) / self.slow_seconds, rest=request[len(head):])

    def slow_body(self):
        request = self.http_post(json.dumps(self.chat("Hi " * 200, max_tokens=4)).encode())
        head_len = request.index(b"\r\n\r\n") + 4
        body_len = len(request) - head_len
        self.trickle("slow_body", request, body_len / self.slow_seconds, sent_at_once=head_len)

    def idle(self):
        """Connects and sends nothing: held_open if the server keeps it for slow_seconds."""
        t0 = time.time()
        s = socket.create_connection((self.host, self.port), timeout=self.slow_seconds)
        try:
            got = s.recv(4096)
            self.stats.count("idle_socket", "closed_by_server" if not got else "answered", time.time() - t0)
        except socket.timeout:
            self.stats.count("idle_socket", "held_open", time.time() - t0)
        except Exception as e:
            self.stats.count("idle_socket", type(e).__name__, time.time() - t0)
        finally:
            s.close()

    def trickle(self, kind, data, bytes_per_s, sent_at_once=0, rest=b""):
        """Sends data at bytes_per_s (after sent_at_once bytes), then rest; the outcome is the
        server's answer, or the server closing the connection and when."""
        t0 = time.time()
        s = socket.create_connection((self.host, self.port), timeout=self.slow_seconds + 30)
        try:
            s.sendall(data[:sent_at_once])
            sent = sent_at_once
            while sent < len(data):
                step = max(1, int(bytes_per_s / 4))
                s.sendall(data[sent:sent + step])
                sent += step
                time.sleep(0.25)
            s.sendall(rest)
            got = s.recv(4096)
            m = re.match(rb"HTTP/1\.[01] (\d+)", got)
            self.stats.count(kind, m.group(1).decode() if m else "closed_by_server", time.time() - t0)
        except (BrokenPipeError, ConnectionResetError):
            self.stats.count(kind, "closed_by_server", time.time() - t0)
        except Exception as e:
            self.stats.count(kind, type(e).__name__, time.time() - t0)
        finally:
            s.close()


def read_metrics(host, port):
    c = http.client.HTTPConnection(host, port, timeout=10)
    try:
        c.request("GET", "/metrics")
        metrics = {}
        for line in c.getresponse().read().decode().splitlines():
            if line and not line.startswith("#"):
                k, v = line.rsplit(" ", 1)
                metrics[k] = float(v)
        return metrics
    finally:
        c.close()


def rss_bytes(host, port, pid):
    try:
        rss = read_metrics(host, port).get("process_resident_memory_bytes")
        if rss is not None:
            return int(rss)
    except Exception:
        pass
    if pid:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    return None


def start_server(a):
    proc = subprocess.Popen([a.qvl, "serve", "--model", a.model, "--port", "0", "--threads", str(a.threads),
                             "--parallel", str(a.parallel), "--queue-size", str(a.queue_size),
                             "--max-body-bytes", str(8 << 20), "--timeout", "60", "--log-format", "json"],
                            stderr=subprocess.PIPE, text=True)
    while True:
        line = proc.stderr.readline()
        if not line:
            sys.exit("qvl serve exited before listening")
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            break
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()  # drain the log
    return proc, "127.0.0.1", int(m.group(1))


def wait_healthy(host, port, seconds=300):
    end = time.time() + seconds
    while time.time() < end:
        try:
            c = http.client.HTTPConnection(host, port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit(f"{host}:{port}/health did not answer 200 within {seconds} s")


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
        proc, host, port = start_server(a)
    pid = proc.pid if proc else a.pid
    wait_healthy(host, port)

    images = os.path.join(ROOT, "tests/fixtures/golden/images")
    img = base64.b64encode(open(os.path.join(images, "gradient_320x240.png"), "rb").read()).decode()
    bomb = base64.b64encode(jpeg_bomb(os.path.join(images, "gradient_320x240.jpg"))).decode()
    stats = Stats()
    cl = Clients(host, port, img, bomb, a.huge_json_kb, a.slow_seconds, stats)
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
    drained_after = None
    metrics = {}
    drain_start = time.time()
    while not server_down() and time.time() - drain_start < 30:
        try:
            metrics = read_metrics(host, port)
        except Exception:
            break
        if metrics.get("qvl_slots_busy") == 0 and metrics.get("qvl_queue_depth") == 0:
            drained_after = round(time.time() - drain_start, 1)
            break
        time.sleep(0.5)
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
