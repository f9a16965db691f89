#!/usr/bin/env python3
"""SIGTERM to a `qvl serve` replica while it streams answers and runs jobs, another replica sharing its
PostgreSQL job store (--jobs-db postgresql://…).

    graceful_stop_test.py QVL_BINARY MODEL_DIR [--grace S]

Replica A (--parallel 3, --shutdown-grace 3, --job-lease 60) streams two answers, a short one and one far
longer than the grace, and holds three long jobs (one running, two waiting in its queue); replica B is
idle. A gets SIGTERM. Checks, and prints the figures as one JSON line:
- A hands its three jobs back to the store at once: within 1 s no job is A's (the store's rows, read
  with psql), and B has claimed them long before their 60 s lease could run out and runs them (its
  live progress grows), their attempts not counted twice; they are then cancelled through B;
- the short stream finishes ([DONE], no error); the long one ends within the grace (plus 2 s) with an
  error event whose code is shutting_down, then [DONE];
- A exits with status 0.
PostgreSQL runs from Debian's packages in a temporary folder, on loopback, stopped by its PID. Exit 77
(skipped) where PostgreSQL is not installed.
"""
import argparse, http.client, json, os, shutil, signal, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from postgres_server import Postgres, postgres_bin, tear_down  # noqa: E402
from replicas_test import free_port, metrics, wait_ready  # noqa: E402

NO_EOS = {"151645": -100, "151643": -100}  # a long answer runs its max_tokens


def body(text, max_tokens, stream=False):
    return {"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens, "logit_bias": NO_EOS,
            "stream": stream}


def request(port, method, path, data=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, json.dumps(data) if data is not None else None,
              {"Content-Type": "application/json"} if data is not None else {})
    r = c.getresponse()
    payload = r.read()
    return r.status, json.loads(payload) if payload else None


def stream(port, data, out):
    """Reads a streamed answer into out: status, error code of an error event, [DONE], when it ended."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("POST", "/v1/chat/completions", json.dumps(data), {"Content-Type": "application/json"})
        r = c.getresponse()
        out["status"] = r.status
        out["chunks"] = 0
        for line in r:
            if line.startswith(b"data: {"):
                event = json.loads(line[6:])
                if "error" in event:
                    out["error"] = event["error"].get("code")
                else:
                    out["chunks"] += 1
            if line.strip() == b"data: [DONE]":
                out["done"] = True
                break
    except (OSError, http.client.HTTPException) as e:
        out["transport_error"] = type(e).__name__
    out["ended"] = time.time()


def serve(qvl, model, port, store, prefix, name, extra):
    log = open(f"{prefix}/{name}.log", "w")
    return subprocess.Popen([qvl, "serve", "--model", model, "--host", "127.0.0.1", "--port", str(port),
                             "--threads", "1", "--jobs-db", store, "--job-lease", "60"] + extra,
                            stdout=log, stderr=log)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("qvl")
    ap.add_argument("model")
    ap.add_argument("--grace", type=float, default=3)
    ap.add_argument("--long-tokens", type=int, default=4000, help="max_tokens of the jobs and the long stream")
    ap.add_argument("--short-tokens", type=int, default=40, help="max_tokens of the stream that finishes")
    args = ap.parse_args()
    bin_dir = postgres_bin()
    if not bin_dir:
        print("graceful_stop: PostgreSQL not installed, skipped")
        return 77
    prefix = tempfile.mkdtemp(prefix="qvl-graceful-")
    pg_dir = tempfile.mkdtemp(prefix="qvl-graceful-pg-")
    procs, pg, failures = [], None, []
    fail = failures.append
    try:
        pg = Postgres(bin_dir, pg_dir)
        port_a, port_b = free_port(), free_port()
        a = serve(args.qvl, args.model, port_a, pg.url(), prefix, "a",
                  ["--parallel", "3", "--queue-size", "2", "--shutdown-grace", str(args.grace)])
        procs.append(a)
        wait_ready(port_a, a)

        # Two streams take two of A's slots; three jobs take the third and both queue places.
        long_stream, short_stream = {}, {}
        threads = [threading.Thread(target=stream, args=(port_a, body("Tell a long story.", args.long_tokens, True),
                                                         long_stream))]
        threads[0].start()
        time.sleep(0.5)
        jobs = []
        for i in range(3):
            status, job = request(port_a, "POST", "/v1/jobs", body(f"Job {i}: a long story.", args.long_tokens))
            if status != 202:
                raise SystemExit(f"graceful_stop: submit: {status} {job}")
            jobs.append(job["id"])
        end = time.time() + 30
        while time.time() < end:
            rows = pg.sql("SELECT count(*) FROM qvl_jobs WHERE state = 'running' AND owner LIKE '%:" + str(a.pid) + ":%'")
            if int(rows[0][0]) == 3 and request(port_a, "GET", f"/v1/jobs/{jobs[0]}")[1]["status"] == "running":
                break
            time.sleep(0.1)
        else:
            fail("replica A never held the three jobs")

        b = serve(args.qvl, args.model, port_b, pg.url(), prefix, "b", ["--parallel", "3", "--queue-size", "2"])
        procs.append(b)
        wait_ready(port_b, b)
        threads.append(threading.Thread(target=stream, args=(port_a, body("Say a few words.", args.short_tokens, True),
                                                             short_stream)))
        threads[1].start()
        time.sleep(0.3)  # the short stream is under way

        a.send_signal(signal.SIGTERM)
        sigterm = time.time()
        released_s = claimed_s = None
        while time.time() < sigterm + 30 and claimed_s is None:
            rows = pg.sql("SELECT id, state, coalesce(owner, '') FROM qvl_jobs")
            mine = [r for r in rows if f":{a.pid}:" in r[2]]
            if released_s is None and not mine:
                released_s = time.time() - sigterm
            if all(r[1] in ("succeeded", "failed", "cancelled", "expired") or f":{b.pid}:" in r[2] for r in rows):
                claimed_s = time.time() - sigterm
            time.sleep(0.02)
        if released_s is None or released_s > 1:
            fail(f"A's jobs were not handed back within 1 s of SIGTERM ({released_s})")
        if claimed_s is None or claimed_s > 10:
            fail(f"B did not take A's jobs soon after SIGTERM ({claimed_s} s; their lease is 60 s)")
        try:
            exit_code = a.wait(timeout=args.grace + 20)
        except subprocess.TimeoutExpired:
            exit_code = None
            fail("A did not exit")
        exited_s = time.time() - sigterm
        if exit_code != 0:
            fail(f"A exited with {exit_code}")
        for t in threads:
            t.join(timeout=30)

        if not (short_stream.get("status") == 200 and short_stream.get("done") and "error" not in short_stream):
            fail(f"the short stream did not finish: {short_stream}")
        if not (long_stream.get("status") == 200 and long_stream.get("error") == "shutting_down"
                and long_stream.get("done")):
            fail(f"the long stream did not end with a shutting_down error: {long_stream}")
        long_end_s = long_stream.get("ended", float("inf")) - sigterm
        if long_end_s > args.grace + 2:
            fail(f"the long stream ended {long_end_s:.1f} s after SIGTERM, past the grace of {args.grace} s")

        # B runs the jobs (its live progress grows), their attempt count untouched by the hand-back;
        # then they are cancelled through B (running them to the end would only cost time).
        progress = {}
        end = time.time() + 60
        while len(progress) < len(jobs) and time.time() < end:
            for j in jobs:
                status, s = request(port_b, "GET", f"/v1/jobs/{j}")
                if status == 200 and s["status"] == "running" and s["progress"]["tokens"] > 0:
                    progress[j] = s
            time.sleep(0.1)
        for j in jobs:
            s = progress.get(j)
            if not s or s.get("attempts", 1) != 1:
                fail(f"B does not run job {j}, or counts its hand-back as an attempt: {s}")
            status, s = request(port_b, "DELETE", f"/v1/jobs/{j}")
            if status != 200 or s["status"] != "cancelled":
                fail(f"cancel of job {j} on B: {status} {s}")
        made = sum(v for k, v in metrics(port_b).items() if k.startswith("qvl_generations_total{"))
        if made != len(jobs):
            fail(f"B ran {made} generations, not the {len(jobs)} jobs it took over")

        print(json.dumps({"jobs_held_by_a": len(jobs), "handed_back_s": released_s and round(released_s, 2),
                          "taken_by_b_s": claimed_s and round(claimed_s, 2),
                          "long_stream_ended_s": round(long_end_s, 2), "long_stream_error": long_stream.get("error"),
                          "short_stream_done": bool(short_stream.get("done")), "a_exit_code": exit_code,
                          "a_exited_s": round(exited_s, 2), "jobs_running_on_b": len(progress)}))
        for f in failures:
            print("FAIL:", f)
        if failures:
            print("--- replica A log (tail)")
            print("".join(open(f"{prefix}/a.log").readlines()[-15:]))
        return 1 if failures else 0
    finally:
        tear_down(procs, pg, prefix, pg_dir)


if __name__ == "__main__":
    sys.exit(main())
