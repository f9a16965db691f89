#!/usr/bin/env bash
# bench/search_recall against a throwaway PostgreSQL with pgvector from
# Debian's packages (Debian 13: postgresql-17-pgvector; Debian 12 has none, so
# on a Debian 12 host run it in a Debian 13 root: docs/platforms.md): initdb in
# a temporary folder (as the postgres user when root), the server on a free
# loopback port, the bench, then the server stopped by its PID and the folder
# removed.
#   bench/search_recall_postgres.sh BUILD_DIR [search_recall options...]
#   scripts/distro-root.sh run trixie -- bench/search_recall_postgres.sh build-debian13 --pages 10000
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [--pages N] [--ef 40,100,200] ...}
shift
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
dir=$(mktemp -d /tmp/qvl-bench-pg-XXXXXX)
as_pg=()
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; as_pg=(runuser -u postgres --); fi
"${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U qvl --auth=trust -E UTF8 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${as_pg[@]}" "$bin/postgres" -D "$dir/data" -k "$dir" -h 127.0.0.1 -p "$port" >"$dir/log" 2>&1 &
launcher=$!
# Stopped by the postmaster's own PID (runuser, when root, does not pass signals on).
trap 'kill -INT "$(head -1 "$dir/data/postmaster.pid")"; wait $launcher 2>/dev/null || true; rm -rf "$dir"' EXIT
until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; do sleep 0.1; done
"$build/bench/search_recall" "$@" --pg "postgresql://qvl@127.0.0.1:$port/postgres"
