#!/usr/bin/env bash
# bench/search_recall against a throwaway PostgreSQL with pgvector from
# Debian's packages (Debian 13: postgresql-17-pgvector; Debian 12 has none, so
# on a Debian 12 host run it in a Debian 13 root: docs/platforms.md), started
# and removed as bench/throwaway_postgres.sh does.
#   bench/search_recall_postgres.sh BUILD_DIR [search_recall options...]
#   scripts/distro-root.sh run trixie -- bench/search_recall_postgres.sh build-debian13 --pages 10000
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [--pages N] [--ef 40,100,200] ...}
shift
source "$(dirname "$0")/throwaway_postgres.sh"
start_throwaway_postgres
"$build/bench/search_recall" "$@" --pg "$pg_url"
