#!/usr/bin/env python3
"""Async jobs through three `qvl serve` replicas behind Debian's nginx (deploy/nginx/qvl.conf), the
replicas sharing one PostgreSQL job store (--jobs-db postgresql://…), as a program uses them: submit,
then poll without X-Session-Id, so least_conn sends polls wherever it likes.

    jobs_replicas_test.py QVL_BINARY MODEL_DIR NGINX_CONF

200 jobs are submitted through nginx (a third of the way through, one replica is killed: SIGKILL)
and polled at random through nginx or straight at a live replica. Checks, and prints the figures
as one JSON line:
- every poll answers 200 (no replica says 404 for a job another accepted, none fails for the kill);
- every job succeeds with one answer; the jobs the killed replica held (at most 3: --parallel 1,
  --queue-size 2) run again elsewhere once their lease runs out, and the answers made (the replicas'
  /metrics, the killed one's read just before the kill) are the jobs plus at most those;
- polls are answered by more than one replica;
- a cancel sent through the balancer stops a running job wherever it runs.
PostgreSQL runs from Debian's packages in a temporary folder (as the postgres user when root), on
loopback, stopped by its PID. Exit 77 (skipped) where nginx or PostgreSQL is not installed.
"""
import argparse, http.client, json, os, random, shutil, signal, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from postgres_server import Postgres, postgres_bin, tear_down  # noqa: E402
from replicas_test import metrics, start_behind_nginx  # noqa: E402

JOBS = "/v1/jobs"


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    payload = r.read()
    upstream = (r.getheader("X-Upstream") or "").split(",")[-1].strip()
    return r.status, (json.loads(payload) if payload else None), upstream


def chat(text, max_tokens):
    return {"model": "qvl", "messages": [{"role": "user", "content": text}], "max_tokens": max_tokens}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("qvl")
    ap.add_argument("model")
    ap.add_argument("conf")
    ap.add_argument("--jobs", type=int, default=200)
    args = ap.parse_args()
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    bin_dir = postgres_bin()
    if not os.access(nginx, os.X_OK) or not bin_dir:
        print("jobs_replicas: nginx or PostgreSQL not installed, skipped")
        return 77

    prefix = tempfile.mkdtemp(prefix="qvl-jobs-replicas-")
    os.chmod(prefix, 0o755)
    pg_dir = tempfile.mkdtemp(prefix="qvl-jobs-pg-")
    procs, pg = [], None
    try:
        pg = Postgres(bin_dir, pg_dir)
        store = pg.url()
        ports, lb_port = start_behind_nginx(nginx, args.qvl, args.model, args.conf, prefix, procs,
                                            ["--parallel", "1", "--queue-size", "2", "--jobs-db", store,
                                             "--job-lease", "2"])

        failures = []
        rng = random.Random(33)
        live = list(range(len(ports)))

        def poll(job_id):
            """Through nginx, or straight to a live replica: polls spread at random."""
            if rng.random() < 0.5:
                return request(lb_port, "GET", f"{JOBS}/{job_id}")
            port = ports[rng.choice(live)]
            status, body, _ = request(port, "GET", f"{JOBS}/{job_id}")
            return status, body, f"127.0.0.1:{port}"

        # 1. Submit through the balancer, poll at random; one replica is killed mid-run.
        ids = []
        victim, before_kill = 0, {}
        for i in range(args.jobs):
            status, body, _ = request(lb_port, "POST", JOBS, chat(f"Count to {i}", 24))
            if status != 202:
                failures.append(f"submit {i}: {status} {body}")
                continue
            ids.append(body["id"])
            if i == args.jobs // 3:  # the queue is long by now: the victim is running jobs
                before_kill = metrics(ports[victim])
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                live.remove(victim)
        polls, bad_polls, answered_by, results = 0, 0, set(), {}
        pending = set(ids)
        end = time.time() + 300
        while pending and time.time() < end:
            for job_id in sorted(pending):
                status, body, upstream = poll(job_id)
                polls += 1
                answered_by.add(upstream)
                if status != 200:
                    bad_polls += 1
                    failures.append(f"poll {job_id}: {status} {body}")
                elif body["status"] not in ("queued", "running"):
                    pending.discard(job_id)
                    results[job_id] = body
            time.sleep(0.05)
        if pending:
            failures.append(f"{len(pending)} jobs never ended")
        for job_id, body in results.items():
            choices = (body.get("result") or {}).get("choices", [])
            if body["status"] != "succeeded" or len(choices) != 1:
                failures.append(f"{job_id} ended {body['status']} with {len(choices)} choices: {body.get('error')}")
        if len(answered_by) < 2:
            failures.append(f"polls were all answered by {answered_by}: the balancer did not spread them")
        # Each job's answer was made once, except those the killed replica held (run again elsewhere).
        generations = lambda m: sum(v for k, v in m.items() if k.startswith("qvl_generations_total{"))
        made = generations(before_kill) + sum(generations(metrics(ports[i])) for i in live)
        rerun = sum(1 for b in results.values() if b.get("attempts", 1) > 1)
        if rerun > 3:  # --parallel 1 + --queue-size 2: at most 3 jobs held by one replica
            failures.append(f"{rerun} jobs ran more than once; the killed replica held at most 3")
        if not len(ids) <= made <= len(ids) + 3:
            failures.append(f"{made} answers made for {len(ids)} jobs")

        # 2. A cancel through the balancer stops a running job wherever it runs.
        status, body, _ = request(lb_port, "POST", JOBS, chat("Describe a long story.", 3000))
        long_id = body["id"]
        end = time.time() + 30
        while request(lb_port, "GET", f"{JOBS}/{long_id}")[1]["status"] != "running" and time.time() < end:
            time.sleep(0.1)
        status, body, _ = request(lb_port, "DELETE", f"{JOBS}/{long_id}")
        if status != 200:
            failures.append(f"cancel: {status} {body}")
        end = time.time() + 30
        while request(lb_port, "GET", f"{JOBS}/{long_id}")[1]["status"] == "running" and time.time() < end:
            time.sleep(0.1)
        cancelled = request(lb_port, "GET", f"{JOBS}/{long_id}")[1]["status"]
        if cancelled != "cancelled":
            failures.append(f"the cancelled job ended {cancelled}")

        print(json.dumps({"jobs": len(ids), "succeeded": sum(b["status"] == "succeeded" for b in results.values()),
                          "polls": polls, "polls_not_200": bad_polls, "replicas_answering": len(answered_by),
                          "answers_made": made, "jobs_run_again": rerun, "cancelled": cancelled}))
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0
    finally:
        tear_down(procs, pg, prefix, pg_dir)


if __name__ == "__main__":
    sys.exit(main())
