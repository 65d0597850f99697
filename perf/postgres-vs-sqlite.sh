#!/bin/sh
# Durable submissions with SQLite and with PostgreSQL side by side, in one
# run on this machine: a PostgreSQL of the script's own (tests/cli/postgres.sh,
# fsync on) and perf/server_bench --postgres.
#   perf/postgres-vs-sqlite.sh [build dir, default build/release] [rounds, default 3]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-build/release}
ROUNDS=${2:-3}
TMP=$(mktemp -d)
trap 'stop_postgres; rm -rf "$TMP"' EXIT
. "$HERE/../tests/cli/postgres.sh"
start_postgres || exit 1
"$BUILD/perf/server_bench" --shoal "$BUILD/src/cli/shoal" --postgres "$PG" --rounds "$ROUNDS"
