#!/usr/bin/env bash
# Builds and runs the submit fuzzer for a bounded time.
#
#   fuzz/run.sh [SECONDS]   (default 60)
#
# New inputs go to a scratch corpus under the build folder, so the seed
# corpus in fuzz/corpus/submit stays as committed; a crash leaves its input
# in build/fuzz/crashes/ and makes this script fail.
set -euo pipefail

seconds=${1:-60}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || (( seconds < 1 )); then
  echo "usage: fuzz/run.sh [SECONDS]" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${SHOAL_FUZZ_BUILD:-$root/build/fuzz}
export SHOAL_FUZZ_BUILD=$out

binary=$("$root/fuzz/build.sh" | tail -n 1)
mkdir -p "$out/corpus/submit" "$out/crashes"

# halt_on_error and abort_on_error make a finding stop the run with a
# non-zero status; detect_leaks stays on (a parser has no reason to leak).
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

exec "$binary" \
  -max_total_time="$seconds" \
  -max_len=16384 \
  -timeout=10 \
  -rss_limit_mb=2048 \
  -print_final_stats=1 \
  -dict="$root/fuzz/submit.dict" \
  -artifact_prefix="$out/crashes/" \
  "$out/corpus/submit" "$root/fuzz/corpus/submit"
