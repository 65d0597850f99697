#!/bin/sh
# Shoal's benchmarks: each prints its own figures. Usage: perf/run.sh [build-dir]
#  1. one scheduling pass over 10,000 nodes / 80,000 GPUs with 1k, 10k and 100k
#     pending jobs (target: <= 100 ms at 100k, growing no faster than linearly);
#  2. a 100,000-job trace on a 1,000-GPU cluster through `shoal sim`
#     (target: <= 10 s on one core), with the process's peak memory; then
#     the same trace on 768 GPUs, where under FIFO 5,000 jobs wait on
#     average (the deep-queue target is the same 10 s);
#  3. the controller: durable submissions/s, submit and queue latency and RSS
#     with 100,000 jobs (perf/server_bench.cc);
#  4. the agents: submit -> process started, jobs/s through 8 x 8 simulated
#     GPUs, agent memory and CPU (perf/agent_bench.cc);
#  5. the fleet: 1,000 and 5,000 simulated agents (8 GPUs each, in one
#     process) against one controller: registration, heartbeats/s and the
#     server's CPU per beat, submit latency meanwhile, lost-node detection,
#     GET /v1/nodes and /metrics, a restart (perf/fleet_bench.cc); and
#     1,000 of them over TLS.
set -eu
BUILD=${1:-build/release}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

# These machines are shared: each section says how loaded the machine was
# when it started (load averages over 1, 5 and 15 minutes, and the cores).
load() { echo "   (machine load $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"; }

echo "== scheduling pass"
load
"$BUILD/perf/sched_bench" 10000 3

echo
echo "== simulator: 100,000 jobs on 1,000 GPUs"
load
# The trace: Microsoft ITP cluster04 (15,802 jobs over 60 days, ~490 GPUs busy
# on average, shipped in data/traces), copied end to end with new ids until
# 100,000 jobs, arrivals compressed so the 1,000-GPU cluster runs at about
# 80 % (a queue builds in bursts).
SRC="$ROOT/data/traces/microsoft-itp-2021/raw/cluster04.csv"
COMPRESS=0.6
TRACE=$(mktemp /tmp/shoal-bench-XXXXXX.csv)
trap 'rm -f "$TRACE"' EXIT
awk -F, -v n=100000 -v c="$COMPRESS" '
  NR == 1 { header = $0; next }
  { id[++rows] = $1; t[rows] = $2; d[rows] = $3; g[rows] = $4; if ($2 > span) span = $2 }
  END {
    print header
    for (k = 0; out < n; k++)
      for (i = 1; i <= rows && out < n; i++) {
        printf "%s-%d,%d,%d,%d\n", id[i], k, int((t[i] + k * (span + 1)) * c), d[i], g[i]
        out++
      }
  }' "$SRC" > "$TRACE"
# One line per policy: `sim_bench NODES POLICY...` replays the trace on NODES
# dgx-a100 nodes (8 GPUs each); the simulator is single-threaded, so its wall
# time is its CPU time on an idle core.
sim_bench() {
  nodes=$1
  shift
  for policy in "$@"; do
    "$BUILD/src/cli/shoal" sim --nodes "$nodes" --profile dgx-a100 --trace "$TRACE" \
      --policy "$policy" --no-progress > /tmp/shoal-bench-out.txt
    awk -v p="$policy" '
      /^jobs completed/ { jobs = $3 }
      /^GPU utilisation +[0-9]/ { util = $3 }
      /^jobs waiting mean/ { waiting = $6 }
      /^scheduling passes/ { passes = $3 }
      /^wall time/ { wall = $3 }
      /of which scheduling/ { sched = $4 }
      /^peak memory/ { mem = $4 " " $5 }
      END { printf "%-12s jobs %s  utilisation %s  waiting %s  passes %s  wall %s (scheduling %s)  peak memory %s\n", p, jobs, util, waiting, passes, wall, sched, mem }
    ' /tmp/shoal-bench-out.txt
  done
}
sim_bench 125 fifo backfill multifactor las gittins oracle

echo
echo "== simulator, deep queue: the same 100,000 jobs on 96 nodes (768 GPUs)"
echo "   (thousands wait; target: <= 10 s of CPU for every policy but the oracle)"
load
sim_bench 96 fifo backfill multifactor las gittins
rm -f /tmp/shoal-bench-out.txt

echo
echo "== controller: durable submissions, latencies and memory with 100,000 jobs"
load
"$BUILD/perf/server_bench" --shoal "$BUILD/src/cli/shoal" --jobs 100000

echo
echo "== agents: submit -> start latency, 2,000 trivial jobs on 8 x 8 simulated GPUs, agent RSS/CPU"
load
"$BUILD/perf/agent_bench" --shoal "$BUILD/src/cli/shoal" --nodes 8 --jobs 2000

echo
echo "== fleet: N simulated agents against one controller"
load
"$BUILD/perf/fleet_bench" --shoal "$BUILD/src/cli/shoal" --nodes 1000,5000 --heartbeat-seconds 10
echo "-- the same over TLS (every node with its certificate, a kept connection each)"
load
"$BUILD/perf/fleet_bench" --shoal "$BUILD/src/cli/shoal" --nodes 1000 --heartbeat-seconds 10 --tls
