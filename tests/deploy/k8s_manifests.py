#!/usr/bin/env python3
"""Parses deploy/k8s/*.yaml and holds the manifests to each other, to the Containerfile and to a
running qvl (no cluster here: what kubectl would accept is checked structurally).

    k8s_manifests.py K8S_DIR CONTAINERFILE NGINX_CONF QVL_BINARY MODEL_DIR

Exit 77 (skipped) where PyYAML (Debian: python3-yaml) is missing.
"""
import http.client, os, re, socket, subprocess, sys, time

try:
    import yaml
except ImportError:
    print("k8s_manifests: PyYAML not installed (python3-yaml), skipped")
    sys.exit(77)

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def arg_value(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


def qvl_endpoints(qvl, model):
    """/health and /health/live statuses and the /metrics names of a real server with the tiny model."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([qvl, "serve", "--model", model, "--port", str(port), "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/health")
                r = c.getresponse()
                r.read()
                status = r.status
                if status == 200:
                    c.request("GET", "/health/live")
                    live = c.getresponse()
                    live.read()
                    c.request("GET", "/metrics")
                    text = c.getresponse().read().decode()
                    names = {l.split("{")[0].split(" ")[0] for l in text.splitlines() if l and l[0] != "#"}
                    return status, live.status, names
            except OSError:
                pass
            time.sleep(0.1)
        raise SystemExit("k8s_manifests: qvl did not become ready")
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def main():
    k8s, containerfile, nginx_conf, qvl, model = sys.argv[1:6]
    docs = []
    for name in sorted(os.listdir(k8s)):
        if name.endswith(".yaml"):
            with open(os.path.join(k8s, name)) as f:
                for d in yaml.safe_load_all(f):
                    if d is not None:
                        docs.append((name, d))
    by_kind = {}
    for name, d in docs:
        for key in ("apiVersion", "kind", "metadata"):
            check(key in d, f"{name}: a document without {key}")
        check(bool(d.get("metadata", {}).get("name")), f"{name}: {d.get('kind')} without metadata.name")
        by_kind.setdefault(d["kind"], []).append(d)
    for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "PersistentVolumeClaim", "Ingress"):
        check(len(by_kind.get(kind, [])) == 1, f"expected one {kind}, found {len(by_kind.get(kind, []))}")
    if problems:
        return report()
    dep, svc, hpa = by_kind["Deployment"][0], by_kind["Service"][0], by_kind["HorizontalPodAutoscaler"][0]
    pvc, ing = by_kind["PersistentVolumeClaim"][0], by_kind["Ingress"][0]

    # Deployment: the container as the image runs it.
    pod = dep["spec"]["template"]
    check(dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
          "Deployment selector does not match its pod labels")
    (c,) = pod["spec"]["containers"]
    args = c["args"]
    port = int(arg_value(args, "--port"))
    check(arg_value(args, "--host") == "0.0.0.0", "the container must listen on 0.0.0.0 (--host)")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(port in ports.values(), f"--port {port} is not a containerPort {ports}")
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    check("QVL_MODEL" in env, "no QVL_MODEL in the container's env")
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    check(env.get("HF_HOME") in mounts, f"HF_HOME {env.get('HF_HOME')} is not a mounted volume {list(mounts)}")
    volumes = {v["name"]: v for v in pod["spec"].get("volumes", [])}
    cache = volumes.get(mounts.get(env.get("HF_HOME")), {})
    check(cache.get("persistentVolumeClaim", {}).get("claimName") == pvc["metadata"]["name"],
          "the HF cache volume does not claim the manifest's PersistentVolumeClaim")
    if c.get("securityContext", {}).get("readOnlyRootFilesystem"):
        check("/tmp" in mounts, "a read-only root filesystem needs a writable /tmp")
    uid = re.search(r"--uid (\d+)", open(containerfile).read())
    check(uid and pod["spec"]["securityContext"].get("runAsUser") == int(uid.group(1)),
          "runAsUser is not the Containerfile's user")
    # Readiness follows /health (the model, draining, the job store's database); liveness only
    # asks whether the process answers, so a database outage restarts no pod.
    for probe, path in (("readinessProbe", "/health"), ("startupProbe", "/health"), ("livenessProbe", "/health/live")):
        get = c.get(probe, {}).get("httpGet", {})
        check(get.get("path") == path, f"{probe} does not GET {path}")
        check(get.get("port") in ports or get.get("port") == port, f"{probe} port {get.get('port')} is not the container's")
    grace = float(arg_value(args, "--shutdown-grace") or 10)
    check(pod["spec"].get("terminationGracePeriodSeconds", 30) > grace,
          "terminationGracePeriodSeconds must exceed --shutdown-grace, or SIGKILL cuts draining answers")
    res = c["resources"]
    check(res["requests"] == res["limits"], "requests and limits should match (a Guaranteed pod is not evicted first)")
    threads = arg_value(args, "--threads")
    check(threads is not None and str(res["limits"]["cpu"]) == threads, "--threads should equal the CPU limit")
    # Memory from docs/deploy.md "Sizing" (2B): weights + 0.9 GB f16 KV (8192 tokens) + 0.25 GB images + 0.5 GB.
    weights_gb = {"bf16": 4.3, "f32": 8.5, "q8": 2.3, "q4": 1.3}[arg_value(args, "--weights") or "bf16"]
    mem = res["limits"]["memory"]
    mem_gb = float(mem[:-2]) * (1.073741824 if mem.endswith("Gi") else 0.001048576 if mem.endswith("Mi") else 0)
    check(mem_gb >= weights_gb + 0.9 + 0.25 + 0.5, f"memory limit {mem} is below the sizing for these weights")

    # Service: the pods, the named port, client-IP affinity.
    check(svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items(), "Service selects no pod")
    check(all(p["targetPort"] in ports or p["targetPort"] == port for p in svc["spec"]["ports"]),
          "Service targetPort is not the container's")
    check(svc["spec"].get("sessionAffinity") == "ClientIP", "Service without session affinity")
    svc_ports = {p["name"] for p in svc["spec"]["ports"]} | {p["port"] for p in svc["spec"]["ports"]}

    # Ingress: the same header nginx hashes on, to the Service.
    header = re.search(r"hash \$http_(\w+) consistent", open(nginx_conf).read())
    check(header and ing["metadata"]["annotations"].get("nginx.ingress.kubernetes.io/upstream-hash-by") ==
          f"$http_{header.group(1)}", "the Ingress does not hash on nginx's session header")
    for rule in ing["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            b = path["backend"]["service"]
            check(b["name"] == svc["metadata"]["name"], "Ingress backend is not the Service")
            check(b["port"].get("name", b["port"].get("number")) in svc_ports, "Ingress backend port is not the Service's")

    # HPA: the Deployment, on a metric qvl exports.
    ref = hpa["spec"]["scaleTargetRef"]
    check(ref["kind"] == "Deployment" and ref["name"] == dep["metadata"]["name"], "HPA targets another object")
    names = [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    check(names == ["qvl_queue_depth"], f"HPA metrics {names}")
    check(hpa["spec"]["minReplicas"] <= dep["spec"]["replicas"] <= hpa["spec"]["maxReplicas"],
          "Deployment replicas outside the HPA's range")
    status, live, exported = qvl_endpoints(qvl, model)
    check(status == 200, "qvl's /health did not answer 200 when ready")
    check(live == 200, f"qvl's /health/live answered {live}")
    for n in names:
        check(n in exported, f"qvl's /metrics has no {n}")
    return report()


def report():
    for p in problems:
        print("k8s_manifests: FAIL:", p)
    if problems:
        return 1
    print("k8s_manifests: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
