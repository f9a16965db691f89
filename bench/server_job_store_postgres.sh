#!/usr/bin/env bash
# bench/server_job_store with a throwaway PostgreSQL from Debian's packages
# (bench/throwaway_postgres.sh: initdb in a temporary folder, the server on a
# free loopback port with its default durability, stopped and removed at the
# end).
#   bench/server_job_store_postgres.sh BUILD_DIR [bench options...]
# PG_OPTIONS: more server settings, e.g. "-c synchronous_commit=off" to see what the WAL flush costs.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [--jobs N] [--body-bytes B]}
shift
source "$(dirname "$0")/throwaway_postgres.sh"
start_throwaway_postgres
"$build/bench/server_job_store" "$@" --postgres "$pg_url"
