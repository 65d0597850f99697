#!/usr/bin/env bash
# Builds Shoal with its CUDA node tests on a host with NVIDIA GPUs, runs the
# whole node test (`shoal bench node`: GEMM, HBM, host<->GPU, P2P, NCCL,
# burn-in; under 5 minutes on an 8-GPU H200 node) and writes into OUTDIR:
#
#   report.txt            the report as printed (tables, failures, notes)
#   report.json           the report as JSON, raw results included
#                         (`shoal bench report OUTDIR/report.json` judges it again)
#   nvidia-smi.txt        nvidia-smi, nvidia-smi -q and the topology matrix, before the run
#   gpu-samples.csv       clocks, power, temperature, clock-event reasons and ECC
#                         every second during the run (until Shoal's NVML hook is wired)
#   xid.txt               NVRM XID lines from the kernel log after the run (when readable)
#   build.log, run.log    the build, and the node test's progress lines
#   summary.txt           timings and the exit status
#
# Usage: scripts/bench-gpu-host.sh OUTDIR [shoal bench node options, e.g. --quick]
# Environment: CUDA_HOME (default /usr/local/cuda), SHOAL_BUILD_DIR (default
# build/bench-gpu), SHOAL_CUDA_ARCHS (default: the first GPU's, e.g. 90).
# Exit status: that of `shoal bench node` (0 pass, 1 fail, 2 usage), or 3 when
# the host or the build is not ready.
set -euo pipefail

if [[ $# -lt 1 || "$1" == -* ]]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
shift
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${SHOAL_BUILD_DIR:-$REPO/build/bench-gpu}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export PATH="$CUDA_HOME/bin:$PATH"

log() { printf '[bench-gpu-host] %s\n' "$*" | tee -a "$OUT/summary.txt" >&2; }
die() { log "error: $*"; exit 3; }
: > "$OUT/summary.txt"

command -v nvidia-smi > /dev/null || die "nvidia-smi not found: is the NVIDIA driver installed?"
[[ -x "$CUDA_HOME/bin/nvcc" ]] || die "no nvcc at $CUDA_HOME/bin/nvcc (set CUDA_HOME)"
timeout 60 nvidia-smi -L > /dev/null || die "nvidia-smi sees no GPU"

{
  timeout 60 nvidia-smi || true
  echo
  timeout 60 nvidia-smi topo -m || true
  echo
  timeout 120 nvidia-smi -q || true
} > "$OUT/nvidia-smi.txt" 2>&1
log "GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd ';' -)"

# Machine code for this host's GPUs only: a build for every architecture
# would take several times longer.
ARCHS=${SHOAL_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')}
[[ "$ARCHS" =~ ^[0-9]+$ ]] || ARCHS="80;90"

LAUNCHER=()
command -v ccache > /dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
configure() {
  cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DSHOAL_BUILD_TESTS=OFF -DSHOAL_BUILD_PERF=OFF \
    -DCMAKE_CUDA_COMPILER="$CUDA_HOME/bin/nvcc" -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" "${LAUNCHER[@]}"
}
build_start=$(date +%s)
if ! configure >> "$OUT/build.log" 2>&1; then
  # Most often the Debian packages Shoal builds with are missing.
  if command -v apt-get > /dev/null; then
    log "configure failed; installing build dependencies (scripts/install-deps.sh)"
    timeout 900 "$REPO/scripts/install-deps.sh" >> "$OUT/build.log" 2>&1 || die "installing dependencies failed (see build.log)"
    configure >> "$OUT/build.log" 2>&1 || die "configure failed (see $OUT/build.log)"
  else
    die "configure failed (see $OUT/build.log)"
  fi
fi
timeout 1800 cmake --build "$BUILD" --target shoal shoal-bench-node -j "$(nproc)" >> "$OUT/build.log" 2>&1 ||
  die "build failed (see $OUT/build.log)"
[[ -x "$BUILD/src/cli/shoal-bench-node" ]] || die "shoal-bench-node was not built (CUDA, cuBLASLt or NCCL not found; see build.log)"
log "built in $(( $(date +%s) - build_start )) s (CUDA architectures $ARCHS)"

# What NVML would tell Shoal's telemetry hook, sampled by nvidia-smi meanwhile.
REASONS=clocks_event_reasons.active
nvidia-smi --query-gpu="$REASONS" --format=csv,noheader > /dev/null 2>&1 || REASONS=clocks_throttle_reasons.active
nvidia-smi --query-gpu=timestamp,index,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu,"$REASONS",ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total \
  --format=csv -l 1 > "$OUT/gpu-samples.csv" 2>&1 &
sampler=$!
trap 'kill "$sampler" 2> /dev/null || true' EXIT

run_start=$(date +%s)
# The node test stops itself at 900 s unless told otherwise; the outer limit
# is a last resort.
args=("$@")
[[ " $* " == *" --timeout"* ]] || args+=(--timeout 900)
set +e
timeout 1800 "$BUILD/src/cli/shoal" bench node --out "$OUT/report.json" "${args[@]}" \
  > "$OUT/report.txt" 2> "$OUT/run.log"
status=$?
set -e
kill "$sampler" 2> /dev/null || true
log "node test ran $(( $(date +%s) - run_start )) s, exit status $status"

if dmesg > /dev/null 2>&1; then
  dmesg | grep -i 'NVRM: Xid' > "$OUT/xid.txt" || true
  [[ -s "$OUT/xid.txt" ]] && log "XID errors in the kernel log: $(wc -l < "$OUT/xid.txt") lines (see xid.txt)"
else
  echo "dmesg is not readable by this user" > "$OUT/xid.txt"
fi

cat "$OUT/report.txt"
[[ $status -eq 0 || $status -eq 1 ]] || tail -n 20 "$OUT/run.log" >&2
log "results in $OUT"
exit "$status"
