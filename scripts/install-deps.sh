#!/usr/bin/env bash
# Installs the Debian packages qvl builds and tests with. Idempotent: asks apt
# only for what is missing. Works as root or through sudo.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev     # tests, micro-benchmarks
  libhwy-dev                                     # SIMD with runtime dispatch
  nlohmann-json3-dev                             # JSON
  libcpp-httplib-dev                             # HTTP client of the server tests (qvl serves with src/http)
  libcurl4-openssl-dev                           # model download
  libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev   # image decoders
  libutf8proc-dev                                # Unicode NFC + categories for the tokenizer
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev  # video input (src/video): demux + decode from memory
  libpoppler-cpp-dev fonts-dejavu-core           # PDF pages (src/pdf); the font stands in for unembedded Helvetica & co.
  libsqlite3-dev                                 # the default job store (src/server/jobs/job_store_sqlite.h)
  libpq-dev                                      # the job store replicas share (src/server/jobs/job_store_postgres.h)
  postgresql                                     # tests: a real server for that store, started in a temporary folder
  python3 python3-pil                            # reference timings in bench/ (PIL)
  python3-jinja2                                 # tools/render_thinking_cases.py: chat-template fixtures rendered as transformers does
)
# Node.js and npm (bench/ and browser-test tooling): some machines carry a
# nodesource nodejs that bundles npm, so ask for the commands, not the packages.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
packages+=(chromium)                             # headless browser tests of the web page (tests/browser)
packages+=(nginx python3-yaml)                   # tests/deploy: the replicas test runs nginx in its own prefix; k8s manifests parsed
# pgvector for the search index's PostgreSQL store and its tests (src/search/search_store_postgres.h),
# built for the PostgreSQL the `postgresql` package brings: Debian 13 has postgresql-17-pgvector;
# Debian 12 packages none, and those tests skip saying so.
pg_server=$(apt-cache depends postgresql 2>/dev/null | grep -o 'postgresql-[0-9][0-9]*' | head -n 1 || true)
if [ -n "$pg_server" ] && apt-cache show "${pg_server}-pgvector" >/dev/null 2>&1; then
  packages+=("${pg_server}-pgvector")
fi

missing=()
for p in "${packages[@]}"; do
  # "install ok installed" only; a removed-but-configured package counts as missing.
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo_cmd=(sudo); else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
