#!/usr/bin/env bash
# Compares what Shoal's agent reads through NVML with what nvidia-smi reports,
# on a host with NVIDIA GPUs, and prints a table of matches and mismatches.
#
# Usage: scripts/nvml-compare.sh [SHOAL]
#   SHOAL  the shoal program (default: $SHOAL, else build/release/src/cli/shoal,
#          else shoal on PATH); its `agent --print-gpus --csv` is compared.
# Environment: NVIDIA_SMI (default nvidia-smi), SHOAL_NVML_LIBRARY (passed as
# --nvml-library).
# Exit status: 0 all fields agree, 1 a mismatch, 2 a tool is missing or fails.
#
# Both programs read the same driver a moment apart, so live readings are
# compared with tolerances (set below, with their reasons); names, UUIDs and
# the GPU count must agree exactly. nvidia-smi's "[N/A]" / "[Not Supported]"
# fields are skipped.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PROBE=${1:-${SHOAL:-}}
if [[ -z "$PROBE" ]]; then
  if [[ -x "$REPO/build/release/src/cli/shoal" ]]; then
    PROBE="$REPO/build/release/src/cli/shoal"
  else
    PROBE=$(command -v shoal || true)
  fi
fi
SMI=${NVIDIA_SMI:-nvidia-smi}
if [[ -z "$PROBE" || ! -x "$PROBE" ]]; then
  echo "nvml-compare: no shoal program (build it, or pass its path)" >&2
  exit 2
fi
if ! command -v "$SMI" >/dev/null; then
  echo "nvml-compare: no $SMI on this host" >&2
  exit 2
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
probe_args=(agent --gpus nvml --print-gpus --csv)
[[ -n "${SHOAL_NVML_LIBRARY:-}" ]] && probe_args+=(--nvml-library "$SHOAL_NVML_LIBRARY")
# The same fields, in the same order, as `shoal agent --print-gpus --csv`.
FIELDS=index,uuid,name,memory.total,utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm
if ! "$PROBE" "${probe_args[@]}" >"$TMP/shoal.csv" 2>"$TMP/shoal.err"; then
  echo "nvml-compare: $PROBE failed: $(cat "$TMP/shoal.err")" >&2
  exit 2
fi
if ! "$SMI" --query-gpu="$FIELDS" --format=csv,noheader,nounits >"$TMP/smi.csv" 2>"$TMP/smi.err"; then
  echo "nvml-compare: $SMI failed: $(cat "$TMP/smi.err" "$TMP/smi.csv")" >&2
  exit 2
fi

# Tolerances: absolute, or relative to the larger reading, whichever is wider.
#  memory.total   1 %: drivers differ in whether reserved memory counts.
#  util           15 points: each tool reads its own instant of a busy GPU.
#  memory.used    2 GiB or 5 %: nvidia-smi (R510 on) leaves out the driver's
#                 reserved memory, which nvmlDeviceGetMemoryInfo (v1) counts
#                 as used; allocations may also come and go in between.
#  power          15 W or 10 %: an instant versus a one-second average.
#  temperature    3 degC.
#  clocks.sm      150 MHz or 10 %: clocks step up and down with work.
awk -F', *' -v shoal="$TMP/shoal.csv" '
function abs(x) { return x < 0 ? -x : x }
function max(a, b) { return a > b ? a : b }
function row(gpu, field, smi, ours, tol, verdict) {
  printf "%-4s %-14s %-42s %-42s %-10s %s\n", gpu, field, smi, ours, tol, verdict
}
# One field: exact when abs_tol < 0, else numeric with tolerance.
function check(gpu, field, smi, ours, abs_tol, rel_tol,   tol) {
  if (smi ~ /N\/A|Not Supported|Unknown/) { row(gpu, field, smi, ours, "-", "skip"); skipped++; return }
  if (abs_tol < 0) {
    if (smi == ours) { row(gpu, field, smi, ours, "exact", "ok"); ok++ }
    else { row(gpu, field, smi, ours, "exact", "MISMATCH"); bad++ }
    return
  }
  tol = max(abs_tol, rel_tol * max(abs(smi + 0), abs(ours + 0)))
  if (abs(smi - ours) <= tol) { row(gpu, field, smi, ours, sprintf("%.0f", tol), "ok"); ok++ }
  else { row(gpu, field, smi, ours, sprintf("%.0f", tol), "MISMATCH"); bad++ }
}
BEGIN {
  while ((getline line < shoal) > 0) { n_ours++; split(line, f, ", *"); for (i = 1; i <= 9; i++) ours[f[1], i] = f[i] }
  row("gpu", "field", "nvidia-smi", "shoal (NVML)", "tolerance", "")
}
{
  n_smi++
  g = $1
  if (!((g, 1) in ours)) { row(g, "gpu", "present", "missing", "exact", "MISMATCH"); bad++; next }
  check(g, "uuid", $2, ours[g, 2], -1, 0)
  check(g, "name", $3, ours[g, 3], -1, 0)
  check(g, "memory.total", $4, ours[g, 4], 0, 0.01)
  check(g, "utilization", $5, ours[g, 5], 15, 0)
  check(g, "memory.used", $6, ours[g, 6], 2048, 0.05)
  check(g, "power.draw", $7, ours[g, 7], 15, 0.10)
  check(g, "temperature", $8, ours[g, 8], 3, 0)
  check(g, "clocks.sm", $9, ours[g, 9], 150, 0.10)
}
END {
  if (n_smi != n_ours) { row("all", "gpu count", n_smi + 0, n_ours + 0, "exact", "MISMATCH"); bad++ }
  printf "\n%d agree, %d differ, %d skipped\n", ok, bad, skipped
  exit (bad > 0 ? 1 : 0)
}' "$TMP/smi.csv"
