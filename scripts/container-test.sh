#!/usr/bin/env bash
# Builds the qvl image (Containerfile), runs it with the tiny test model
# mounted read-only, and checks what a deployment relies on: /health, the page
# at /, one image question through /v1/chat/completions, and a clean exit 0
# on SIGTERM. Prints the timings and the image size. Not part of `make test`
# (it needs podman and builds qvl from scratch). Run as root after
# ../shared/tools/container-setup.sh on this project's machines.
#   scripts/container-test.sh [--no-build]      PORT=18080 IMAGE=qvl-test
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-qvl-test}
PORT=${PORT:-18080}
NAME=qvl-container-test-$$
engine=${CONTAINER_ENGINE:-podman}
command -v "$engine" >/dev/null || { echo "container-test: $engine not found" >&2; exit 1; }
command -v curl >/dev/null || { echo "container-test: curl not found" >&2; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
fail() { echo "container-test: FAIL: $*" >&2; "$engine" logs "$NAME" >&2 2>&1 || true; "$engine" rm -f "$NAME" >/dev/null 2>&1 || true; exit 1; }

if [ "${1:-}" != "--no-build" ]; then
  t0=$(now)
  # docker format: the OCI format has no HEALTHCHECK (podman drops it with a warning).
  "$engine" build --network=host --format docker -t "$IMAGE" -f Containerfile . >&2
  echo "build_s=$(secs "$t0" "$(now)")"
fi
size=$("$engine" image inspect --format '{{.Size}}' "$IMAGE")
echo "image_bytes=$size image_mb=$((size / 1000000))"

# --network=host (port mapping may not work in this sandbox), so the port is
# given by argument; the container still binds 0.0.0.0 as the image says.
t0=$(now)
"$engine" run -d --name "$NAME" --network=host \
  -v "$PWD/tests/fixtures/tiny-qwen3vl:/model:ro" -e QVL_MODEL=/model \
  "$IMAGE" --host 0.0.0.0 --port "$PORT" --threads 1 >/dev/null
for _ in $(seq 1 300); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health" || true)
  [ "$code" = 200 ] && break
  sleep 0.1
done
[ "$code" = 200 ] || fail "/health is $code after 30 s"
echo "ready_s=$(secs "$t0" "$(now)")"
"$engine" logs "$NAME" 2>&1 | grep "listening on http://0.0.0.0:$PORT" >/dev/null || fail "no 'listening on http://0.0.0.0:$PORT' line"
[ "$("$engine" exec "$NAME" id -u)" != 0 ] || fail "runs as root"

page=$(curl -fsS "http://127.0.0.1:$PORT/") || fail "GET / failed"
grep -qi "<html" <<<"$page" || fail "GET / is not the page"

png=$(base64 -w0 tests/fixtures/golden/images/gradient_320x240.png)
body='{"model":"qvl","temperature":0,"max_tokens":16,"messages":[{"role":"user","content":[
  {"type":"image_url","image_url":{"url":"data:image/png;base64,'"$png"'"}},
  {"type":"text","text":"What is in this image?"}]}]}'
t0=$(now)
answer=$(curl -fsS "http://127.0.0.1:$PORT/v1/chat/completions" -H 'Content-Type: application/json' -d "$body") \
  || fail "chat completion failed"
echo "image_question_s=$(secs "$t0" "$(now)")"
grep -q '"finish_reason"' <<<"$answer" || fail "no answer: $answer"
grep -q '"prompt_tokens"' <<<"$answer" || fail "no usage: $answer"

# The HEALTHCHECK the image declares (kept only in the docker image format).
if [ -n "$("$engine" image inspect --format '{{.HealthCheck}}' "$IMAGE" 2>/dev/null | grep -v '<nil>')" ]; then
  "$engine" healthcheck run "$NAME" >/dev/null || fail "the image's HEALTHCHECK fails"
  echo "healthcheck=ok"
else
  echo "healthcheck=absent (image built in the OCI format, which drops HEALTHCHECK; build with --format docker)"
fi

t0=$(now)
"$engine" stop -t 30 "$NAME" >/dev/null   # STOPSIGNAL SIGTERM, then SIGKILL after 30 s
code=$("$engine" inspect --format '{{.State.ExitCode}}' "$NAME")
echo "stop_s=$(secs "$t0" "$(now)") exit_code=$code"
"$engine" logs "$NAME" 2>&1 | grep "SIGTERM, draining" >/dev/null || fail "no drain on SIGTERM"
"$engine" rm -f "$NAME" >/dev/null
[ "$code" = 0 ] || fail "exit code $code after SIGTERM"
echo "container-test: OK"
