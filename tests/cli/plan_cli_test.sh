#!/bin/sh
# `shoal plan` as a user runs it: the designs, JSON, a cluster file that
# `shoal sim` then replays a real trace on, workloads that cannot be met
# (exit 1, with what binds), bad usage (exit 2), and the validation command.
set -u
SHOAL=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"
EX="$ROOT/examples/plan"
TRACE="$ROOT/data/traces/microsoft-itp-2021/raw/cluster01.csv"

check "help" 0 "workload file" -- "$SHOAL" plan --help
check "flags" 0 "cheapest" -- "$SHOAL" plan --model llama3-8b --tokens 1T --days 30 --gpu H100,B200
check "json" 0 '"designs"' -- "$SHOAL" plan --model llama3-8b --tokens 1T --gpus 64 --gpu H100 --json
check "serving" 0 "replicas of TP" -- "$SHOAL" plan --model llama3-70b --serve-tokens-per-s 20k --tpot-ms 50 --precision fp8 --gpu H200
check "pretrain example" 0 "fewest GPUs" -- "$SHOAL" plan "$EX/llama3-70b-pretrain.toml"
check "405b example" 0 "MFU" -- "$SHOAL" plan "$EX/llama3-405b-16k.toml"
check "serving example" 0 "ms per token" -- "$SHOAL" plan "$EX/chat-serving.toml"
# Storage, the converged and out-of-band networks and the management servers
# are in the bill: capex is every part's cost, and a 16k-GPU run checkpoints
# to storage sized for it (not every two minutes around the clock).
support_bill() {
  "$SHOAL" plan "$EX/llama3-405b-16k.toml" --json > "$TMP/405b.json" &&
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))["designs"][0]
c, s = d["cost_usd"], d["support"]
parts = c["gpus"] + c["servers"] + c["network"] + c["storage"] + c["support_network"] + c["management"]
ok = abs(parts - c["capex"]) < 1 and c["storage"] > 0 and s["storage"]["appliances"] >= 1
ok = ok and s["out_of_band"]["switches"] > 0 and s["management_servers"] >= 5 and s["ufm_appliances"] == 2
every = d["training"][0]["checkpoint"]["interval_s"]
print("bill %s, checkpoint every %.0f s" % ("whole" if ok else "short", every))' "$TMP/405b.json"
}
check "support in the bill" 0 "^bill whole, checkpoint every [3-9][0-9][0-9] s" -- support_bill
check "lab example (trace share)" 0 "90th percentile" -- "$SHOAL" plan "$EX/research-lab.toml" --all
check "gpus" 0 "GB200-186GB" -- "$SHOAL" plan gpus
check "models" 0 "llama3-405b" -- "$SHOAL" plan models

# A planned cluster runs the ITP trace in the simulator.
check "cluster file" 0 "cluster file" -- "$SHOAL" plan --model llama3-8b --tokens 1T --gpus 64 --gpu H100 --cluster-out "$TMP/planned.toml"
check "cluster file content" 0 'profile = "dgx-h100"' -- cat "$TMP/planned.toml"
check "sim on planned cluster" 0 "JCT mean" -- "$SHOAL" sim --cluster "$TMP/planned.toml" --trace "$TRACE" --policy fifo --max-jobs 300 --no-progress
check "design choice" 0 "cluster file" -- "$SHOAL" plan --model llama3-8b --tokens 1T --gpus 64 --gpu H100,MI300X --design MI300X --cluster-out "$TMP/mi300x.toml"
check "described nodes" 0 'gpu_model = "MI300X-192GB"' -- cat "$TMP/mi300x.toml"
check "sim on described nodes" 0 "JCT mean" -- "$SHOAL" sim --cluster "$TMP/mi300x.toml" --trace "$TRACE" --policy backfill --max-jobs 200 --no-progress

# Workloads that cannot be met say what binds and give no design.
check "budget binds" 1 "the budget is" -- "$SHOAL" plan "$EX/impossible.toml"
check "fits nowhere" 1 "does not fit" -- "$SHOAL" plan --model llama3-405b --serve-tokens-per-s 1000 --gpu L4
check "deadline unreachable" 1 "out of reach" -- "$SHOAL" plan --model llama3-70b --tokens 15T --days 2 --gpu H100
check "air only" 1 "liquid" -- "$SHOAL" plan --model llama3-8b --tokens 1T --gpus 64 --gpu GB200 --cooling air

# Bad usage and bad files.
check "no workload" 2 "workload file or workload flags" -- "$SHOAL" plan
check "unknown flag" 2 "shoal plan" -- "$SHOAL" plan --model llama3-8b --frobnicate
check "unknown gpu" 2 "unknown GPU 'H900'" -- "$SHOAL" plan --model llama3-8b --tokens 1T --days 10 --gpu H900
check "unknown model" 2 "unknown model" -- "$SHOAL" plan --model gpt-9 --tokens 1T --days 10
check "a near miss of a model" 2 "unknown model 'llama3-70x' (did you mean 'llama3-70b'?)" -- "$SHOAL" plan --model llama3-70x --tokens 1T --days 10
check "a near miss of a GPU" 2 "unknown GPU 'h101' (did you mean 'h100'?)" -- "$SHOAL" plan --model llama3-8b --tokens 1T --days 10 --gpu h101
check "a negative deadline" 2 "days -5: a deadline cannot be negative" -- "$SHOAL" plan --model llama3-8b --tokens 1T --days -5
check "a negative count" 2 "context -1: must not be negative" -- "$SHOAL" plan --model llama3-8b --serve-tokens-per-s 1k --context -1
# With --json a failed plan prints the API's error object on stdout, and
# still exits non-zero.
json_error() {  # the error object of `shoal plan ... --json`, as "exit CODE error: detail"
  "$SHOAL" plan "$@" --json 2> /dev/null > "$TMP/error.json"
  echo "exit $? $(python3 -c 'import json, sys; e = json.load(open(sys.argv[1])); print(e["error"] + ": " + e["detail"])' "$TMP/error.json")"
}
check "--json: a bad flag" 0 "^exit 2 invalid_argument: .*unknown model 'gpt-9'" -- json_error --model gpt-9 --tokens 1T --days 10
check "--json: a plan that cannot be met" 0 "^exit 1 unsatisfiable: cannot plan: no GPU model meets the workload" -- json_error --model llama3-70b --tokens 15T --days 2 --gpu H100
check "days and gpus" 2 "either days" -- "$SHOAL" plan --model llama3-8b --tokens 1T --days 10 --gpus 8
printf '[[training]]\nmodel = "llama3-8b"\ntokens = "1T"\ndays = 10\ndayz = 3\n' > "$TMP/bad.toml"
check "bad key" 1 "bad.toml:5: training\[1\]: unknown key 'dayz' (did you mean 'days'?)" -- "$SHOAL" plan "$TMP/bad.toml"
check "missing file" 1 "nope.toml" -- "$SHOAL" plan "$TMP/nope.toml"

# The model against published runs, with the data shipped in data/, found
# from any directory: by default (the build tree's source data/), through
# $SHOAL_DATA_DIR, and through --data (which wins).
cd "$TMP"
check "validate" 0 "worst row" -- "$SHOAL" plan validate
check "validate json" 0 '"targets_met"' -- "$SHOAL" plan validate --json
check "validate --data" 0 "worst row" -- "$SHOAL" plan validate --data "$ROOT/data"
check "validate \$SHOAL_DATA_DIR" 0 "worst row" -- env SHOAL_DATA_DIR="$ROOT/data" "$SHOAL" plan validate
check "validate without data" 1 "give --data" -- "$SHOAL" plan validate --data "$TMP/none"
check "validate bad \$SHOAL_DATA_DIR" 1 "$TMP/none/compiled" -- env SHOAL_DATA_DIR="$TMP/none" "$SHOAL" plan validate
check "version names the data" 0 "data: $ROOT/data (source tree)" -- "$SHOAL" version

# Which GPU mix serves a workload best, asked of the simulator: the first 300
# jobs of Gavel's Philly trace on every mix of 48 GPUs in nodes of 8 (28
# mixes), and on what a budget buys (illustrative prices, a unit an hour).
MIX="plan mix --trace gavel-philly-msr/seed=0/ --max-jobs 300 --models V100,P100,K80"
check "mix: a fixed number of GPUs" 0 "^best: V100 [0-9]*, P100 [0-9]*, K80 [0-9]* (mean JCT" -- "$SHOAL" $MIX --gpus 48
mix_json() {  # checks the JSON: every mix, ranked by mean JCT, within its limits
  "$SHOAL" $MIX "$@" --json > "$TMP/mix.json" && python3 - "$TMP/mix.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
mixes = r["mixes"]
jct = [m["jct_mean_s"] for m in mixes]
assert jct == sorted(jct), "not ranked by mean JCT"
for m in mixes:
    total = sum(m["gpus"].values())
    assert total > 0 and all(g % 8 == 0 for g in m["gpus"].values()), m
    if "gpus" in r:
        assert total == r["gpus"], m
    else:
        assert m["cost"] <= r["budget"] + 1e-9, m
print(f"{len(mixes)} mixes, ranked")
PY
}
check "mix: 28 mixes of 48 GPUs, ranked" 0 "^28 mixes, ranked$" -- mix_json --gpus 48
check "mix: within a budget" 0 "mixes, ranked$" -- mix_json --price V100=3.06,P100=1.46,K80=0.90 --budget 60
check "mix: a budget needs prices" 2 "a budget needs a price for every model; K80 has none" -- "$SHOAL" $MIX --price V100=3,P100=1 --budget 60
check "mix: a model the trace lacks" 2 "the trace has no run times on H100 (it has K80, P100, V100)" -- "$SHOAL" plan mix --trace gavel-philly-msr/seed=0/ --max-jobs 300 --models V100,H100 --gpus 16
check "mix: too fine a step" 2 "choose a coarser step" -- "$SHOAL" $MIX --gpus 4000 --step 8
check "mix: a bad price" 2 "--price: 'V100=-1' is not MODEL=PRICE" -- "$SHOAL" $MIX --price V100=-1 --budget 60
exit $fail
