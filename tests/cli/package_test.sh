#!/bin/sh
# The Debian package (cmake/ShoalPackage.cmake, `make deb`) as an admin
# gets it: built with cpack from this build, unpacked into a throwaway root
# (dpkg -x: nothing touches this host's /etc or /usr), its control data and
# file list checked, its systemd units verified (when systemd-analyze is
# here), then the installed binaries started from their installed paths
# with the installed configuration files: a TLS controller, and an agent
# (simulated GPUs) that joins it with a join token and runs a job.
# package_test.sh <cpack> <build dir>
set -u
CPACK=$1
BUILD=$2
TMP=$(mktemp -d)
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

check "cpack builds the package" 0 "shoal_.*\.deb generated" -- \
  "$CPACK" -G DEB -B "$TMP/pkg" --config "$BUILD/CPackConfig.cmake"
DEB=$(ls "$TMP"/pkg/shoal_*.deb 2>/dev/null | head -1)
[ -n "$DEB" ] || { echo "FAIL no package"; exit 1; }

check "control: the libraries' packages and adduser" 0 "Depends: adduser, .*libssl3" -- dpkg-deb -I "$DEB"
check "control: the configuration files are conffiles" 0 "/etc/shoal/agent.toml" -- \
  dpkg-deb -I "$DEB" conffiles
check "control: postinst makes the shoal user" 0 "adduser --system" -- dpkg-deb -I "$DEB" postinst
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's#^\./#/#' > "$TMP/files"
for f in /usr/bin/shoal /usr/bin/shoal-full /usr/bin/shoal-step /etc/shoal/server.toml /etc/shoal/agent.toml \
  /lib/systemd/system/shoal-server.service /lib/systemd/system/shoal-agent.service \
  /usr/share/shoal/data/SHA256SUMS /usr/share/doc/shoal/deploy.md \
  /usr/share/shoal/prometheus/shoal-alerts.yml /usr/share/shoal/prometheus/shoal-alerts.test.yml \
  /usr/share/shoal/prometheus/prometheus.yml.example /usr/share/shoal/grafana/shoal-cluster.json \
  /usr/share/shoal/grafana/shoal-node.json /usr/share/shoal/grafana/shoal-job-efficiency.json; do
  check "the package holds $f" 0 "" -- grep -qx "$f" "$TMP/files"
done

ROOT="$TMP/root"
check "dpkg -x unpacks it" 0 "" -- dpkg -x "$DEB" "$ROOT"
SHOAL="$ROOT/usr/bin/shoal"
if command -v promtool > /dev/null; then
  check "the installed alert rules pass their unit tests" 0 "SUCCESS" -- \
    promtool test rules "$ROOT/usr/share/shoal/prometheus/shoal-alerts.test.yml"
else
  echo "skip promtool test rules: promtool is not installed"
fi
check "the binaries are stripped" 1 "" -- \
  sh -c "readelf -S '$SHOAL' '$ROOT/usr/bin/shoal-full' '$ROOT/usr/bin/shoal-step' | grep -q debug_info"
check "the installed shoal finds its installed data" 0 "data: $ROOT/usr/share/shoal/data (install prefix)" -- \
  "$SHOAL" version

mkdir -p "$TMP/empty"
check "the installed shoal doctor tells a host without a driver what it lacks" 1 '"name": "NVIDIA driver"' -- \
  "$SHOAL" doctor --json --nvml-library "$TMP/empty/libnvidia-ml.so.1" --sys "$TMP/empty" \
  --dev "$TMP/empty" --proc "$TMP/empty" --state-dir "$TMP"

# The units as systemd reads them; their commands pointed at the unpacked root.
if command -v systemd-analyze > /dev/null; then
  mkdir -p "$TMP/units"
  for u in "$ROOT"/lib/systemd/system/*.service; do
    sed "s#/usr/bin/shoal#$ROOT/usr/bin/shoal#g" "$u" > "$TMP/units/$(basename "$u")"
  done
  check "systemd-analyze verifies the units" 0 "" -- sh -c "systemd-analyze verify '$TMP'/units/*.service; echo verified"
  printf '[Service]\nExecStart=/nonexistent/shoal server\n' > "$TMP/broken.service"
  check "... and would catch a unit that cannot start" 1 "" -- systemd-analyze verify "$TMP/broken.service"
  check "the agent's unit leaves running steps alone" 0 "" -- grep -qx "KillMode=process" "$TMP/units/shoal-agent.service"
  check "the server's unit runs as the shoal user" 0 "" -- grep -qx "User=shoal" "$TMP/units/shoal-server.service"
else
  echo "skip systemd-analyze verify: systemd-analyze is not installed"
fi

# The installed binaries with the installed configuration; only the
# addresses, state folders and the token socket change, on the command line
# (which wins).
export HOME="$TMP/home" SHOAL_STATE_DIR="$TMP/state"
unset SHOAL_TOKEN SHOAL_TOKEN_FILE SHOAL_SOCKET SHOAL_SERVER SHOAL_CA_FILE
mkdir -p "$HOME"
"$SHOAL" server --config "$ROOT/etc/shoal/server.toml" --listen 127.0.0.1:0 \
  --state-dir "$SHOAL_STATE_DIR" --socket "$SHOAL_STATE_DIR/shoal.sock" > "$TMP/server.log" 2>&1 &
PIDS="$PIDS $!"
for _ in $(seq 200); do grep -qs "fingerprint" "$TMP/server.log" && break; sleep 0.05; done
URL=$(grep -o 'https://127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
[ -n "$URL" ] || { echo "FAIL the installed server did not start"; cat "$TMP/server.log"; exit 1; }
echo "ok   the installed server runs with /etc/shoal/server.toml (policy backfill, TLS)"
# The file is what the server read: a copy with a mistake in it is refused.
sed 's/^policy = "backfill"/policy = "nonesuch"/' "$ROOT/etc/shoal/server.toml" > "$TMP/bad.toml"
check "the server reads its configuration file (a wrong policy in it is refused)" 2 "nonesuch" -- \
  "$SHOAL" server --config "$TMP/bad.toml" --listen 127.0.0.1:0 --state-dir "$TMP/bad-state" \
  --socket none
"$SHOAL" token create --role join --node pkgnode > "$TMP/join.token" 2> "$TMP/token.err"
"$SHOAL" agent --config "$ROOT/etc/shoal/agent.toml" --server "$URL" \
  --ca-file "$SHOAL_STATE_DIR/tls/ca.crt" --join-token-file "$TMP/join.token" --name pkgnode \
  --listen 127.0.0.1:0 --state-dir "$TMP/agent" --steps-dir "$TMP/agent-run/steps" \
  --gpus simulated:dgx-h100 --allow-root-jobs > "$TMP/agent.log" 2>&1 &
PIDS="$PIDS $!"
up=0
for _ in $(seq 200); do "$SHOAL" nodes 2>/dev/null | grep -q "^pkgnode *up" && { up=1; break; }; sleep 0.1; done
if [ $up = 1 ]; then echo "ok   the installed agent joined over TLS with /etc/shoal/agent.toml"; else
  echo "FAIL the installed agent did not join"; cat "$TMP/token.err" "$TMP/agent.log"; fail=1; fi
mkdir -p "$TMP/work"
JOB=$(cd "$TMP/work" && "$SHOAL" submit --gpus 1 --parsable -- sh -c 'echo from-the-package' 2>&1)
for _ in $(seq 200); do "$SHOAL" show "$JOB" 2>/dev/null | grep -q 'state.*completed' && break; sleep 0.1; done
check "a job ran on the installed agent" 0 "state.*completed" -- "$SHOAL" show "$JOB"
exit $fail
