#!/bin/sh
# What a container costs a job (docs/containers.md): `shoal run` of a trivial
# command against a real server and two agents on loopback, without a
# container, in one under the rootless runtime (crun as the job's user, the
# default) and in one under a root runtime (runc, container_rootless =
# false), alternated, N times each, the image (a busybox one from Debian's
# busybox-static) unpacked once first. Prints the median and p90 wall time
# of each from the client's side (submit, schedule, launch, run, end,
# output) and the median differences: the container's share (the image
# found and held, a mount namespace with an overlay and staged mounts, a
# bundle, the runtime).
#
#   perf/container-start.sh [build-dir] [N]   (as root; needs crun, runc and busybox)
set -eu
BUILD=${1:-build/release}
N=${2:-20}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHOAL="$ROOT/$BUILD/src/cli/shoal"
[ "$(id -u)" -eq 0 ] || { echo "container-start: needs root (the agent runs the runtime)"; exit 2; }
TMP=$(mktemp -d)
chmod 755 "$TMP"
SERVER=
AGENTS=
cleanup() {
  for pid in $AGENTS $SERVER; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$TMP/rootfs/bin" "$TMP/images" "$TMP/work"
cp "$(command -v busybox)" "$TMP/rootfs/bin/busybox"
ln -s busybox "$TMP/rootfs/bin/sh"
ln -s busybox "$TMP/rootfs/bin/true"
tar -C "$TMP/rootfs" -czf "$TMP/images/bbox.tar.gz" .

export HOME="$TMP" SHOAL_STATE_DIR="$TMP/state"
unset SHOAL_SERVER SHOAL_TOKEN SHOAL_TOKEN_FILE SHOAL_SOCKET
"$SHOAL" server --plain-http --state-dir "$SHOAL_STATE_DIR" --listen 127.0.0.1:0 \
  > "$TMP/server.log" 2>&1 &
SERVER=$!
for _ in $(seq 200); do grep -qs "listening on" "$TMP/server.log" && break; sleep 0.05; done
SHOAL_SERVER=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
export SHOAL_SERVER
# n1: the default (crun, rootless); n2: runc as root.
agent() {  # agent NAME LABEL [flags...]
  name=$1 label=$2
  shift 2
  "$SHOAL" agent --server "$SHOAL_SERVER" --token-file "$SHOAL_STATE_DIR/node.token" \
    --name "$name" --label "$label" --listen 127.0.0.1:0 --state-dir "$TMP/$name" \
    --gpus simulated:dgx-h100 --allow-root-jobs --image-dir "$TMP/images" "$@" \
    > "$TMP/$name.log" 2>&1 &
  AGENTS="$AGENTS $!"
}
agent n1 rootless
agent n2 rootful --container-runtime runc --container-rootless false
for node in n1 n2; do
  for _ in $(seq 200); do "$SHOAL" nodes 2>/dev/null | grep -q "^$node *up" && break; sleep 0.05; done
done
cd "$TMP/work"

run_once() {  # prints the wall time of one `shoal run` in seconds
  t0=$(date +%s.%N)
  "$SHOAL" run "$@" -- true > /dev/null 2>&1 || echo "container-start: a run failed" >&2
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.4f\n", b - a }'
}
# Each image unpacked once, and what is timed runs in it (its root has no
# /usr; the host's has).
for label in rootless rootful; do
  ROOT_LIST=$("$SHOAL" run -C "$label" --container-image=bbox -- sh -c 'echo /*' 2>&1)
  case "$ROOT_LIST" in
    */usr*) echo "container-start: not in the image: $ROOT_LIST"; exit 1 ;;
    */bin*) ;;
    *) echo "container-start: the container did not run on $label: $ROOT_LIST"; exit 1 ;;
  esac
done
for _ in $(seq "$N"); do
  run_once -C rootless >> "$TMP/plain"
  run_once -C rootless --container-image=bbox >> "$TMP/crun"
  run_once -C rootful --container-image=bbox >> "$TMP/runc"
done

stats() {  # median and p90 of a file of numbers
  sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.1f %.1f", v[int((NR + 1) / 2)] * 1000, v[int(NR * 0.9 + 0.5)] * 1000 }'
}
echo "machine load $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $N runs each, alternated"
echo "| shoal run -- true | median ms | p90 ms |"
echo "|---|---|---|"
set -- $(stats "$TMP/plain")
plain=$1
echo "| plain | $1 | $2 |"
set -- $(stats "$TMP/crun")
crun=$1
echo "| --container-image, crun rootless (the default) | $1 | $2 |"
set -- $(stats "$TMP/runc")
echo "| --container-image, runc as root | $1 | $2 |"
awk -v a="$plain" -v b="$crun" -v c="$1" \
  'BEGIN { printf "container: rootless crun %+.1f ms median, runc as root %+.1f ms\n", b - a, c - a }'
