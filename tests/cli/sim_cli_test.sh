#!/bin/sh
# `shoal sim` as a user runs it: outputs, exit codes (0 ok, 1 failure, 2 bad
# usage) and error messages that name the file and line.
set -u
SHOAL=$(realpath "$1")
ROOT=$(realpath "$2")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/lib.sh"
TRACE="$ROOT/data/traces/microsoft-itp-2021/raw/cluster01.csv"
CLUSTER="$ROOT/examples/clusters/itp-16x8-a100.toml"

check "table" 0 "JCT mean" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --policy fifo,las --max-jobs 300
check "json" 0 '"policies"' -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --policy backfill --max-jobs 300 --json
check "csv" 0 "^policy,jobs" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --policy backfill --max-jobs 300 --csv
check "series" 0 "policy" -- "$SHOAL" sim --nodes 16 --trace "$TRACE" --policy fifo --max-jobs 100 --series "$TMP/s.csv"
check "series file" 0 "allocated_gpus" -- cat "$TMP/s.csv"
# A power budget of 60 % of the cluster's peak draw: the expected draw never
# crosses it, and the report says what was drawn.
check "power budget" 0 "power mean / highest" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --policy backfill --max-jobs 300 --power-budget 60%
check "power budget held" 0 "^ok$" -- sh -c "'$SHOAL' sim --cluster '$CLUSTER' --trace '$TRACE' --policy backfill --max-jobs 300 --power-budget 60% --json | python3 -c 'import json,sys; p=json.load(sys.stdin)[\"policies\"][0]; assert 0 < p[\"power_max_kw\"] <= 0.6 * p[\"power_peak_kw\"] + 1e-9, p; print(\"ok\")'"
check "bad power budget" 2 "--power-budget" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --power-budget 120%
# MIG: GPU-sharing pods (Alibaba openb) on slices of half the nodes; refused without slices.
OPENB="$ROOT/data/traces/alibaba-gpu-v2023-openb/openb_pod_list_cpu050.csv"
printf '[[nodes]]\nprofile = "dgx-h100"\ncount = 5\nprefix = "whole-"\n[[nodes]]\nprofile = "dgx-h100"\ncount = 5\nprefix = "mig-"\nmig = "4g.40gb+3g.40gb"\n' > "$TMP/mig.toml"
check "--mig-shares puts sharing jobs on slices" 0 "on H100-SXM-80GB/4g.40gb" -- \
  "$SHOAL" sim --cluster "$TMP/mig.toml" --trace "$OPENB" --policy backfill --max-jobs 500 --mig-shares --no-progress
check "--mig-shares needs slices" 2 "the cluster has no MIG slices" -- \
  "$SHOAL" sim --nodes 4 --trace "$OPENB" --max-jobs 100 --mig-shares
# Faults: the report counts them and what they cost; a bad spec and fill
# mode are refused.
check "faults" 0 "jobs requeued by faults" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --policy fifo,backfill --max-jobs 300 --faults node-fail=5%/day,gpu-xid=1%/day,checkpoint=30m --no-progress
check "faults json" 0 "^ok$" -- sh -c "'$SHOAL' sim --cluster '$CLUSTER' --trace '$TRACE' --policy backfill --max-jobs 300 --faults node-fail=20%/day,node-repair=2h --json | python3 -c 'import json,sys; p=json.load(sys.stdin)[\"policies\"][0]; f=p[\"faults\"]; assert f[\"node_failures\"] > 0 and f[\"lost_gpu_hours\"] > 0 and 0 < p[\"goodput\"] < 1, p; print(\"ok\")'"
check "bad faults" 2 "did you mean 'node-fail'" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --faults node-fial=1%
check "faults in fill mode" 2 "not to --mode fill" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --mode fill --faults node-fail=1%
check "list policies" 0 "oracle" -- "$SHOAL" sim --list-policies
check "help" 0 "--time-limits" -- "$SHOAL" sim --help
check "no command" 2 "usage" -- "$SHOAL"
check "unknown command" 2 "unknown command" -- "$SHOAL" frobnicate
check "unknown flag" 2 "shoal sim" -- "$SHOAL" sim --trace "$TRACE" --frobnicate
check "unknown policy" 2 "unknown policy" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --policy fast
check "bad limits" 2 "time-limit" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TRACE" --time-limits x0.5
check "missing trace" 1 "nope.csv" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TMP/nope.csv"
printf 'job_id,submission_time,duration,num_gpu\na,0,10,1\nb,5,ten,1\n' > "$TMP/bad.csv"
check "bad row" 1 "bad.csv:3" -- "$SHOAL" sim --cluster "$CLUSTER" --trace "$TMP/bad.csv"
printf 'name = "x"\n[[nodes]]\ncount = 2\nprofile = "dgx-h100"\ncolour = "red"\n' > "$TMP/bad.toml"
check "bad cluster key" 1 "colour" -- "$SHOAL" sim --cluster "$TMP/bad.toml" --trace "$TRACE"
check "job too big" 1 "can never run" -- "$SHOAL" sim --nodes 2 --trace "$TRACE"
check "no cluster" 2 "no nodes of its own" -- "$SHOAL" sim --trace "$TRACE"

# A shipped trace by its name in data/traces, from any directory; a trace that
# brings its own nodes (openb) needs no cluster; a Gavel cluster spec by name.
cd "$TMP"
check "shipped trace by name" 0 "JCT mean" -- "$SHOAL" sim --nodes 16 --trace microsoft-itp-2021/raw/cluster01.csv --policy fifo --max-jobs 100 --no-progress
check "repository path elsewhere" 0 "JCT mean" -- "$SHOAL" sim --nodes 16 --trace data/traces/microsoft-itp-2021/raw/cluster01.csv --policy fifo --max-jobs 100 --no-progress
check "shipped node list" 0 "JCT mean" -- "$SHOAL" sim --cluster alibaba-pai-v2020/pai_machine_spec.csv --trace microsoft-itp-2021/raw/cluster01.csv --policy fifo --max-jobs 100 --no-progress
check "shipped gavel folder" 0 "JCT mean" -- "$SHOAL" sim --cluster gavel-philly-msr/cluster_specs.json --trace gavel-philly-msr/seed=0/ --policy fifo --max-jobs 200 --no-progress
check "unknown name" 1 "no-such-trace.csv" -- "$SHOAL" sim --nodes 16 --trace no-such-trace.csv
exit $fail
