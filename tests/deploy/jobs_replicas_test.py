#!/usr/bin/env python3
"""Async jobs through three `qvl serve` replicas behind Debian's nginx (deploy/nginx/qvl.conf), the
replicas sharing one PostgreSQL job store (--jobs-db postgresql://…), as a program uses them: submit,
then poll without X-Session-Id, so least_conn sends polls wherever it likes.

    jobs_replicas_test.py QVL_BINARY MODEL_DIR NGINX_CONF

Checks, and prints the figures as one JSON line:
- every poll of every job answers 200 (no replica says 404 for a job another accepted);
- every job succeeds, and the replicas' generations (their /metrics) add up to the jobs submitted: each ran once;
- polls are answered by more than one replica (the balancer really spreads them);
- a job whose replica is killed (SIGKILL) while it runs is finished by another once its lease runs
  out, with attempts = 2;
- a cancel sent through the balancer stops a running job wherever it runs.
PostgreSQL runs from Debian's packages in a temporary folder (as the postgres user when root), on
loopback, stopped by its PID. Exit 77 (skipped) where nginx or PostgreSQL is not installed.
"""
import argparse, glob, http.client, json, os, pwd, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replicas_test import free_port, metrics, nginx_conf, wait_ready  # noqa: E402

JOBS = "/v1/jobs"


def postgres_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=lambda p: int(p.split("/")[4]))
    return os.path.dirname(found[-1]) if found else None


def as_postgres():
    """preexec_fn that drops root to the postgres user (PostgreSQL refuses to run as root)."""
    if os.geteuid() != 0:
        return None
    pw = pwd.getpwnam("postgres")

    def drop():
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return drop


def start_postgres(bin_dir, folder):
    if os.geteuid() == 0:
        pw = pwd.getpwnam("postgres")
        os.chown(folder, pw.pw_uid, pw.pw_gid)
    log = open(f"{folder}/postgres.log", "w")
    subprocess.run([f"{bin_dir}/initdb", "-D", f"{folder}/data", "-U", "qvl", "--auth=trust", "-E", "UTF8",
                    "--no-sync"], check=True, stdout=log, stderr=log, preexec_fn=as_postgres())
    port = free_port()
    proc = subprocess.Popen([f"{bin_dir}/postgres", "-D", f"{folder}/data", "-k", folder, "-h", "127.0.0.1",
                             "-p", str(port), "-c", "fsync=off"], stdout=log, stderr=log, preexec_fn=as_postgres())
    end = time.time() + 30
    while subprocess.run([f"{bin_dir}/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(port)]).returncode != 0:
        if proc.poll() is not None or time.time() > end:
            raise SystemExit("jobs_replicas: PostgreSQL did not start:\n" + open(f"{folder}/postgres.log").read())
        time.sleep(0.1)
    return proc, port


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
        pg, pg_port = start_postgres(bin_dir, pg_dir)
        store = f"postgresql://qvl@127.0.0.1:{pg_port}/postgres"
        ports = [free_port() for _ in range(3)]
        for p in ports:
            log = open(f"{prefix}/replica-{p}.log", "w")
            procs.append(subprocess.Popen([args.qvl, "serve", "--model", args.model, "--host", "127.0.0.1",
                                           "--port", str(p), "--threads", "1", "--parallel", "1",
                                           "--queue-size", "2", "--jobs-db", store, "--job-lease", "2"],
                                          stdout=log, stderr=log))
        for p, proc in zip(ports, procs):
            wait_ready(p, proc)
        lb_port = free_port()
        nginx_conf(args.conf, ports, lb_port, prefix)
        lb = subprocess.Popen([nginx, "-p", prefix, "-c", f"{prefix}/nginx.conf", "-e", f"{prefix}/error.log",
                               "-g", "daemon off;"])
        wait_ready(lb_port, lb)

        failures = []
        # 1. Submit and poll through the balancer.
        ids = []
        for i in range(10):
            status, body, _ = request(lb_port, "POST", JOBS, chat(f"Count to {i}", 8))
            if status != 202:
                failures.append(f"submit {i}: {status} {body}")
                continue
            ids.append(body["id"])
        polls, not_found, answered_by = 0, 0, set()
        pending = set(ids)
        end = time.time() + 120
        while pending and time.time() < end:
            for job_id in sorted(pending):
                status, body, upstream = request(lb_port, "GET", f"{JOBS}/{job_id}")
                polls += 1
                answered_by.add(upstream)
                if status == 404:
                    not_found += 1
                elif status != 200:
                    failures.append(f"poll {job_id}: {status} {body}")
                elif body["status"] not in ("queued", "running"):
                    pending.discard(job_id)
                    if body["status"] != "succeeded":
                        failures.append(f"{job_id} ended {body['status']}: {body.get('error')}")
            time.sleep(0.1)
        if pending:
            failures.append(f"{len(pending)} jobs never ended")
        if not_found:
            failures.append(f"{not_found} of {polls} polls answered 404")
        if len(answered_by) < 2:
            failures.append(f"polls were all answered by {answered_by}: the balancer did not spread them")
        ran = sum(v for p in ports for k, v in metrics(p).items() if k.startswith("qvl_generations_total{"))
        if ran != len(ids):
            failures.append(f"the replicas' metrics count {ran} finished jobs for {len(ids)} submitted")

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

        # 3. The replica running a job is killed: another finishes it after the lease.
        status, body, _ = request(lb_port, "POST", JOBS, chat("Describe another long story.", 300))
        kill_id = body["id"]
        end = time.time() + 30
        job = {}
        while time.time() < end:
            job = request(lb_port, "GET", f"{JOBS}/{kill_id}")[1]
            if job["status"] == "running":
                break
            time.sleep(0.05)
        # Which replica runs it: the one whose /metrics shows a busy slot.
        busy = [i for i, p in enumerate(ports) if metrics(p).get("qvl_slots_busy", 0) > 0]
        if len(busy) != 1:
            failures.append(f"expected one busy replica, saw {busy}")
        else:
            victim = busy[0]
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()
            end = time.time() + 120
            while time.time() < end:
                status, job, _ = request(lb_port, "GET", f"{JOBS}/{kill_id}")
                if status == 200 and job["status"] not in ("queued", "running"):
                    break
                time.sleep(0.2)
            if job.get("status") != "succeeded" or job.get("attempts") != 2:
                failures.append(f"the killed replica's job: {json.dumps(job)[:300]}")

        print(json.dumps({"jobs": len(ids), "polls": polls, "polls_404": not_found,
                          "replicas_answering": len(answered_by), "killed_job": job.get("status"),
                          "killed_job_attempts": job.get("attempts"), "cancelled": cancelled}))
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0
    finally:
        for p in procs + ([lb] if "lb" in locals() else []):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        if pg is not None:
            pg.send_signal(signal.SIGINT)  # fast shutdown
            try:
                pg.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pg.kill()
        shutil.rmtree(prefix, ignore_errors=True)
        shutil.rmtree(pg_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
