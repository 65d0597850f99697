#!/bin/sh
# Throughput lost against power saved (docs/power.md): Microsoft ITP traces
# replayed on DGX A100 clusters under a site power budget of 100 %, 90 % and
# 80 % of the cluster's peak draw (every GPU at its 400 W rating, idle GPUs
# at 10 %), and without one, for fifo, backfill and gittins. Prints a
# Markdown table: mean and p99 JCT, jobs per hour over the makespan, GPU
# utilisation, the expected draw (mean and highest sample) and the energy,
# and the simulator's wall time.
#
#   perf/sim-power-budget.sh [build-dir]
set -eu
BUILD=${1:-build/release}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "machine load $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
# cluster02 on 128 GPUs and cluster04 on 640 GPUs, the sizes docs/sim.md uses.
for run in "cluster02 16" "cluster04 80"; do
  set -- $run
  for budget in none 100% 90% 80%; do
    flag=""
    [ "$budget" = none ] || flag="--power-budget $budget"
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$BUILD/src/cli/shoal" sim --nodes "$2" --profile dgx-a100 \
      --trace "data/traces/microsoft-itp-2021/raw/$1.csv" --policy fifo,backfill,gittins $flag \
      --json > "$TMP/$1-$budget.json"
    awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }' > "$TMP/$1-$budget.wall"
  done
done
python3 - "$TMP" <<'PY'
import json, sys
tmp = sys.argv[1]
print("| trace (GPUs) | budget | policy | mean JCT (h) | p99 JCT (h) | jobs/h | GPU util. | draw mean / highest (kW) | energy (MWh) | sim wall (s) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for trace, gpus in (("cluster02", 128), ("cluster04", 640)):
    for budget in ("none", "100%", "90%", "80%"):
        d = json.load(open(f"{tmp}/{trace}-{budget}.json"))
        wall = float(open(f"{tmp}/{trace}-{budget}.wall").read())
        for p in d["policies"]:
            rate = p["completed"] / (p["makespan_s"] / 3600)
            print(f"| {trace} ({gpus}) | {budget} | {p['policy']} | {p['jct_s']['mean'] / 3600:.2f} | "
                  f"{p['jct_s']['p99'] / 3600:.1f} | {rate:.2f} | {100 * p['utilisation']:.1f} % | "
                  f"{p['power_mean_kw']:.1f} / {p['power_max_kw']:.1f} of {p['power_peak_kw']:.1f} | "
                  f"{p['energy_mwh']:.1f} | {wall:.1f} (3 policies) |")
PY
