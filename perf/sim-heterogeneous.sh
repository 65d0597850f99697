#!/bin/sh
# Speed-aware against heterogeneity-agnostic policies on Gavel's Philly trace
# (15,264 jobs, data/traces/gavel-philly-msr/seed=0/) and Gavel's
# heterogeneous cluster (300 V100 + 300 P100 + 300 K80), simulator seeds 0-4:
# mean, median and p99 JCT, queueing and makespan per policy (the mean over
# the seeds, and the spread of the mean), then the ratio of the best
# speed-aware mean JCT to the best agnostic one, and the floor no policy can
# beat: every job on the model it runs fastest on, without waiting.
#
#   perf/sim-heterogeneous.sh [build-dir]   (SEEDS="0 1 2 3 4" by default)
set -eu
BUILD=${1:-build/release}
SEEDS=${SEEDS:-0 1 2 3 4}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
AGNOSTIC="fifo,backfill,multifactor,las,gittins,oracle"
AWARE="speed,speed-gittins,speed:speed-slack=0.1"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
echo "machine load $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
for seed in $SEEDS; do
  "$BUILD/src/cli/shoal" sim --trace gavel-philly-msr/seed=0/ \
    --cluster gavel-philly-msr/cluster_specs_heterogeneous.json \
    --policy "$AGNOSTIC,$AWARE" --seed "$seed" --json > "$TMP/seed$seed.json"
done
python3 - "$TMP" "$AWARE" data/gavel/throughputs.csv data/traces/gavel-philly-msr/seed=0 <<'EOF'
import csv, glob, json, os, statistics, sys
tmp, aware, throughputs, trace_dir = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4]
runs = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(tmp, "seed*.json")))]
names = [p["policy"] for p in runs[0]["policies"]]
h = lambda s: s / 3600
rows = {}
print(f"{'policy':<24}{'JCT mean':>10}{'(spread)':>10}{'median':>9}{'p99':>10}{'queue':>8}{'makespan':>11}")
for i, name in enumerate(names):
    ps = [r["policies"][i] for r in runs]
    means = [h(p["jct_s"]["mean"]) for p in ps]
    rows[name] = statistics.mean(means)
    print(f"{name:<24}{rows[name]:>9.2f}h{max(means) - min(means):>9.2f}h"
          f"{statistics.mean(h(p['jct_s']['median']) for p in ps):>8.2f}h"
          f"{statistics.mean(h(p['jct_s']['p99']) for p in ps):>9.1f}h"
          f"{statistics.mean(h(p['queueing_s']['mean']) for p in ps):>7.2f}h"
          f"{statistics.mean(h(p['makespan_s']) for p in ps):>10.0f}h")
best_aware = min((v, k) for k, v in rows.items() if k in aware)
best_agnostic = min((v, k) for k, v in rows.items() if k not in aware)
# The floor: each job alone on the model it runs fastest on (Gavel's
# throughputs; a count Gavel did not measure scales the one-GPU figure).
tp = {}
for r in csv.DictReader(open(throughputs)):
    tp[(r["job_type"], int(r["scale_factor"]))] = [float(r[m]) for m in ("v100", "p100", "k80")]
best = []
for f in glob.glob(os.path.join(trace_dir, "*.trace")):
    for line in open(f):
        job_type, _, _, _, steps, _, scale = line.rstrip("\n").split("\t")
        scale = int(scale)
        t = tp.get((job_type, scale)) or [x * scale for x in tp[(job_type, 1)]]
        best.append(min(float(steps) / x for x in t if x > 0) / 3600)
floor = statistics.mean(best)
print(f"\nbest speed-aware {best_aware[1]} {best_aware[0]:.2f}h / best agnostic "
      f"{best_agnostic[1]} {best_agnostic[0]:.2f}h = {best_aware[0] / best_agnostic[0]:.3f}")
print(f"floor (every job on its fastest model at once): {floor:.2f}h = "
      f"{floor / best_agnostic[0]:.3f} of the best agnostic")
EOF
