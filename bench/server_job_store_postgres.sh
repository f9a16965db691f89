#!/usr/bin/env bash
# bench/server_job_store with a throwaway PostgreSQL from Debian's packages:
# initdb in a temporary folder (as the postgres user when root), the server on
# a free loopback port with its default durability (fsync on), the bench, then
# the server stopped by its PID and the folder removed.
#   bench/server_job_store_postgres.sh BUILD_DIR [bench options...]
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [--jobs N] [--body-bytes B]}
shift
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
dir=$(mktemp -d /tmp/qvl-bench-pg-XXXXXX)
as_pg=()
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; as_pg=(runuser -u postgres --); fi
"${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U qvl --auth=trust -E UTF8 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# PG_OPTIONS: more server settings, e.g. "-c synchronous_commit=off" to see what the WAL flush costs.
"${as_pg[@]}" "$bin/postgres" -D "$dir/data" -k "$dir" -h 127.0.0.1 -p "$port" ${PG_OPTIONS:-} >"$dir/log" 2>&1 &
launcher=$!
# Stopped by the postmaster's own PID (runuser, when root, does not pass signals on).
trap 'kill -INT "$(head -1 "$dir/data/postmaster.pid")"; wait $launcher 2>/dev/null || true; rm -rf "$dir"' EXIT
until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; do sleep 0.1; done
"$build/bench/server_job_store" "$@" --postgres "postgresql://qvl@127.0.0.1:$port/postgres"
