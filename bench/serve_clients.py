"""The clients that bench/serve_load.py and bench/soak.py send at `qvl serve`: good, hostile, slow
and abandoned ones, each counting its outcome by kind in a Stats; plus starting a server and
reading its /metrics. Loopback HTTP with python3's standard library only.
"""
import base64, http.client, json, os, random, re, socket, struct, subprocess, sys, threading, time

from pdf_writer import pdf_of_boxes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHAT = "/v1/chat/completions"
IMAGES = os.path.join(ROOT, "tests/fixtures/golden/images")
CLIP = os.path.join(ROOT, "tests/fixtures/video/videos/tiny_56x48_7.5fps.mp4")


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


class Media:
    """The files the clients send, as data: URLs: a PNG, a JPEG bomb, an MP4 clip, a two-page PDF,
    and broken halves of the last two."""

    def __init__(self):
        def b64(data):
            return base64.b64encode(data).decode()
        clip, pdf = open(CLIP, "rb").read(), pdf_of_boxes(2)
        self.png = "data:image/png;base64," + b64(open(os.path.join(IMAGES, "gradient_320x240.png"), "rb").read())
        self.bomb = "data:image/jpeg;base64," + b64(jpeg_bomb(os.path.join(IMAGES, "gradient_320x240.jpg")))
        self.mp4 = "data:video/mp4;base64," + b64(clip)
        self.mp4_truncated = "data:video/mp4;base64," + b64(clip[:len(clip) // 2])
        self.pdf = "data:application/pdf;base64," + b64(pdf)
        self.pdf_truncated = "data:application/pdf;base64," + b64(pdf[:len(pdf) // 2])


class Stats:
    """Outcomes by kind: status (or exception name) counts and latencies; the 2xx latencies since
    the last take_window(), for a time series; every 5xx by kind, for a verdict."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.latency = {}
        self.window = {}
        self.server_errors = {}

    def count(self, kind, status, seconds=None):
        with self.lock:
            by_status = self.counts.setdefault(kind, {})
            by_status[str(status)] = by_status.get(str(status), 0) + 1
            if seconds is not None:
                self.latency.setdefault(kind, []).append(seconds)
                if str(status).startswith("2"):
                    self.window.setdefault(kind, []).append(seconds)
            if isinstance(status, int) and status >= 500:
                errors = self.server_errors.setdefault(kind, {})
                errors[status] = errors.get(status, 0) + 1

    def take_window(self):
        """The 2xx latencies by kind counted since the last call."""
        with self.lock:
            window, self.window = self.window, {}
            return window

    def report(self):
        with self.lock:
            return {k: {"statuses": dict(sorted(v.items())), "requests": sum(v.values()),
                        "served_2xx": sum(n for s, n in v.items() if s.startswith("2")),
                        "p50_s": percentile(self.latency.get(k, []), 0.5),
                        "max_s": percentile(self.latency.get(k, []), 1.0)}
                    for k, v in sorted(self.counts.items())}


class Clients:
    """Each method is one client: it sends its request(s) and counts the outcome under its kind.
    job_seconds bounds how long a job is polled (past it: "still_running_after_poll"); setting
    `stopping` ends the polls at their next look ("poll_stopped")."""

    def __init__(self, host, port, media, huge_json_kb, slow_seconds, stats, job_seconds=20):
        self.host, self.port = host, port
        self.media = media
        self.huge_json_kb = huge_json_kb
        self.slow_seconds = slow_seconds
        self.stats = stats
        self.job_seconds = job_seconds
        self.stopping = threading.Event()

    def conn(self, timeout=None):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout or max(120, 2 * self.job_seconds))

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

    def get(self, path, kind):
        return self.request("GET", path, None, kind, ctype=None)

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
            self.stats.count(kind, int(m.group(1)) if m else "closed_without_answer", time.time() - t0)
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
        return self.body(content, max_tokens, **extra)

    @staticmethod
    def body(content, max_tokens=16, **extra):
        body = {"messages": [{"role": "user", "content": content}], "temperature": 0, "max_tokens": max_tokens}
        body.update(extra)
        return body

    def png_url(self):
        return self.media.png

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

    def good_video(self):
        part = {"type": "video_url", "video_url": {"url": self.media.mp4}}
        self.post(CHAT, json.dumps(self.body([part, {"type": "text", "text": "What happens?"}], 8)), "good_video")

    def good_pdf(self):
        part = {"type": "file", "file": {"file_data": self.media.pdf, "filename": "boxes.pdf", "dpi": 72}}
        self.post(CHAT, json.dumps(self.body([part, {"type": "text", "text": "Read it."}], 8)), "good_pdf")

    def pdf_pages(self):
        body = {"file_data": self.media.pdf, "dpi": 72, "thumbnail_size": 64}
        self.post("/v1/qvl/documents/pages", json.dumps(body), "pdf_pages")

    def video_frames(self):
        self.post("/v1/qvl/videos/frames", json.dumps({"video": self.media.mp4, "thumbnail_size": 32}), "video_frames")

    def misc(self):
        for path in ("/health", "/metrics", "/v1/models", "/", "/nope"):
            self.get(path, "get" + path)

    # ---- jobs and cancels
    def poll(self, path, kind):
        """GETs path until its status is final (counted under job_final) or job_seconds pass."""
        end = time.time() + self.job_seconds
        while time.time() < end:
            status, data = self.get(path, kind)
            if status != 200:
                return
            job = json.loads(data)
            state = job["status"]
            if state not in ("queued", "running"):
                self.stats.count("job_final", state)
                if state == "failed":  # a job of good input that fails is the server's fault, as a 5xx
                    errors = [job.get("error")] + [r.get("error") for r in job.get("results", [])]
                    codes = sorted({(e or {}).get("code", "?") for e in errors if e})
                    self.stats.count("job_failed", ",".join(codes) or "?")
                return
            if self.stopping.wait(0.1):
                self.stats.count("job_final", "poll_stopped")
                return
        self.stats.count("job_final", "still_running_after_poll")

    def job(self):
        status, data = self.post("/v1/jobs", json.dumps(self.chat("Job?", self.png_url())), "job_create")
        if status != 202:
            return
        jid = json.loads(data)["id"]
        if random.random() < 0.3:
            time.sleep(random.random() * 0.5)
            self.request("DELETE", "/v1/jobs/" + jid, None, "job_cancel", ctype=None)
            return
        self.poll("/v1/jobs/" + jid, "job_poll")

    def job_per_page(self):
        """A PDF as one job per page; half the batches are cancelled once they have started."""
        part = {"type": "file", "file": {"file_data": self.media.pdf, "filename": "boxes.pdf", "dpi": 72}}
        body = self.body([part, {"type": "text", "text": "Read it."}], 8, per_page=True)
        status, data = self.post("/v1/jobs", json.dumps(body), "batch_create")
        if status != 202:
            return
        path = "/v1/jobs/" + json.loads(data)["id"]
        if random.random() < 0.5:
            time.sleep(random.random())
            self.request("DELETE", path, None, "batch_cancel", ctype=None)
        self.poll(path, "batch_poll")

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

    def corrupt_video(self):
        part = {"type": "video_url", "video_url": {"url": self.media.mp4_truncated}}
        self.post(CHAT, json.dumps(self.body([part, {"type": "text", "text": "x"}], 4)), "corrupt_video")

    def corrupt_pdf(self):
        part = {"type": "file", "file": {"file_data": self.media.pdf_truncated, "filename": "cut.pdf"}}
        self.post(CHAT, json.dumps(self.body([part, {"type": "text", "text": "x"}], 4)), "corrupt_pdf")

    def jpeg_bomb(self):
        self.post(CHAT, json.dumps(self.chat("x", self.media.bomb)), "jpeg_bomb")

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
            self.stats.count(kind, int(m.group(1)) if m else "closed_by_server", time.time() - t0)
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


def start_server(qvl, options, log=None):
    """`qvl serve` on a free port with these options; returns (process, host, port) once it listens.
    Its log goes to the file `log` (a path), else is read and dropped."""
    proc = subprocess.Popen([qvl, "serve", "--port", "0"] + options, stderr=subprocess.PIPE, text=True)
    sink = open(log, "w") if log else None
    while True:
        line = proc.stderr.readline()
        if not line:
            sys.exit(f"qvl serve exited before listening (code {proc.wait()})")
        if sink:
            sink.write(line)
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            break

    def drain():
        for line in proc.stderr:
            if sink:
                sink.write(line)
                sink.flush()
    threading.Thread(target=drain, daemon=True).start()
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


def wait_drained(host, port, seconds=30):
    """Hung-up and cancelled work must drain: seconds until slots and queue are back to 0 (None if
    they are not within `seconds`), and the last /metrics read."""
    metrics = {}
    start = time.time()
    while time.time() - start < seconds:
        try:
            metrics = read_metrics(host, port)
        except Exception:
            break
        if metrics.get("qvl_slots_busy") == 0 and metrics.get("qvl_queue_depth") == 0:
            return round(time.time() - start, 1), metrics
        time.sleep(0.5)
    return None, metrics
