# Sourced by the benches that need a PostgreSQL of their own, from Debian's
# packages: start_throwaway_postgres runs initdb in a temporary folder (as the
# postgres user when root), starts the server on a free loopback port with its
# default durability (fsync on; PG_OPTIONS adds settings, e.g. "-c
# synchronous_commit=off"), waits until it answers and sets pg_url. At exit
# the server is stopped by its PID and the folder removed.
start_throwaway_postgres() {
  local bin dir port launcher
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  dir=$(mktemp -d /tmp/qvl-bench-pg-XXXXXX)
  local as_pg=()
  if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; as_pg=(runuser -u postgres --); fi
  "${as_pg[@]}" "$bin/initdb" -D "$dir/data" -U qvl --auth=trust -E UTF8 >/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "${as_pg[@]}" "$bin/postgres" -D "$dir/data" -k "$dir" -h 127.0.0.1 -p "$port" ${PG_OPTIONS:-} >"$dir/log" 2>&1 &
  launcher=$!
  # Stopped by the postmaster's own PID (runuser, when root, does not pass signals on).
  trap "kill -INT \"\$(head -1 '$dir/data/postmaster.pid')\"; wait $launcher 2>/dev/null || true; rm -rf '$dir'" EXIT
  until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; do sleep 0.1; done
  pg_url="postgresql://qvl@127.0.0.1:$port/postgres"
}
