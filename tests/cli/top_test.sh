#!/bin/sh
# `shoal top --once` against a real `shoal server` with nodes that report
# telemetry: one row per GPU in 80 columns, the job and user on allocated
# GPUs, sorting, and no terminal control sequences in the output.
set -u
SHOAL=$1
command -v curl > /dev/null 2>&1 || { echo "[program] curl is not installed (scripts/install-deps.sh)"; exit 77; }
TMP=$(mktemp -d)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fake_node.sh"

start_memory_server
register_node a-node-with-a-long-name 2
register_node b01 2
heartbeat a-node-with-a-long-name 10 20
heartbeat b01 95 85
api POST /v1/tokens '{"user":"alice","role":"user"}' > "$TMP/alice.json"
ALICE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$TMP/alice.json")
SHOAL_TOKEN=$ALICE "$SHOAL" submit --gpus 2 -t 10 -J big --wrap "sleep 100" > /dev/null
for _ in $(seq 100); do
  "$SHOAL" queue --all | grep -q running && break
  sleep 0.05
done

check "top --once" 0 "shoal top" -- "$SHOAL" top --once
check "top --json: the nodes and their GPUs, once" 0 "^ok$" -- sh -c "'$SHOAL' top --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert {n[\"name\"] for n in d[\"nodes\"]} >= {\"b01\"}; print(\"ok\")'"
check "a row per GPU" 0 "" -- sh -c "test \$('$SHOAL' top --once | grep -c -E '^(a-node|b01)') -eq 4"
check "utilisation shown" 0 "95%" -- "$SHOAL" top --once
check "long names cut to fit" 0 "a-node-with~" -- "$SHOAL" top --once
check "job and user on allocated GPUs" 0 " 1 alice" -- "$SHOAL" top --once
check "top --node: that node's GPUs only, and says so" 0 "" -- sh -c "'$SHOAL' top --once --node b01 > '$TMP/f' && test \$(grep -c -E '^(a-node|b01)' '$TMP/f') -eq 2 && ! grep -q '^a-node' '$TMP/f' && grep -q 'only node b01' '$TMP/f'"
check "top --user: that user's GPUs only" 0 "" -- sh -c "'$SHOAL' top --once --user alice | grep -E '^(a-node|b01)' > '$TMP/f' && test \$(wc -l < '$TMP/f') -eq 2 && ! grep -v ' 1 alice' '$TMP/f'"
check "top --job: none matches" 0 "(no GPU matches)" -- "$SHOAL" top --once --job 99
check "80 columns" 0 "" -- sh -c "'$SHOAL' top --once | awk 'length > 80 { exit 1 }'"
check "no control sequences" 0 "" -- sh -c "! '$SHOAL' top --once | grep -q \"\$(printf '\\033')\""
check "sort by utilisation" 0 "" -- sh -c "'$SHOAL' top --once --sort util | grep -E '^(a-node|b01)' | head -1 | grep -q '^b01 .* 95%'"
check "sort by node" 0 "" -- sh -c "'$SHOAL' top --once --sort node | grep -E '^(a-node|b01)' | head -1 | grep -q '^a-node'"
check "piped output is one frame" 0 "sorted by temp" -- sh -c "'$SHOAL' top --sort=temp | cat"
check "bad sort" 2 "--sort is util" -- "$SHOAL" top --once --sort speed
check "cluster totals" 0 "4 GPUs: 2 allocated" -- "$SHOAL" top --once
# On a terminal of 9 rows, 2 of the 4 GPU rows fit: j and the up arrow scroll
# a row, g goes back to the top, q quits.
printf 'GPUs %s of 4\n' 1-2 2-3 3-4 2-3 1-2 > "$TMP/scrolled"
check "a short terminal scrolls" 0 "" -- sh -c "python3 '$(dirname "$0")/top_scroll.py' '$SHOAL' > '$TMP/got' && diff '$TMP/scrolled' '$TMP/got'"

# The job's GPU efficiency from the next heartbeats, in show and history. Its
# node reports it running: a sanitizer build can take minutes over the checks
# above, past the launch grace, and a node that leaves the job out of its
# heartbeat would have it requeued under a new epoch.
JOB_AT=$("$SHOAL" show 1 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["allocation"][0]["node"], j["epoch"])')
NODE=${JOB_AT% *}
EPOCH=${JOB_AT#* }
beat() {  # beat NAME UTIL...: the node, reporting job 1 if it runs there
  HB_RUNNING=
  [ "$1" = "$NODE" ] && HB_RUNNING="{\"job\":1,\"epoch\":$EPOCH}"
  heartbeat "$@"
  HB_RUNNING=
}
beat a-node-with-a-long-name 10 20
beat b01 95 85
for _ in $(seq 100); do
  "$SHOAL" show 1 | grep -q "gpu use" && break
  sleep 0.05
done
check "show has the job's GPU use" 0 "gpu use .*util [0-9]*% mean" -- "$SHOAL" show 1
check "job JSON has efficiency" 0 '"util_peak_pct"' -- "$SHOAL" show 1 --json
check "the job kept its first start" 0 '"restarts": 0' -- "$SHOAL" show 1 --json
api POST "/v1/nodes/$NODE/heartbeat" "{\"running\":[],\"events\":[{\"type\":\"exited\",\"job\":1,\"epoch\":$EPOCH,\"exit_code\":0}],\"gpus\":[]}" > /dev/null
for _ in $(seq 100); do
  "$SHOAL" history --all | grep -q completed && break
  sleep 0.05
done
check "history has GPU utilisation" 0 "GPU-UTIL" -- "$SHOAL" history --all
check "history row has a value" 0 "completed .*[0-9]%" -- "$SHOAL" history --all
exit $fail
