#!/bin/sh
# Node acceptance through a local cluster: `shoal up --nodes 2` with a
# partition that requires acceptance (both nodes join drained "awaiting
# acceptance"), then `shoal bench --cluster --simulated` runs the node test
# as an acceptance job on each node, reads each report from the job's
# output, and records the verdicts: node01 passes and is resumed, node02
# (one GPU's GEMM made to fail) stays drained with the failing figure in its
# reason. No GPU is measured: --simulated reports the catalogue's
# expectations, and says so.
set -u
SHOAL=$(realpath "$1")
TMP=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'stop_up; rm -rf "$TMP"' EXIT
cat > "$TMP/shoal.toml" <<'TOML'
[[partition]]
name = "gpu"
default = true
require_acceptance = true
TOML

# `shoal bench node --simulated` alone: the expectations, marked as such.
check "simulated node passes" 0 "simulated: no measurement" -- \
  "$SHOAL" bench node --simulated --model H100-SXM-80GB --gpus 8 --quick
check "simulated fault fails" 1 "gpu3 gemm" -- \
  "$SHOAL" bench node --simulated --model H100-SXM-80GB --gpus 8 --simulated-fail gpu3:gemm
check "simulated needs a model" 2 "needs --model" -- "$SHOAL" bench node --simulated
# Without a driver, one line says so (not one CUDA error per test). On a
# host with a driver the real tests would run instead: not this check.
if ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  check "no driver: one line that says so" 1 "^shoal bench: no NVIDIA driver on this host (libcuda.so.1" -- \
    "$SHOAL" bench node --quick
  check "  and nothing else" 0 "" -- sh -c "test \$('$SHOAL' bench node --quick 2>&1 | wc -l) -eq 1"
fi

start_up --nodes 2 --profile dgx-h100 --config "$TMP/shoal.toml"

# node NAME FIELD: a field of a node in `shoal nodes --json`.
node() {
  "$SHOAL" nodes --json | /usr/bin/python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    if n["name"] == sys.argv[1]:
        v = n.get(sys.argv[2], "")
        print(json.dumps(v) if isinstance(v, (dict, list, bool)) else v)' "$1" "$2"
}

check "node01 awaits acceptance" 0 "^awaiting acceptance" -- node node01 state_reason
check "node02 drained" 0 "^drained" -- node node02 state
check "work waits" 0 "Submitted job" -- "$SHOAL" submit --gpus 1 -t 5 -- true
work=$(grep -o '[0-9]*' "$TMP/out" | head -1)

check "bench --cluster" 1 "gpu3 gemm" -- \
  "$SHOAL" bench --cluster --work-dir "$TMP/work" --simulated --quick --timeout 60 --simulated-fail node02:gpu3:gemm
cp "$TMP/out" "$TMP/cluster.out"
check "progress: each acceptance job's state, to its end" 0 "^shoal bench: acceptance job [0-9]* completed ([0-9]* s)" -- cat "$TMP/cluster.out"
check "table: node01 passed" 0 "node01 .*passed .*simulated: no measurement" -- cat "$TMP/cluster.out"
check "table: node02 failed" 0 "node02 .*failed .*gpu3 gemm bf16" -- cat "$TMP/cluster.out"
check "node01 resumed" 0 "^up" -- node node01 state
check "node01 acceptance stored" 0 '"passed": true' -- node node01 acceptance
check "node02 still drained" 0 "^drained" -- node node02 state
check "node02 reason has the figure" 0 "^acceptance failed: .*gpu3 gemm" -- node node02 state_reason
check "node02 acceptance stored" 0 '"passed": false' -- node node02 acceptance
# With node01 up, the waiting work runs there.
for _ in $(seq 100); do
  st=$("$SHOAL" show "$work" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [ "$st" = completed ] && break; sleep 0.1
done
check "work ran after acceptance" 0 "completed" -- echo "$st"
# Nothing awaits acceptance now; node02 is retested by name (and passes once fixed).
check "nothing awaits" 0 "No node awaits" -- "$SHOAL" bench --cluster --work-dir "$TMP/work" --simulated --quick
check "retest node02 (json)" 0 '"result": "passed"' -- \
  "$SHOAL" bench --cluster --work-dir "$TMP/work" --simulated --quick --nodes node02 --json
check "node02 resumed" 0 "^up" -- node node02 state
# Every node again, then NCCL across both as one multi-node acceptance job
# (WORLD_SIZE=2 from Shoal's launcher), judged against the floor.
check "multi-node NCCL" 0 '"result": "passed"' -- \
  "$SHOAL" bench --cluster --work-dir "$TMP/work" --simulated --quick --all --nccl-min-busbw 100 --json
/usr/bin/python3 - "$TMP/out" <<'PY' || { echo "FAIL multi-node NCCL result"; cat "$TMP/out"; fail=1; }
import json, sys
out = json.load(open(sys.argv[1]))
m = out["multi_node_nccl"]
assert out["passed"] and m["result"] == "passed" and m["nodes"] == ["node01", "node02"], m
PY
exit $fail
