#!/bin/sh
# What a container costs a job (docs/containers.md): `shoal run` of a trivial
# command on `shoal up` (one simulated node), without and with
# --container-image (a busybox image from Debian's busybox-static, unpacked
# once first), alternated, N times each. Prints the median and p90 wall
# time of each from the client's side (submit, schedule, launch, run, end,
# output), and the median difference: the container's share (the image
# found and held, a mount namespace with an overlay and staged mounts, a
# runc bundle, runc run).
#
#   perf/container-start.sh [build-dir] [N]   (as root; needs runc and busybox)
set -eu
BUILD=${1:-build/release}
N=${2:-20}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHOAL="$ROOT/$BUILD/src/cli/shoal"
[ "$(id -u)" -eq 0 ] || { echo "container-start: needs root (the agent runs the runtime)"; exit 2; }
TMP=$(mktemp -d)
chmod 755 "$TMP"
UP=
cleanup() {
  [ -n "$UP" ] && kill -INT "$UP" 2>/dev/null && wait "$UP" 2>/dev/null
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
unset SHOAL_SERVER SHOAL_TOKEN SHOAL_TOKEN_FILE
"$SHOAL" up --nodes 1 --state-dir "$SHOAL_STATE_DIR" --listen 127.0.0.1:0 \
  --image-dir "$TMP/images" > "$TMP/up.log" 2>&1 &
UP=$!
for _ in $(seq 200); do grep -qs "Shoal is up" "$TMP/up.log" && break; sleep 0.05; done
SHOAL_SERVER=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$TMP/up.log" | head -1)
export SHOAL_SERVER
cd "$TMP/work"

run_once() {  # prints the wall time of one `shoal run` in seconds
  t0=$(date +%s.%N)
  "$SHOAL" run "$@" -- true > /dev/null 2>&1 || echo "container-start: a run failed" >&2
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.4f\n", b - a }'
}
run_once --container-image=bbox > /dev/null  # the image unpacked once
for _ in $(seq "$N"); do
  run_once >> "$TMP/plain"
  run_once --container-image=bbox >> "$TMP/container"
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
set -- $(stats "$TMP/container")
echo "| --container-image (runc) | $1 | $2 |"
awk -v a="$plain" -v b="$1" 'BEGIN { printf "container: +%.1f ms median\n", b - a }'
