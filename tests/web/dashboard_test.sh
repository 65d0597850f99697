#!/bin/sh
# The dashboard in a real browser: starts `shoal up` (3 simulated DGX H100
# nodes on loopback), then drives Debian's chromium headless with the vendored
# playwright-core (dashboard_test.mjs): overview (with a power budget's
# chart), jobs, a job's page with its chart and log, a node's page. Screenshots and load figures go to ARTIFACTS.
#   dashboard_test.sh SHOAL_BINARY ARTIFACTS_DIR WORK_DIR
# Exits 77 (skipped) when node or chromium is missing. Downloads nothing.
set -u
SHOAL=$1
ARTIFACTS=$2
WORK=$3
HERE=$(cd "$(dirname "$0")" && pwd)
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
PW_VERSION=1.65.1

if ! command -v node >/dev/null 2>&1; then echo "[program] node is not installed (scripts/install-deps.sh)"; exit 77; fi
if [ ! -x "$CHROMIUM" ]; then echo "[program] $CHROMIUM is not installed (scripts/install-deps.sh)"; exit 77; fi
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 18 ]; then echo "[program] node is older than 18"; exit 77; fi

# playwright-core from its vendored tarball: extracted, never installed from the network.
PW_DIR=$WORK/node_modules/playwright-core
if [ "$(cat "$PW_DIR/.vendored" 2>/dev/null)" != "$PW_VERSION" ]; then
  rm -rf "$PW_DIR" && mkdir -p "$PW_DIR" || exit 1
  tar -xzf "$HERE/vendor/playwright-core-$PW_VERSION.tgz" -C "$PW_DIR" --strip-components=1 || exit 1
  echo "$PW_VERSION" > "$PW_DIR/.vendored"
fi

mkdir -p "$ARTIFACTS" || exit 1
ARTIFACTS=$(cd "$ARTIFACTS" && pwd)
rm -f "$ARTIFACTS"/failure-*.png
TMP=$(mktemp -d /tmp/shoal-web-test.XXXXXX) || exit 1
UP_PID=""
cleanup() {
  if [ -n "$UP_PID" ] && kill -0 "$UP_PID" 2>/dev/null; then
    kill -INT "$UP_PID" 2>/dev/null
    i=0
    while kill -0 "$UP_PID" 2>/dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$UP_PID" 2>/dev/null
    wait "$UP_PID" 2>/dev/null
  fi
  cp "$TMP/up.log" "$ARTIFACTS/shoal-up.log" 2>/dev/null
  steps=$(sed -n 's/^running job steps in //p' "$TMP/up.log" 2>/dev/null)
  if [ -n "$steps" ]; then rm -rf "$steps"; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# A site power budget that never holds a job back (3 nodes peak at 16.8 kW),
# for the overview's power chart.
printf '[[power_budget]]\nname = "site"\nkw = 20\n' > "$TMP/server.toml"
# Port 0: the server picks a free loopback port and prints it.
# node03's GPU 1 has ECC errors and an XID on record from before its agent
# started (counts the health check takes as the baseline, so it stays in use).
"$SHOAL" up --nodes 3 --profile dgx-h100 --state-dir "$TMP/state" --listen 127.0.0.1:0 \
  --sim-fault node03=ecc:1:14:1 --sim-fault node03=xid:1:79 --config "$TMP/server.toml" > "$TMP/up.log" 2>&1 &
UP_PID=$!
i=0
until grep -q "Ctrl-C stops" "$TMP/up.log" 2>/dev/null; do
  if ! kill -0 "$UP_PID" 2>/dev/null || [ $i -ge 300 ]; then
    echo "FAIL: shoal up did not start"; cat "$TMP/up.log"; exit 1
  fi
  sleep 0.1; i=$((i + 1))
done
ADDRESS=$(sed -n 's|^Shoal is up: server on http://\([^,]*\),.*|\1|p' "$TMP/up.log")
# `shoal up` prints the dashboard's address and where the admin token is,
# never the token; a link with the token in its fragment signs a tab in.
TOKEN=$(cat "$TMP/state/admin.token" 2>/dev/null)
if [ -z "$ADDRESS" ] || [ -z "$TOKEN" ] || ! grep -q "http://$ADDRESS/ .*$TMP/state/admin.token" "$TMP/up.log"; then
  echo "FAIL: no dashboard address and token file in the output of shoal up"; cat "$TMP/up.log"; exit 1
fi
if grep -qF "$TOKEN" "$TMP/up.log"; then echo "FAIL: shoal up printed the admin token"; exit 1; fi
URL="http://$ADDRESS/#token=$TOKEN"
echo "ok   shoal up on $ADDRESS prints the dashboard's address and where the token is, not the token"

SHOAL="$SHOAL" SHOAL_SERVER="http://$ADDRESS" SHOAL_SOCKET="$TMP/state/shoal.sock" DASHBOARD_URL="$URL" \
  ARTIFACTS="$ARTIFACTS" PW_DIR="$PW_DIR" CHROMIUM="$CHROMIUM" WORK_DIR="$TMP" \
  timeout -k 5 200 node "$HERE/dashboard_test.mjs"
rc=$?
[ $rc -eq 0 ] || echo "FAIL: the browser test exited with $rc (shoal up's output: $ARTIFACTS/shoal-up.log)"
exit $rc
