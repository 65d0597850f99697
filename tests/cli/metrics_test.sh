#!/bin/sh
# GET /metrics against a real `shoal server`: `promtool check metrics` finds
# no errors and no lint problems but those dcgm-exporter's own names carry,
# and a real Prometheus (loopback only) scrapes it with the bearer token and
# answers a query with the utilisation a node reported. Skipped (77) when
# promtool or prometheus is missing (Debian package `prometheus`).
set -u
SHOAL=$1
if ! command -v promtool > /dev/null 2>&1 || ! command -v prometheus > /dev/null 2>&1; then
  echo "[program] promtool and prometheus are not installed (apt-get install prometheus, or scripts/install-deps.sh)"
  exit 77
fi
command -v curl > /dev/null 2>&1 || { echo "[program] curl is not installed (scripts/install-deps.sh)"; exit 77; }
TMP=$(mktemp -d)
SERVER_PID=
PROM_PID=
cleanup() {
  [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fake_node.sh"

start_memory_server
register_node gpu01 2
heartbeat gpu01 42.5 0
api POST /v1/jobs '{"command":"sleep 100","gpus":1,"account":"","time_limit_s":600}' > /dev/null

check "metrics need a token" 22 "" -- curl -sS -f "$SHOAL_SERVER/metrics"
api GET /metrics > "$TMP/metrics.txt"
check "metrics carry the telemetry" 0 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-gpu01-0",device="nvidia0",modelName="H100-SXM-80GB",Hostname="gpu01",hostname="gpu01".*} 42.5' -- cat "$TMP/metrics.txt"
check "metrics carry shoal's own" 0 'shoal_gpus{model="H100-SXM-80GB",state=' -- cat "$TMP/metrics.txt"

# promtool: no errors. Lint: dcgm-exporter's names are kept as they are so
# that its dashboards work (camelCase modelName, counters without _total);
# anything else is a problem.
promtool check metrics < "$TMP/metrics.txt" > "$TMP/promtool.txt" 2>&1
code=$?
grep -v -E '^DCGM_FI_[A-Z_]+ (label names should be written in .snake_case. not .camelCase.|counter metrics should have "_total" suffix)$' \
  "$TMP/promtool.txt" > "$TMP/promtool-left.txt"
if [ "$code" -ne 0 ] && [ "$code" -ne 3 ]; then
  echo "FAIL promtool check metrics: exit $code"; cat "$TMP/promtool.txt"; fail=1
elif [ -s "$TMP/promtool-left.txt" ]; then
  echo "FAIL promtool check metrics:"; cat "$TMP/promtool-left.txt"; fail=1
else
  echo "ok   promtool check metrics ($(wc -l < "$TMP/promtool.txt") dcgm-exporter naming notes)"
fi

# A real Prometheus on a free loopback port. The port is free when picked but
# another process may take it before Prometheus binds it: Prometheus then
# exits at once, saying so, and gets another port (5 tries).
cat > "$TMP/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: shoal
    authorization:
      type: Bearer
      credentials: $SHOAL_TOKEN
    static_configs:
      - targets: ["$SHOAL_ADDR"]
YAML
start_prometheus() {
  for _ in 1 2 3 4 5; do
    PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
      --web.listen-address="127.0.0.1:$PROM_PORT" > "$TMP/prometheus.log" 2>&1 &
    PROM_PID=$!
    j=0
    while [ "$j" -lt 300 ]; do  # 30 s at most for it to be ready or gone
      kill -0 "$PROM_PID" 2>/dev/null || break
      curl -sf "http://127.0.0.1:$PROM_PORT/-/ready" > /dev/null 2>&1 &&
        kill -0 "$PROM_PID" 2>/dev/null && return 0
      sleep 0.1
      j=$((j + 1))
    done
    kill -0 "$PROM_PID" 2>/dev/null && return 0  # up but slow: the query loop waits on
    wait "$PROM_PID" 2>/dev/null
    PROM_PID=
    grep -q 'address already in use' "$TMP/prometheus.log" || return 1
    echo "note: port $PROM_PORT was taken before Prometheus bound it; another"
  done
  return 1
}
if ! start_prometheus; then
  echo "FAIL prometheus did not start"; tail -20 "$TMP/prometheus.log"; exit 1
fi
got=""
i=0
while [ "$i" -lt 60 ]; do  # 30 s at most
  got=$(curl -sS -G "http://127.0.0.1:$PROM_PORT/api/v1/query" \
          --data-urlencode 'query=DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="gpu01"}' 2>/dev/null |
        python3 -c 'import json,sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "")
except Exception:
    print("")' 2>/dev/null)
  [ -n "$got" ] && break
  heartbeat gpu01 42.5 0  # keep the node up
  sleep 0.5
  i=$((i + 1))
done
if [ "$got" = "42.5" ]; then
  echo "ok   prometheus scraped DCGM_FI_DEV_GPU_UTIL = $got"
else
  echo "FAIL prometheus query: got '$got'"; tail -20 "$TMP/prometheus.log"; fail=1
fi
health=$(curl -sS "http://127.0.0.1:$PROM_PORT/api/v1/targets" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["activeTargets"][0]["health"])' 2>/dev/null)
check "prometheus target is up" 0 "up" -- echo "$health"
kill "$PROM_PID" && wait "$PROM_PID"
PROM_PID=
exit $fail
