#!/usr/bin/env python3
"""Three `qvl serve` replicas behind Debian's nginx with deploy/nginx/qvl.conf, mixed load for
~20 s, and one replica killed (SIGKILL) mid-load while it streams an answer.

    replicas_test.py QVL_BINARY MODEL_DIR NGINX_CONF IMAGE [--duration S]

Checks, and prints the figures as one JSON line:
- requests sent after the kill all succeed (nginx retries what never reached a replica);
- streams cut by the kill end with a transport error (no [DONE]), none hangs, none looks complete;
- follow-up turns with one X-Session-Id land on one replica and reuse its KV cache
  (usage.prompt_tokens_details.cached_tokens > 0);
- each surviving replica's /metrics counts exactly the requests the clients saw it answer
  (the test's copy of the config adds an X-Upstream header naming the replica);
- the survivors end idle (no busy slot, empty queue).
Exit 77 (skipped) where nginx is not installed. Python standard library only.
"""
import argparse, base64, http.client, json, os, random, re, shutil, signal, socket, subprocess, sys
import tempfile, threading, time

CHAT = "/v1/chat/completions"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, proc, seconds=60):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit(f"replicas: replica on port {port} exited with {proc.returncode} while starting")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"replicas: replica on port {port} not ready after {seconds} s")


def metrics(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def nginx_conf(shipped, replica_ports, listen_port, prefix):
    """The shipped config with this run's ports, plus a test-only header naming the replica."""
    conf = open(shipped).read()
    ports = iter(replica_ports * 2)  # two upstreams list the same three servers
    conf, n = re.subn(r"server 127\.0\.0\.1:808\d", lambda m: f"server 127.0.0.1:{next(ports)}", conf)
    if n != 2 * len(replica_ports):
        raise SystemExit(f"replicas: expected {2 * len(replica_ports)} upstream servers in {shipped}, found {n}")
    conf, n = re.subn(r"listen 8080;", f"listen 127.0.0.1:{listen_port};", conf)
    if n != 1:
        raise SystemExit(f"replicas: no 'listen 8080;' in {shipped}")
    conf, n = re.subn(r"proxy_pass http://\$qvl_upstream;",
                      lambda m: m.group(0) + "\n        add_header X-Upstream $upstream_addr always;", conf)
    if n == 0:
        raise SystemExit(f"replicas: no 'proxy_pass http://$qvl_upstream;' in {shipped}")
    user = "user root root;\n" if os.geteuid() == 0 else ""
    temp = "".join(f"    {k}_temp_path {prefix}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    main = (f"{user}pid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\nworker_processes 1;\n"
            f"events {{}}\nhttp {{\n    access_log off;\n{temp}    include {prefix}/qvl.conf;\n}}\n")
    open(f"{prefix}/qvl.conf", "w").write(conf)
    open(f"{prefix}/nginx.conf", "w").write(main)


class Run:
    """What the clients saw: one record per request."""

    def __init__(self, port, image_uri):
        self.port = port
        self.image_uri = image_uri
        self.lock = threading.Lock()
        self.records = []
        self.stop = threading.Event()
        self.streams_on = {}  # upstream -> streams in flight there now

    def add(self, **r):
        with self.lock:
            self.records.append(r)

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)

    def user_turn(self, text):
        return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": self.image_uri}},
                                            {"type": "text", "text": text}]}

    # A conversation of three turns with one session id: each turn sends the whole history.
    def conversation(self, rng):
        sid = "%032x" % rng.getrandbits(128)
        messages = [self.user_turn("What is in this picture?")]
        for turn in range(3):
            body = {"messages": messages, "max_tokens": 6, "temperature": 0}
            start = time.time()
            rec = {"kind": "session", "session": sid, "turn": turn, "start": start}
            try:
                c = self.conn()
                c.request("POST", CHAT, json.dumps(body), {"Content-Type": "application/json", "X-Session-Id": sid})
                r = c.getresponse()
                payload = r.read()
                rec.update(status=r.status, upstream=last_upstream(r), end=time.time())
                if r.status != 200:
                    self.add(**rec)
                    return
                answer = json.loads(payload)
                rec["cached"] = answer["usage"]["prompt_tokens_details"]["cached_tokens"]
                self.add(**rec)
                messages = messages + [{"role": "assistant", "content": answer["choices"][0]["message"]["content"]},
                                       {"role": "user", "content": f"And then, in turn {turn + 2}?"}]
            except (OSError, http.client.HTTPException) as e:
                rec.update(status=None, error=type(e).__name__, end=time.time())
                self.add(**rec)
                return

    # A long streamed answer, read to [DONE]; no session id, so least_conn places it.
    def stream(self, rng):
        body = {"messages": [self.user_turn("Describe this image at great length.")], "max_tokens": 400,
                "stream": True}
        start = time.time()
        rec = {"kind": "stream", "start": start}
        upstream = None
        try:
            c = self.conn()
            c.request("POST", CHAT, json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            upstream = last_upstream(r)
            rec.update(status=r.status, upstream=upstream)
            with self.lock:
                self.streams_on[upstream] = self.streams_on.get(upstream, 0) + 1
            done = False
            while True:
                line = r.readline()
                if not line:
                    break
                if line.strip() == b"data: [DONE]":
                    done = True
            rec.update(done=done, end=time.time())
        except (OSError, http.client.HTTPException) as e:
            rec.update(done=False, error=type(e).__name__, end=time.time())
        finally:
            if upstream:
                with self.lock:
                    self.streams_on[upstream] -= 1
        self.add(**rec)

    # Short requests of other kinds: the model list, and a request each replica refuses (400).
    def misc(self, rng):
        start = time.time()
        rec = {"kind": "misc", "start": start}
        try:
            c = self.conn()
            if rng.random() < 0.5:
                rec["route"] = "/v1/models"
                c.request("GET", "/v1/models")
            else:
                rec["route"] = CHAT
                c.request("POST", CHAT, json.dumps({"messages": [], "max_tokens": 4}),
                          {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            rec.update(status=r.status, upstream=last_upstream(r), end=time.time())
        except (OSError, http.client.HTTPException) as e:
            rec.update(status=None, error=type(e).__name__, end=time.time())
        self.add(**rec)


def start_behind_nginx(nginx, qvl, model, conf, prefix, procs, serve_args):
    """Three `qvl serve` replicas (with serve_args) behind nginx with the shipped config. Every process
    goes into procs, the replicas first and nginx last, for the caller to stop. Returns the replicas'
    ports and the balancer's."""
    ports = [free_port() for _ in range(3)]
    replicas = []
    for p in ports:
        log = open(f"{prefix}/replica-{p}.log", "w")
        replicas.append(subprocess.Popen([qvl, "serve", "--model", model, "--host", "127.0.0.1", "--port", str(p),
                                          "--threads", "1"] + serve_args, stdout=log, stderr=log))
        procs.append(replicas[-1])
    for p, proc in zip(ports, replicas):
        wait_ready(p, proc)
    lb_port = free_port()
    nginx_conf(conf, ports, lb_port, prefix)
    lb = subprocess.Popen([nginx, "-p", prefix, "-c", f"{prefix}/nginx.conf", "-e", f"{prefix}/error.log",
                           "-g", "daemon off;"])
    procs.append(lb)
    wait_ready(lb_port, lb)
    return ports, lb_port


def last_upstream(response):
    # "$upstream_addr" lists every replica nginx tried, in order; the last one answered.
    value = response.getheader("X-Upstream") or ""
    return value.split(",")[-1].strip() or None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("qvl")
    ap.add_argument("model")
    ap.add_argument("conf")
    ap.add_argument("image")
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--kill-at", type=float, default=8)
    args = ap.parse_args()
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        print("replicas: nginx not found, skipped")
        return 77

    prefix = tempfile.mkdtemp(prefix="qvl-replicas-")
    os.chmod(prefix, 0o755)
    procs = []
    try:
        ports, lb_port = start_behind_nginx(nginx, args.qvl, args.model, args.conf, prefix, procs,
                                            ["--parallel", "4", "--queue-size", "16", "--jobs-db", "memory"])

        image_uri = "data:image/png;base64," + base64.b64encode(open(args.image, "rb").read()).decode()
        run = Run(lb_port, image_uri)
        t0 = time.time()
        deadline = t0 + args.duration

        def loop(fn, seed):
            rng = random.Random(seed)
            while time.time() < deadline:
                fn(rng)

        workers = ([threading.Thread(target=loop, args=(run.conversation, i)) for i in range(3)] +
                   [threading.Thread(target=loop, args=(run.stream, 10 + i)) for i in range(3)] +
                   [threading.Thread(target=loop, args=(run.misc, 20))])
        for w in workers:
            w.start()

        # Kill, at kill_at, a replica that is streaming an answer right then.
        victim = None
        while time.time() < t0 + args.duration - 2:
            if time.time() >= t0 + args.kill_at:
                with run.lock:
                    busy = [u for u, n in run.streams_on.items() if n > 0]
                if busy:
                    victim = busy[0]
                    break
            time.sleep(0.02)
        if victim is None:
            raise SystemExit("replicas: no replica was streaming by the end of the load; cannot test the kill")
        killed_port = int(victim.rsplit(":", 1)[1])
        # In flight: anything that started before the replica was gone (waited for: a request that
        # reaches it between the signal and its death fails too) and ended after the signal.
        kill_time = time.time()
        procs[ports.index(killed_port)].send_signal(signal.SIGKILL)
        procs[ports.index(killed_port)].wait()
        dead_time = time.time()
        for w in workers:
            w.join(timeout=60)
        if any(w.is_alive() for w in workers):
            raise SystemExit("replicas: a client hung (no answer and no error within 60 s)")

        problems = []
        recs = run.records
        in_flight = [r for r in recs if r["start"] < dead_time and r["end"] > kill_time]
        after = [r for r in recs if r["start"] > dead_time]
        def expected(r):  # the status a request gets when nothing goes wrong
            return 400 if r["kind"] == "misc" and r["route"] == CHAT else 200

        # Failed: no answer, a cut stream, or another status (nginx's 502 for a request it had
        # sent to the replica that died).
        failed = [r for r in recs if r.get("status") != expected(r) or (r["kind"] == "stream" and not r.get("done"))]
        cut = [r for r in recs if r["kind"] == "stream" and r in in_flight and r.get("upstream") == victim]

        # 1. Nothing that started after the kill failed.
        late = [r for r in failed if r["start"] > dead_time]
        if late:
            problems.append(f"{len(late)} requests sent after the kill failed, e.g. {late[0]}")
        # Every failure was in flight on the killed replica (a turn still being answered there).
        stray = [r for r in failed if r not in in_flight or r.get("upstream") not in (victim, None)]
        stray += [r for r in failed if r.get("status") not in (None, 200, 502)]
        if stray:
            problems.append(f"{len(stray)} failures not explained by the kill, e.g. {stray[0]}")
        # 2. Cut streams ended without [DONE] (a transport error), none hangs (joined above).
        if not cut:
            problems.append("no stream was in flight on the killed replica")
        if any(r.get("done") for r in cut):
            problems.append("a stream on the killed replica reached [DONE]")
        # 3. Affinity: every turn of a conversation on one replica; follow-ups reuse its cache.
        sessions = {}
        for r in recs:
            if r["kind"] == "session" and r.get("status") == 200:
                sessions.setdefault(r["session"], []).append(r)
        split, uncached, followups = [], [], 0
        for sid, turns in sessions.items():
            turns.sort(key=lambda r: r["turn"])
            moved = len({r["upstream"] for r in turns}) > 1
            crossed_kill = turns[0]["start"] < kill_time < turns[-1]["end"]
            if moved and not (crossed_kill and turns[0]["upstream"] == victim):
                split.append(sid)
            for r in turns[1:]:
                if crossed_kill:
                    continue  # its replica may have died: the new one starts cold
                followups += 1
                if r["cached"] <= 0:
                    uncached.append(r)
        if split:
            problems.append(f"{len(split)} conversations moved between replicas without a kill: {split[:2]}")
        if followups == 0:
            problems.append("no follow-up turns completed")
        if uncached:
            problems.append(f"{len(uncached)} of {followups} follow-ups reused no cached tokens, e.g. {uncached[0]}")
        # 4. Each survivor's /metrics counts what the clients saw it answer.
        survivors = [p for p in ports if p != killed_port]
        per_replica = {}
        for p in survivors:
            m = metrics(p)
            addr = f"127.0.0.1:{p}"
            seen = {}
            for r in recs:
                if r.get("upstream") == addr and r.get("status") is not None and r.get("end"):
                    route = r.get("route", CHAT)
                    seen[(route, r["status"])] = seen.get((route, r["status"]), 0) + 1
            for (route, status), n in seen.items():
                got = m.get(f'qvl_requests_total{{route="{route}",status="{status}"}}', 0)
                if got != n:
                    problems.append(f"replica {p}: /metrics counts {got:.0f} {route} {status}, clients saw {n}")
            if m.get("qvl_slots_busy", -1) != 0 or m.get("qvl_queue_depth", -1) != 0:
                problems.append(f"replica {p} not idle at the end: slots_busy {m.get('qvl_slots_busy')}, "
                                f"queue {m.get('qvl_queue_depth')}")
            per_replica[p] = sum(seen.values())
            if procs[ports.index(p)].poll() is not None:
                problems.append(f"replica {p} died")

        figures = {
            "requests": len(recs), "ok": len(recs) - len(failed), "failed": len(failed),
            "failed_by_kind": {k: sum(1 for r in failed if r["kind"] == k) for k in ("session", "stream", "misc")},
            "in_flight_at_kill": len(in_flight), "streams_cut": len(cut), "after_kill": len(after),
            "conversations": len(sessions), "followups_cached": followups - len(uncached), "followups": followups,
            "per_survivor": per_replica, "kill_at_s": round(kill_time - t0, 2),
        }
        print("replicas:", json.dumps(figures))
        if problems:
            for p in problems:
                print("replicas: FAIL:", p)
            for p in ports:
                print(f"--- replica {p} log (tail) ---")
                print("".join(open(f"{prefix}/replica-{p}.log").readlines()[-20:]))
            return 1
        print("replicas: OK")
        return 0
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(prefix, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
