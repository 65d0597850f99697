#!/usr/bin/env bash
# Builds and runs the fuzz targets, each for a bounded time.
#
#   fuzz/run.sh [SECONDS] [TARGET...]   (default 60 seconds; submit and jobspec)
#
# New inputs go to a scratch corpus under the build folder, so the seed
# corpora in fuzz/corpus/<target> stay as committed; a crash leaves its input
# in build/fuzz/crashes/ and makes this script fail.
set -euo pipefail

seconds=${1:-60}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || (( seconds < 1 )); then
  echo "usage: fuzz/run.sh [SECONDS] [TARGET...]" >&2
  exit 2
fi
shift || true
targets=("$@")
(( ${#targets[@]} > 0 )) || targets=(submit jobspec)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${SHOAL_FUZZ_BUILD:-$root/build/fuzz}
export SHOAL_FUZZ_BUILD=$out

# halt_on_error and abort_on_error make a finding stop the run with a
# non-zero status; detect_leaks stays on (a parser has no reason to leak).
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

for target in "${targets[@]}"; do
  binary=$("$root/fuzz/build.sh" "$target" | tail -n 1)
  mkdir -p "$out/corpus/$target" "$out/crashes"
  dict=()
  [[ -f "$root/fuzz/$target.dict" ]] && dict=(-dict="$root/fuzz/$target.dict")
  echo "fuzzing $target for ${seconds}s"
  "$binary" \
    -max_total_time="$seconds" \
    -max_len=16384 \
    -timeout=10 \
    -rss_limit_mb=2048 \
    -print_final_stats=1 \
    "${dict[@]}" \
    -artifact_prefix="$out/crashes/$target-" \
    "$out/corpus/$target" "$root/fuzz/corpus/$target"
done
