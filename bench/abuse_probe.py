#!/usr/bin/env python3
"""Slow-client probe of `qvl serve`: what /health and a chat answer cost while N connections
trickle request headers (slowloris) or sit idle. Loopback only; python3 stdlib only.

Starts the server itself, opens the abusive connections, then times /health and one small chat
completion (each with a 10 s limit: "timeout" means the server was stalled), and prints one JSON
object per scenario.

    python3 bench/abuse_probe.py --qvl build/qvl [--model tests/fixtures/tiny-qwen3vl] [--slow 25,200]

Not part of `make test`.
"""
import argparse, http.client, json, os, re, socket, subprocess, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIMIT_S = 10.0


def start_server(qvl, model):
    p = subprocess.Popen([qvl, "serve", "--model", model, "--port", "0", "--threads", "1"],
                         stderr=subprocess.PIPE, text=True)
    port = None
    deadline = time.time() + 60
    while port is None and time.time() < deadline:
        line = p.stderr.readline()
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()  # keep the pipe drained
    while port is not None and time.time() < deadline:
        try:
            if timed_get(port, "/health") == 200:
                return p, port
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    p.kill()
    raise RuntimeError("qvl serve did not become ready")


def timed_get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=LIMIT_S)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def timed(fn):
    t = time.time()
    try:
        status = fn()
    except (OSError, http.client.HTTPException) as e:
        return {"status": type(e).__name__, "ms": round((time.time() - t) * 1000, 1)}
    return {"status": status, "ms": round((time.time() - t) * 1000, 1)}


def chat(port):
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "temperature": 0})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=LIMIT_S)
    c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


class Abusers:
    """N sockets that each send a request head one byte per second (slow) or nothing (idle);
    one that the server closes is reopened, as an attacker would."""

    def __init__(self, port, n, slow):
        self.port, self.slow, self.stop = port, slow, False
        self.socks = [self.open() for _ in range(n)]
        self.thread = threading.Thread(target=self.trickle, daemon=True)
        self.thread.start()

    def open(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.setblocking(False)
        return [s, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 10000]

    def trickle(self):
        while not self.stop:
            for entry in self.socks:
                if self.slow and entry[1]:
                    try:
                        entry[0].send(entry[1][:1])
                        entry[1] = entry[1][1:]
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        entry[0].close()
                        try:
                            entry[:] = self.open()
                        except OSError:
                            pass
            time.sleep(1.0)

    def close(self):
        self.stop = True
        self.thread.join()
        for s, _ in self.socks:
            s.close()


def scenario(qvl, model, n, slow):
    p, port = start_server(qvl, model)
    try:
        a = Abusers(port, n, slow)
        time.sleep(2.0)  # let every abusive connection be accepted and start its head
        out = {"binary": qvl, "connections": n, "kind": "slowloris" if slow else "idle",
               "health": timed(lambda: timed_get(port, "/health")), "chat": timed(lambda: chat(port))}
        a.close()
        return out
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--qvl", default=os.path.join(ROOT, "build", "qvl"))
    ap.add_argument("--model", default=os.path.join(ROOT, "tests", "fixtures", "tiny-qwen3vl"))
    ap.add_argument("--slow", default="25,200", help="slowloris connection counts to try")
    ap.add_argument("--idle", default="200", help="idle connection counts to try")
    args = ap.parse_args()
    for n in [int(x) for x in args.slow.split(",") if x]:
        print(json.dumps(scenario(args.qvl, args.model, n, True)), flush=True)
    for n in [int(x) for x in args.idle.split(",") if x]:
        print(json.dumps(scenario(args.qvl, args.model, n, False)), flush=True)


if __name__ == "__main__":
    main()
