#!/bin/sh
# GET /metrics against a real `shoal server` and a real `shoal agent`
# (simulated GPUs): `promtool check metrics` finds no errors and no lint
# problems but those dcgm-exporter's own names carry (the agent's per-GPU
# series; the controller's are Shoal's own), and a real Prometheus
# (loopback only) scrapes both with their bearer tokens, one target per
# node as docs/metrics.md says, and answers queries on each. Skipped (77)
# when promtool or prometheus is missing (Debian package `prometheus`).
set -u
SHOAL=$1
if ! command -v promtool > /dev/null 2>&1 || ! command -v prometheus > /dev/null 2>&1; then
  echo "[program] promtool and prometheus are not installed (apt-get install prometheus, or scripts/install-deps.sh)"
  exit 77
fi
command -v curl > /dev/null 2>&1 || { echo "[program] curl is not installed (scripts/install-deps.sh)"; exit 77; }
TMP=$(mktemp -d)
SERVER_PID=
AGENT_PID=
PROM_PID=
cleanup() {
  [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
  [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fake_node.sh"

# promtool_check NAME FILE: no errors; lint notes only on dcgm-exporter's
# names, kept as they are so that its dashboards work (camelCase modelName,
# counters without _total, DCGM_FI_DEV_PCIE_REPLAY_COUNTER's "COUNTER").
promtool_check() {
  promtool check metrics < "$2" > "$TMP/promtool.txt" 2>&1
  code=$?
  grep -v -E '^DCGM_FI_[A-Z_]+ (label names should be written in .snake_case. not .camelCase.|counter metrics should have "_total" suffix|metric name should not include type .counter.)$' \
    "$TMP/promtool.txt" > "$TMP/promtool-left.txt"
  if [ "$code" -ne 0 ] && [ "$code" -ne 3 ]; then
    echo "FAIL promtool check metrics ($1): exit $code"; cat "$TMP/promtool.txt"; fail=1
  elif [ -s "$TMP/promtool-left.txt" ]; then
    echo "FAIL promtool check metrics ($1):"; cat "$TMP/promtool-left.txt"; fail=1
  else
    echo "ok   promtool check metrics ($1: $(wc -l < "$TMP/promtool.txt") dcgm-exporter naming notes)"
  fi
}

start_memory_server
register_node gpu01 2
heartbeat gpu01 42.5 0
api POST /v1/jobs '{"command":"sleep 100","gpus":1,"account":"","time_limit_s":600}' > /dev/null

# The controller: Shoal's own metrics and a line per node, no per-GPU series.
check "metrics need a token" 22 "" -- curl -sS -f "$SHOAL_SERVER/metrics"
api GET /metrics > "$TMP/metrics.txt"
check "the controller has no per-GPU series" 1 "" -- grep -q DCGM_FI_ "$TMP/metrics.txt"
check "the controller has shoal's own" 0 'shoal_gpus{model="H100-SXM-80GB",state=' -- cat "$TMP/metrics.txt"
check "the controller has each node's state" 0 'shoal_node_state{node="gpu01",state="up"} 1' -- cat "$TMP/metrics.txt"
check "the controller has GPU aggregates" 0 'shoal_gpu_utilization_ratio{model="H100-SXM-80GB"} 0.2125' -- cat "$TMP/metrics.txt"
promtool_check controller "$TMP/metrics.txt"

# An agent with simulated GPUs, started once the job runs on gpu01 (nothing
# is left to land on it), with a node token of its own.
NODE_TOKEN=$(api POST /v1/tokens '{"user":"sim01","role":"node","node":"sim01"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
"$SHOAL" agent --server "$SHOAL_SERVER" --token "$NODE_TOKEN" --name sim01 \
  --listen 127.0.0.1:0 --gpus simulated:dgx-h100 --state-dir "$TMP/agent" --cgroup-root none \
  --heartbeat 200ms > "$TMP/agent.log" 2>&1 &
AGENT_PID=$!
for _ in $(seq 200); do grep -qs "listening on" "$TMP/agent.log" && break; sleep 0.05; done
AGENT_ADDR=$(sed -n 's/.* listening on \(127\.0\.0\.1:[0-9]*\),.*/\1/p' "$TMP/agent.log" | head -1)
[ -n "$AGENT_ADDR" ] || { echo "FAIL the agent did not start"; cat "$TMP/agent.log"; exit 1; }
check "agent metrics need the node token" 22 "" -- curl -sS -f "http://$AGENT_ADDR/metrics"
for _ in $(seq 100); do  # its first telemetry tick
  curl -sS -f -H "Authorization: Bearer $NODE_TOKEN" "http://$AGENT_ADDR/metrics" > "$TMP/agent-metrics.txt" 2>/dev/null
  [ -s "$TMP/agent-metrics.txt" ] && break
  sleep 0.1
done
check "the agent carries the telemetry" 0 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="[^"]*",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="H100-SXM-80GB",Hostname="sim01",hostname="sim01"} ' -- cat "$TMP/agent-metrics.txt"
check "the agent has every GPU" 0 'DCGM_FI_DEV_POWER_USAGE{gpu="7",' -- cat "$TMP/agent-metrics.txt"
promtool_check agent "$TMP/agent-metrics.txt"

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
  - job_name: shoal-nodes
    authorization:
      type: Bearer
      credentials: $NODE_TOKEN
    static_configs:
      - targets: ["$AGENT_ADDR"]
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
# query EXPR: the value of the first series Prometheus answers, or "".
query() {
  curl -sS -G "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" 2>/dev/null |
    python3 -c 'import json,sys
try:
    r = json.load(sys.stdin)["data"]["result"]
    print(r[0]["value"][1] if r else "")
except Exception:
    print("")' 2>/dev/null
}
reporting=""
util=""
i=0
while [ "$i" -lt 60 ]; do  # 30 s at most
  # gpu01's 2 GPUs and the agent's 8
  reporting=$(query 'shoal_gpus_reporting{job="shoal",model="H100-SXM-80GB"}')
  util=$(query 'DCGM_FI_DEV_GPU_UTIL{job="shoal-nodes",gpu="0",Hostname="sim01"}')
  [ "$reporting" = 10 ] && [ -n "$util" ] && break
  heartbeat gpu01 42.5 0  # keep the node up
  sleep 0.5
  i=$((i + 1))
done
if [ "$reporting" = 10 ]; then
  echo "ok   prometheus scraped the controller: shoal_gpus_reporting = $reporting"
else
  echo "FAIL prometheus query on the controller: got '$reporting'"; tail -20 "$TMP/prometheus.log"; fail=1
fi
if [ -n "$util" ]; then
  echo "ok   prometheus scraped the agent: DCGM_FI_DEV_GPU_UTIL = $util"
else
  echo "FAIL prometheus query on the agent: got nothing"; tail -20 "$TMP/prometheus.log"; fail=1
fi
health=$(curl -sS "http://127.0.0.1:$PROM_PORT/api/v1/targets" | python3 -c 'import json,sys; print(" ".join(sorted(t["health"] for t in json.load(sys.stdin)["data"]["activeTargets"])))' 2>/dev/null)
check "prometheus targets are up" 0 "^up up$" -- echo "$health"
kill "$PROM_PID" && wait "$PROM_PID"
PROM_PID=
exit $fail
