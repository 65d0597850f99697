#!/bin/sh
# Shoal beside Slurm on this machine, in one run: the same work through each,
# one after the other, so that only the ratios are compared (the machine is
# shared and its load is printed beside each figure).
#
#   perf/vs-slurm.sh [build-dir]   (SUBMITS=500 JOBS=2000 NODES=8 IDLE_SECONDS=30 by default)
#
# Slurm is used when it answers here (`scontrol ping` says UP: a local Slurm
# with 8 nodes x 8 GPUs, as a development checkout's ../shared/slurm-reference
# starts); else Shoal runs alone and the Slurm columns say so. Shoal runs as
# `shoal up --nodes $NODES --profile dgx-h100` (8 simulated GPUs a node) in a
# temporary state folder, plain HTTP and then TLS for the sequential submits.
#
# Figures:
#  1. sequential submits, a new process each (`sbatch` / `shoal submit`, one
#     GPU, `--wrap true`, output to /dev/null): calls/s and CPU per call
#     (the calling processes' own user+system time);
#  2. end to end: a $JOBS-task array of one-GPU `true` jobs, from the submit
#     to an empty queue: jobs/s, and the CPU the whole machine spent per job
#     (all processes: daemons, job processes, the polling), and for Shoal the
#     CPU of its own processes (server, agents, supervisors, jobs) per job;
#  3. idle: the CPU each cluster's daemons use over $IDLE_SECONDS (30) s;
#  4. the floor: what `fork`+`exec` of `/bin/true` costs on this machine.
# Beside each sequential `shoal submit`, curl sends the same POST (when curl
# is installed), for the cost of a client process that does nothing else.
# Everything it starts it stops, by PID; every wait is bounded.
set -eu
BUILD=${1:-build/release}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SHOAL="$ROOT/$BUILD/src/cli/shoal"
SUBMITS=${SUBMITS:-500}
JOBS=${JOBS:-2000}
NODES=${NODES:-8}
IDLE_SECONDS=${IDLE_SECONDS:-30}
[ -x "$SHOAL" ] || { echo "vs-slurm: $SHOAL not built (make build)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "vs-slurm: needs python3" >&2; exit 2; }

TMP=$(mktemp -d /tmp/shoal-vs-slurm-XXXXXX)
UP_PID=""
cleanup() {
  if [ -n "$UP_PID" ] && kill -0 "$UP_PID" 2>/dev/null; then
    kill -INT "$UP_PID"
    wait "$UP_PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

load() { echo "   (machine load $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"; }

# measure OUT -- COMMAND...: runs COMMAND and writes "wall_s children_cpu_s
# machine_busy_s" to OUT (CPU of the command and everything it waited for;
# busy time of every core from /proc/stat).
cat > "$TMP/measure.py" <<'EOF'
import os, resource, subprocess, sys, time

def busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")

out, cmd = sys.argv[1], sys.argv[3:]
r0, b0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), busy(), time.monotonic()
rc = subprocess.run(cmd, stdin=subprocess.DEVNULL).returncode
t1, b1, r1 = time.monotonic(), busy(), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
with open(out, "w") as f:
    f.write(f"{t1 - t0:.3f} {cpu:.3f} {b1 - b0:.3f}\n")
sys.exit(rc)
EOF
measure() { python3 "$TMP/measure.py" "$@"; }

# tree_cpu PID: CPU seconds of PID and every process under it, with what
# they have reaped (utime + stime + cutime + cstime).
cat > "$TMP/tree_cpu.py" <<'EOF'
import os, sys
kids, cpu = {}, {}
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        with open(f"/proc/{p}/stat") as f:
            s = f.read()
    except OSError:
        continue
    v = s[s.rindex(")") + 2:].split()
    kids.setdefault(int(v[1]), []).append(int(p))
    cpu[int(p)] = sum(int(x) for x in v[11:15])
total, todo = 0, [int(sys.argv[1])]
while todo:
    p = todo.pop()
    total += cpu.get(p, 0)
    todo += kids.get(p, [])
print(f"{total / os.sysconf('SC_CLK_TCK'):.3f}")
EOF
tree_cpu() { python3 "$TMP/tree_cpu.py" "$1"; }

# wait_empty LISTER TIMEOUT_S: polls every 0.2 s until LISTER prints nothing.
wait_empty() {
  end=$(( $(date +%s) + $2 ))
  while [ -n "$($1)" ]; do
    [ "$(date +%s)" -lt "$end" ] || { echo "vs-slurm: the queue did not empty in $2 s" >&2; exit 1; }
    sleep 0.2
  done
}
slurm_queue() { squeue -h -o %i 2>/dev/null; }
shoal_queue() { "$SHOAL" queue --noheader 2>/dev/null; }

# rate FILE N: N per second of its wall time; cpu_each FILE N COLUMN: ms of
# that CPU column (2: the calls' own, 3: the machine's) for each of N.
# ratio A B COLUMN: A's figure in COLUMN over B's (for column 1, wall time,
# that is B's rate over A's when both did the same count).
ratio() { awk -v c="$3" 'NR == FNR { a = $c; next } { printf "%.2f", a / $c }' "$1" "$2"; }
rate() { awk -v n="$2" '{ printf "%.1f", n / $1 }' "$1"; }
cpu_each() { awk -v n="$2" -v col="$3" '{ printf "%.2f", $col * 1000 / n }' "$1"; }

SLURM=no
if command -v sbatch >/dev/null 2>&1 && scontrol ping 2>/dev/null | grep -q UP; then
  SLURM=yes
  echo "Slurm: $(sbatch --version), $(sinfo -h -o %D | head -1) nodes"
else
  echo "Slurm: not running here (no 'scontrol ping' UP); Shoal alone"
fi

# A Shoal cluster on loopback; SHOAL_STATE_DIR leads the CLI to it.
start_shoal() {  # start_shoal [--tls]
  rm -rf "$TMP/up"
  "$SHOAL" up --nodes "$NODES" --profile dgx-h100 --state-dir "$TMP/up" \
    --listen 127.0.0.1:0 "$@" > "$TMP/up.log" 2>&1 &
  UP_PID=$!
  i=0
  until grep -q "^Shoal is up" "$TMP/up.log"; do
    i=$((i + 1))
    [ $i -lt 300 ] && kill -0 "$UP_PID" 2>/dev/null || { cat "$TMP/up.log" >&2; exit 1; }
    sleep 0.1
  done
  export SHOAL_STATE_DIR="$TMP/up"
  SHOAL_SERVER=$(grep -o 'https*://127\.0\.0\.1:[0-9]*' "$TMP/up.log" | head -1)
  export SHOAL_SERVER
}
stop_shoal() {
  kill -INT "$UP_PID"
  wait "$UP_PID" 2>/dev/null || true
  UP_PID=""
  # Its running steps' folder (on a tmpfs) stays while stopped steps are in it.
  steps=$(sed -n 's/^running job steps in //p' "$TMP/up.log")
  if [ -n "$steps" ]; then rm -rf "$steps"; fi
}

# 1. sequential submits ---------------------------------------------------
seq_submits() {  # seq_submits OUT PROGRAM ARGS...: $SUBMITS calls in a row
  out=$1; shift
  prog=$1; shift
  measure "$out" -- sh -c "i=0; while [ \$i -lt $SUBMITS ]; do \"\$0\" \"\$@\" >/dev/null || exit 1; i=\$((i+1)); done" \
    "$prog" "$@"
}

echo
echo "== $SUBMITS sequential submits, a new process each"
load
printf '%-26s %10s %14s\n' "" "calls/s" "CPU per call"
if [ $SLURM = yes ]; then
  seq_submits "$TMP/sbatch" sbatch --gres=gpu:1 -o /dev/null --wrap true
  printf '%-26s %10s %11s ms\n' "sbatch" "$(rate "$TMP/sbatch" "$SUBMITS")" "$(cpu_each "$TMP/sbatch" "$SUBMITS" 2)"
  wait_empty slurm_queue 600
fi
for mode in plain tls; do
  if [ $mode = tls ]; then start_shoal --tls; else start_shoal; fi
  seq_submits "$TMP/shoal-$mode" "$SHOAL" submit --gres=gpu:1 -o /dev/null --wrap true
  printf '%-26s %10s %11s ms\n' "shoal submit ($mode)" "$(rate "$TMP/shoal-$mode" "$SUBMITS")" \
    "$(cpu_each "$TMP/shoal-$mode" "$SUBMITS" 2)"
  # The same request by curl, a client that does nothing else, for scale.
  if command -v curl > /dev/null; then
    printf '{"command":"true","gpus":1,"stdout":"/dev/null","work_dir":"%s"}' "$TMP" > "$TMP/job.json"
    seq_submits "$TMP/curl-$mode" curl -sf -o /dev/null --cacert "$SHOAL_STATE_DIR/tls/ca.crt" \
      -H "Authorization: Bearer $(cat "$SHOAL_STATE_DIR/admin.token")" \
      -H "Content-Type: application/json" --data-binary @"$TMP/job.json" "$SHOAL_SERVER/v1/jobs"
    printf '%-26s %10s %11s ms\n' "curl, the same POST ($mode)" "$(rate "$TMP/curl-$mode" "$SUBMITS")" \
      "$(cpu_each "$TMP/curl-$mode" "$SUBMITS" 2)"
  fi
  wait_empty shoal_queue 600
  stop_shoal
done
if [ $SLURM = yes ]; then
  printf 'shoal submit (plain) / sbatch: %sx the rate (target >= 5x), %sx the CPU per call\n' \
    "$(ratio "$TMP/sbatch" "$TMP/shoal-plain" 1)" "$(ratio "$TMP/shoal-plain" "$TMP/sbatch" 2)"
fi

# 2. end to end -------------------------------------------------------------
echo
echo "== $JOBS one-GPU 'true' jobs end to end (one array), submit to an empty queue"
load
printf '%-10s %10s %26s %26s\n' "" "jobs/s" "machine CPU per job" "own processes' CPU per job"
if [ $SLURM = yes ]; then
  measure "$TMP/slurm-e2e" -- sh -c "sbatch --array=0-$((JOBS - 1)) --gres=gpu:1 -o /dev/null --wrap true >/dev/null && \
    until [ -z \"\$(squeue -h -o %i)\" ]; do sleep 0.2; done"
  printf '%-10s %10s %23s ms %26s\n' "slurm" "$(rate "$TMP/slurm-e2e" "$JOBS")" \
    "$(cpu_each "$TMP/slurm-e2e" "$JOBS" 3)" "(slurmstepd detaches)"
fi
start_shoal
before=$(tree_cpu "$UP_PID")
measure "$TMP/shoal-e2e" -- sh -c "\"\$0\" submit --array=0-$((JOBS - 1)) --gres=gpu:1 -o /dev/null --wrap true >/dev/null && \
  until [ -z \"\$(\"\$0\" queue --noheader)\" ]; do sleep 0.2; done" "$SHOAL"
after=$(tree_cpu "$UP_PID")
stop_shoal
own=$(awk -v a="$before" -v b="$after" -v n="$JOBS" 'BEGIN { printf "%.2f", (b - a) * 1000 / n }')
printf '%-10s %10s %23s ms %23s ms\n' "shoal" "$(rate "$TMP/shoal-e2e" "$JOBS")" \
  "$(cpu_each "$TMP/shoal-e2e" "$JOBS" 3)" "$own"
if [ $SLURM = yes ]; then
  printf 'shoal / slurm: %sx the jobs/s (target >= 12x), %sx the machine CPU per job\n' \
    "$(ratio "$TMP/slurm-e2e" "$TMP/shoal-e2e" 1)" "$(ratio "$TMP/shoal-e2e" "$TMP/slurm-e2e" 3)"
fi

# 3. idle --------------------------------------------------------------------
# Each cluster's own processes while nothing runs: slurmctld and the slurmd
# of each node; Shoal's server and agents (one `shoal up` process) with the
# agents' step launchers.
echo
echo "== idle: each cluster's daemons over $IDLE_SECONDS s, no jobs"
load
pids_named() { for f in /proc/[0-9]*/comm; do [ "$(cat "$f" 2>/dev/null)" = "$1" ] && basename "$(dirname "$f")"; done; }
cpu_of() { s=0; for p in "$@"; do s=$(awk -v s="$s" -v p="$(tree_cpu "$p")" 'BEGIN { print s + p }'); done; echo "$s"; }
if [ $SLURM = yes ]; then
  slurm_pids=$(echo $(pids_named slurmctld) $(pids_named slurmd))
  a=$(cpu_of $slurm_pids); sleep "$IDLE_SECONDS"; b=$(cpu_of $slurm_pids)
  printf 'slurm (slurmctld + %s slurmd):      %.2f %% of a core\n' "$(pids_named slurmd | wc -l)" \
    "$(awk -v a="$a" -v b="$b" -v t="$IDLE_SECONDS" 'BEGIN { print (b - a) * 100 / t }')"
fi
start_shoal
sleep 2  # registered, first telemetry in
a=$(tree_cpu "$UP_PID"); sleep "$IDLE_SECONDS"; b=$(tree_cpu "$UP_PID")
stop_shoal
printf 'shoal (server + %s agents, 1 s telemetry): %.2f %% of a core\n' "$NODES" \
  "$(awk -v a="$a" -v b="$b" -v t="$IDLE_SECONDS" 'BEGIN { print (b - a) * 100 / t }')"

# 4. the floor ----------------------------------------------------------------
echo
echo "== the floor: fork + exec of /bin/true, $JOBS times in a row"
load
measure "$TMP/floor" -- sh -c "i=0; while [ \$i -lt $JOBS ]; do /bin/true; i=\$((i+1)); done"
printf 'fork+exec of /bin/true: %s ms of CPU each (%s/s)\n' "$(cpu_each "$TMP/floor" "$JOBS" 2)" \
  "$(rate "$TMP/floor" "$JOBS")"
