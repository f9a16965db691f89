#!/usr/bin/env python3
"""The job store's database goes away under three `qvl serve` replicas behind Debian's nginx
(deploy/nginx/qvl.conf) sharing one PostgreSQL (--jobs-db postgresql://…), and comes back.

    db_outage_test.py QVL_BINARY MODEL_DIR NGINX_CONF [--outage S] [--lease S] [--jobs N]

Two rounds on one fleet: PostgreSQL stopped with a fast shutdown (SIGINT), then with its postmaster
killed (SIGKILL); each time with jobs queued, running, succeeded and cancelled, kept down --outage seconds
(8 here, longer than the --lease of 3 s so leases run out meanwhile; the issue's 30 s by hand:
--outage 30 --lease 30), then started again. Checks, and prints each round's figures as one JSON line:
- no replica exits: each is still running, and its /health/live answers 200, during and after;
- during the outage every replica's /health says 503 store_unavailable (the readiness probe's view);
  a job submission, poll or cancel — through nginx or straight at a replica — gets 503 store_unavailable
  with Retry-After, at once (never a hang, never a 500), as does a Responses request to be stored
  (one with store: false is answered); chat completions, plain and streamed, through nginx are
  answered (200, or 429 when jobs fill the queue — never a 5xx), at least 3 of them with 200;
- after the restart every replica's /health is 200 and a submission through nginx is accepted within
  a few seconds (the recovery time printed);
- every job accepted ends in a terminal state exactly once: the status and the result that each replica
  reads are the same, and still the same a second later;
- no request got a 5xx other than those 503s.
PostgreSQL runs from Debian's packages in a temporary folder (as the postgres user when root), on
loopback, stopped by its PID. Exit 77 (skipped) where nginx or PostgreSQL is not installed.
"""
import argparse, http.client, json, os, random, shutil, signal, sys, tempfile, threading, time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from postgres_server import Postgres, postgres_bin, tear_down  # noqa: E402
from replicas_test import start_behind_nginx  # noqa: E402

JOBS = "/v1/jobs"
CHAT = "/v1/chat/completions"
ENDED = ("succeeded", "failed", "cancelled", "expired")
# EOS banned: a long job runs its max_tokens, so it is still running when the database goes.
NO_EOS = {"151645": -100, "151643": -100}


class Client:
    """Every answer the test gets, for the 5xx count."""

    def __init__(self):
        self.lock = threading.Lock()
        self.statuses = Counter()  # (status, code) -> count
        self.failures = []

    def fail(self, what):
        with self.lock:
            self.failures.append(what)

    def request(self, port, method, path, body=None, timeout=30):
        """(status, body or None, headers); a hang is a failure (timeout)."""
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        start = time.time()
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            r = c.getresponse()
            payload = r.read()
        except (OSError, http.client.HTTPException) as e:
            self.fail(f"{method} {path} on :{port}: {type(e).__name__} after {time.time() - start:.1f} s")
            return None, None, {}
        finally:
            c.close()
        try:
            data = json.loads(payload) if payload else None
        except ValueError:
            data = None
        # An error's code, or a /health body's status ("store_unavailable").
        code = None
        if isinstance(data, dict):
            code = data["error"].get("code") if isinstance(data.get("error"), dict) else data.get("status")
        with self.lock:
            self.statuses[(r.status, code)] += 1
        return r.status, data, dict(r.getheaders())

    def stream(self, port, body):
        """A streamed chat: (status, whether it ended with [DONE] and no error event)."""
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            c.request("POST", CHAT, json.dumps(dict(body, stream=True)), {"Content-Type": "application/json"})
            r = c.getresponse()
            done, error = False, None
            for line in r:
                if line.startswith(b"data: {") and b'"error"' in line:
                    error = json.loads(line[6:])["error"].get("code")
                if line.strip() == b"data: [DONE]":
                    done = True
                    break
        except (OSError, http.client.HTTPException) as e:
            self.fail(f"stream on :{port}: {type(e).__name__}")
            return None, False
        finally:
            c.close()
        with self.lock:
            self.statuses[(r.status, error)] += 1
        return r.status, done and error is None

    def unexpected_5xx(self):
        """5xx answers other than the documented store_unavailable 503s."""
        return sum(n for (status, code), n in self.statuses.items()
                   if status >= 500 and not (status == 503 and code == "store_unavailable"))


def chat(text, max_tokens, long=False):
    body = {"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens}
    if long:
        body["logit_bias"] = NO_EOS
    return body


def is_store_unavailable(status, body, headers):
    return (status == 503 and (body or {}).get("error", {}).get("code") == "store_unavailable"
            and int(headers.get("Retry-After", "0")) >= 1)


def one_round(label, sig, args, pg, ports, lb, procs, client, rng, long_tokens):
    """One outage; its figures."""
    alive = lambda: all(p.poll() is None for p in procs[:len(ports)])
    fig = {"round": label}
    # 1. Jobs in every state: succeeded (short ones run first), running and queued (long ones fill
    #    every replica's slot and queue), cancelled (two queued ones, through the balancer).
    ids = []
    for i in range(args.jobs):
        long = i % 2 == 1
        status, body, _ = client.request(lb, "POST", JOBS, chat(f"{label} job {i}", long_tokens if long else 8, long))
        if status != 202:
            client.fail(f"{label}: submit {i}: {status} {body}")
            continue
        ids.append(body["id"])
    states = {}
    end = time.time() + 60
    while time.time() < end:
        states = {i: client.request(lb, "GET", f"{JOBS}/{i}")[1]["status"] for i in ids}
        seen = Counter(states.values())
        if seen["succeeded"] and seen["running"] and seen["queued"] >= 3:  # two are cancelled below
            break
        time.sleep(0.1)
    for job_id in [i for i, s in states.items() if s == "queued"][:2]:
        status, body, _ = client.request(lb, "DELETE", f"{JOBS}/{job_id}")
        if status != 200:
            client.fail(f"{label}: cancel {job_id}: {status} {body}")
        states[job_id] = (body or {}).get("status")
    fig["states_at_outage"] = dict(Counter(states.values()))
    for s in ("succeeded", "running", "queued", "cancelled"):
        if not fig["states_at_outage"].get(s):
            client.fail(f"{label}: no job {s} when the database went away: {fig['states_at_outage']}")

    # 2. Chat through the balancer for the whole outage, plain and streamed.
    chats = Counter()
    stop_chat = threading.Event()

    def chat_load():
        n = 0
        while not stop_chat.is_set():
            n += 1
            body = chat(f"chat {n} during the outage", 6)
            if n % 2:
                status, _, _ = client.request(lb, "POST", CHAT, body)
                ok = status == 200
            else:
                status, ok = client.stream(lb, body)
            chats[("stream" if n % 2 == 0 else "plain", status, ok)] += 1
            if status not in (200, 429) or (status == 200 and not ok):
                client.fail(f"{label}: chat during the outage: {status} complete={ok}")
            time.sleep(0.2)

    # 3. The outage.
    pg.stop(sig)
    down = time.time()
    chatter = threading.Thread(target=chat_load)
    chatter.start()
    seen_down = set()
    while len(seen_down) < len(ports) and time.time() < down + 5:
        for p in ports:
            status, body, headers = client.request(p, "GET", "/health")
            if status == 503 and (body or {}).get("status") == "store_unavailable" and headers.get("Retry-After"):
                seen_down.add(p)
        time.sleep(0.05)
    fig["health_says_unavailable_after_s"] = round(time.time() - down, 2)
    if len(seen_down) < len(ports):
        client.fail(f"{label}: /health of {len(ports) - len(seen_down)} replicas never said store_unavailable")
    # The Responses API: an answer to keep waits for the store, one not kept is answered.
    status, data, headers = client.request(lb, "POST", "/v1/responses", {"input": "kept?", "max_output_tokens": 6})
    if not is_store_unavailable(status, data, headers):
        client.fail(f"{label}: a stored response during the outage: {status} {data}")
    status, data, _ = client.request(lb, "POST", "/v1/responses",
                                     {"input": "not kept", "max_output_tokens": 6, "store": False})
    fig["unstored_response_during_outage"] = status
    if status not in (200, 429):
        client.fail(f"{label}: a response with store: false during the outage: {status} {data}")
    refusals, slowest = 0, 0.0
    while time.time() < down + args.outage:
        tries = [(lb, "POST", JOBS, chat("during the outage", 8)), (lb, "GET", f"{JOBS}/{rng.choice(ids)}", None),
                 (lb, "DELETE", f"{JOBS}/{rng.choice(ids)}", None)]
        tries += [(p, "POST", JOBS, chat("during the outage", 8)) for p in ports]
        tries += [(p, "GET", f"{JOBS}/{rng.choice(ids)}", None) for p in ports]
        for port, method, path, body in tries:
            t0 = time.time()
            status, data, headers = client.request(port, method, path, body)
            slowest = max(slowest, time.time() - t0)
            if is_store_unavailable(status, data, headers):
                refusals += 1
            else:
                client.fail(f"{label}: {method} {path} on :{port} during the outage: {status} {data} {headers}")
        for p in ports:
            if client.request(p, "GET", "/health/live")[0] != 200:
                client.fail(f"{label}: /health/live of :{p} during the outage")
        if not alive():
            client.fail(f"{label}: a replica exited during the outage")
            break
        time.sleep(0.3)
    fig["store_refusals_503"] = refusals
    fig["slowest_refusal_s"] = round(slowest, 3)

    # 4. Back: every replica ready, a submission accepted.
    pg.start()
    up = time.time()
    ready = set()
    while time.time() < up + 30:
        for p in ports:
            if p not in ready and client.request(p, "GET", "/health")[0] == 200:
                ready.add(p)
        if len(ready) == len(ports):
            status, body, headers = client.request(lb, "POST", JOBS, chat(f"{label} after the outage", 8))
            if status == 202:
                ids.append(body["id"])
                break
            if not is_store_unavailable(status, body, headers):
                client.fail(f"{label}: submission after the outage: {status} {body}")
        time.sleep(0.05)
    fig["recovery_s"] = round(time.time() - up, 2)
    if len(ready) < len(ports) or fig["recovery_s"] > 10:
        client.fail(f"{label}: not recovered {fig['recovery_s']} s after the database returned")
    stop_chat.set()
    chatter.join()
    fig["chats_during_outage"] = {f"{k} {s} {'ok' if ok else 'cut'}": n for (k, s, ok), n in chats.items()}
    for kind in ("plain", "stream"):
        if sum(n for (k, s, ok), n in chats.items() if k == kind and s == 200 and ok) < 1:
            client.fail(f"{label}: no {kind} chat answered during the outage: {dict(chats)}")
    if sum(n for (k, s, ok), n in chats.items() if s == 200 and ok) < 3:
        client.fail(f"{label}: fewer than 3 chats answered during the outage: {dict(chats)}")

    # 5. Every job ends once, the same through every replica.
    final = {}
    end = time.time() + 180
    pending = set(ids)
    while pending and time.time() < end:
        for job_id in sorted(pending):
            status, body, _ = client.request(lb, "GET", f"{JOBS}/{job_id}")
            if status == 200 and body["status"] in ENDED:
                final[job_id] = body
                pending.discard(job_id)
        time.sleep(0.2)
    if pending:
        client.fail(f"{label}: {len(pending)} jobs never ended: {sorted(pending)[:3]}")
    time.sleep(1)
    changed = 0
    for job_id, body in final.items():
        for p in ports:
            status, again, _ = client.request(p, "GET", f"{JOBS}/{job_id}")
            if status != 200 or again != body:
                changed += 1
                client.fail(f"{label}: {job_id} read {body.get('status')} then {status} "
                             f"{(again or {}).get('status')} on :{p}")
        if body["status"] == "succeeded" and len(body["result"]["choices"]) != 1:
            client.fail(f"{label}: {job_id} succeeded without one choice")
    fig["jobs_submitted"] = len(ids)
    fig["jobs_ended_once"] = len(final) - changed
    fig["ended"] = dict(Counter(b["status"] for b in final.values()))
    fig["jobs_run_again"] = sum(1 for b in final.values() if b.get("attempts", 1) > 1)
    if not alive():
        client.fail(f"{label}: a replica exited")
    return fig, ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("qvl")
    ap.add_argument("model")
    ap.add_argument("conf")
    ap.add_argument("--outage", type=float, default=8, help="seconds the database stays down")
    ap.add_argument("--lease", type=float, default=3, help="the replicas' --job-lease")
    ap.add_argument("--jobs", type=int, default=16, help="jobs submitted before each outage")
    ap.add_argument("--long-tokens", type=int, default=200, help="max_tokens of the long jobs")
    args = ap.parse_args()
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    bin_dir = postgres_bin()
    if not os.access(nginx, os.X_OK) or not bin_dir:
        print("db_outage: nginx or PostgreSQL not installed, skipped")
        return 77

    prefix = tempfile.mkdtemp(prefix="qvl-db-outage-")
    os.chmod(prefix, 0o755)
    pg_dir = tempfile.mkdtemp(prefix="qvl-db-outage-pg-")
    procs, pg = [], None
    client = Client()
    try:
        pg = Postgres(bin_dir, pg_dir)
        ports, lb = start_behind_nginx(nginx, args.qvl, args.model, args.conf, prefix, procs,
                                       ["--parallel", "1", "--queue-size", "2", "--jobs-db", pg.url(),
                                        "--job-lease", str(args.lease)])
        rng = random.Random(44)
        all_ids, ended_once = [], 0
        for label, sig in (("fast_shutdown", signal.SIGINT), ("kill_9_postmaster", signal.SIGKILL)):
            fig, ids = one_round(label, sig, args, pg, ports, lb, procs, client, rng, args.long_tokens)
            all_ids += ids
            ended_once += fig["jobs_ended_once"]
            fig["outage_s"] = args.outage
            print(json.dumps(fig))
        # The store's errors are handled where they arise: no exception ends a thread, no store call
        # fails other than as unavailable, and each replica says once per outage that it lost the
        # database and once that it reached it again.
        for p in ports:
            log = open(f"{prefix}/replica-{p}.log").read()
            for bad in ("terminate called", "job runner:", "internal_error"):
                if bad in log:
                    client.fail(f"replica {p}'s log has '{bad}'")
            lost, back = log.count("the job store is unavailable"), log.count("reachable again after")
            if not 2 <= back <= lost <= 6:
                client.fail(f"replica {p} logged {lost} losses and {back} returns of the store for 2 outages")
        exits = [p.poll() for p in procs[:len(ports)]]
        if any(e is not None for e in exits):
            client.fail(f"replicas exited: {exits}")
        print(json.dumps({"jobs_submitted": len(all_ids), "jobs_ended_once": ended_once,
                          "requests_5xx_not_store_503": client.unexpected_5xx(),
                          "store_unavailable_503": client.statuses[(503, "store_unavailable")],
                          "replicas_alive": sum(e is None for e in exits)}))
        if client.unexpected_5xx():
            client.fail(f"5xx answers: { {k: v for k, v in client.statuses.items() if k[0] >= 500} }")
        for f in client.failures:
            print("FAIL:", f)
        if client.failures:
            for p in ports:
                print(f"--- replica {p} log (tail)")
                print("".join(open(f"{prefix}/replica-{p}.log").readlines()[-15:]))
        return 1 if client.failures else 0
    finally:
        tear_down(procs, pg, prefix, pg_dir)


if __name__ == "__main__":
    sys.exit(main())
