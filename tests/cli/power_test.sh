#!/bin/sh
# Power budgets and GPU power caps end to end (docs/power.md), through
# `shoal up` with two simulated DGX H100 nodes (8 x 700 W GPUs each; an idle
# GPU counts 70 W, so the idle cluster counts 1.12 kW) and a site budget of
# 8.5 kW:
# - one 8-GPU job at rated power adds 5.04 kW and starts; a second one would
#   reach 11.2 kW and waits with reason power_budget, saying so;
# - an 8-GPU job capped at 300 W per GPU adds 1.84 kW and starts beside the
#   first; its GPUs, kept busy, draw at most 300 W each (the agent holds
#   them there), and once it has ended a busy job on the same node draws
#   more again (the cap was given back);
# - /metrics shows the budget's cap, the draw counted against it and what
#   the GPUs measured, /v1/power/series its points for the dashboard; a bad
#   --gpu-power-cap is refused with a clear error.
set -u
SHOAL=$1
command -v curl > /dev/null 2>&1 || { echo "[program] curl is not installed (scripts/install-deps.sh)"; exit 77; }
TMP=$(mktemp -d)
cleanup() {
  stop_up
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

cat > "$TMP/server.toml" <<'TOML'
[server]
metrics_public = true
[[power_budget]]
name = "site"
kw = 8.5
TOML
start_up --nodes 2 --profile dgx-h100 --config "$TMP/server.toml"
for _ in $(seq 200); do
  [ "$("$SHOAL" nodes --all --noheader 2>/dev/null | grep -c ' up ')" -ge 2 ] && break
  sleep 0.1
done

state_of() { "$SHOAL" show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_state() {  # wait_state JOB STATE: up to 20 s
  for _ in $(seq 200); do [ "$(state_of "$1")" = "$2" ] && return 0; sleep 0.1; done
  return 1
}
node_of() { "$SHOAL" show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["allocation"][0]["node"])'; }
metric() {  # metric NAME: its value for budget "site"
  curl -sS "$SHOAL_SERVER/metrics" 2>/dev/null | sed -n "s/^$1{budget=\"site\"} //p"
}
# The GPUs' draw under the budget, once it is within [LOW, HIGH] watts (40 s at most).
measured_between() {
  for _ in $(seq 200); do
    w=$(metric shoal_power_budget_gpu_watts)
    [ -n "$w" ] && python3 -c "import sys; sys.exit(0 if $2 <= $w <= $3 else 1)" && { echo "$w W"; return 0; }
    sleep 0.2
  done
  echo "last reading: ${w:-none} W"
  return 1
}

A=$("$SHOAL" submit --parsable -G 8 -t 10 -J rated --wrap "sleep 300")
check "a job at rated power starts" 0 "" -- wait_state "$A" running
B=$("$SHOAL" submit --parsable -G 8 -t 10 -J rated2 --wrap "sleep 300")
for _ in $(seq 100); do "$SHOAL" show "$B" | grep -q power_budget && break; sleep 0.1; done
check "a second one waits for the power budget" 0 "power_budget" -- "$SHOAL" show "$B"
check "and says which budget and by how much" 0 "power budget 'site' would reach 11.2 kW of its 8.5 kW" -- "$SHOAL" show "$B"
check "the queue shows the reason" 0 "power_budget" -- "$SHOAL" queue
check "a power cap out of range is refused" 2 "--gpu-power-cap" -- "$SHOAL" submit -G 8 --gpu-power-cap 5W --wrap true
check "--test-only knows a job the budget can never hold" 1 "power budget 'site' (8.5 kW) never has the 10.1 kW it needs" -- \
  "$SHOAL" submit --test-only -N 2 --gpus-per-node 8 -t 10 --wrap true
C=$("$SHOAL" submit --parsable -G 8 -t 10 -J capped --gpu-power-cap 300W \
  --wrap "timeout 60 sh -c 'while :; do :; done'")
check "a job capped at 300 W per GPU fits beside it" 0 "" -- wait_state "$C" running
check "show gives the cap" 0 "300 W per GPU" -- "$SHOAL" show "$C"
check "and what the budgets count for it" 0 "power counted .*300 W per GPU (earlier runs or its cap)" -- "$SHOAL" show "$C"
check "a job without history or cap counts the rated power" 0 "power counted .*each GPU's rated power" -- "$SHOAL" show "$A"
check "metrics: the budget's cap" 0 "^8500$" -- metric shoal_power_budget_watts
check "metrics: the draw counted (1,120 + 5,040 + 1,840 W)" 0 "^8000$" -- metric shoal_power_budget_expected_watts
# Busy and capped: 8 x 300 W, the other node's 8 idle GPUs at ~84 W (uncapped it would be ~5.7 kW).
check "the capped job's busy GPUs draw at most 300 W each" 0 "W" -- measured_between "$C" 2700 3150
check "the dashboard's series: the budget's cap and points" 0 '"name":"site","cap_w":8500,"points":\[\[' -- \
  curl -sS -H "Authorization: Bearer $(cat "$SHOAL_STATE_DIR/admin.token")" "$SHOAL_SERVER/v1/power/series"
CAPPED_NODE=$(node_of "$C")
"$SHOAL" cancel "$C" "$A" "$B" > /dev/null
wait_state "$C" cancelled
D=$("$SHOAL" submit --parsable -G 8 -t 10 -J uncapped -w "$CAPPED_NODE" \
  --wrap "timeout 60 sh -c 'while :; do :; done'")
check "a busy job after it runs on the same node" 0 "" -- wait_state "$D" running
# Above what 8 GPUs held to 300 W and 8 idle ones can draw together (3,072 W);
# busy and uncapped they reach ~5.7 kW, and half busy (a loaded machine) ~3.5 kW.
check "and its GPUs draw more than the old cap again" 0 "W" -- measured_between "$D" 3300 7000
"$SHOAL" cancel "$D" > /dev/null
exit $fail
