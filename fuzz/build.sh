#!/usr/bin/env bash
# Builds a fuzz target with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, against the sources it needs directly: the main
# build uses g++, which has no libFuzzer. Prints the binary's path.
#
#   fuzz/build.sh submit    the batch-script and option parser (src/submit)
#   fuzz/build.sh jobspec   the JSON job spec that /v1/jobs reads (src/api)
#
#   SHOAL_FUZZ_BUILD  where the binary goes (default: build/fuzz)
#   SHOAL_FUZZ_CXX    the compiler (default: clang++-14, else clang++)
set -euo pipefail

target=${1:-submit}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case "$target" in
  submit) modules=("$root/src/core" "$root/src/submit") ;;
  jobspec) modules=("$root/src/core" "$root/src/api") ;;
  *) echo "fuzz/build.sh: unknown target '$target' (submit, jobspec)" >&2; exit 2 ;;
esac
out=${SHOAL_FUZZ_BUILD:-$root/build/fuzz}
cxx=${SHOAL_FUZZ_CXX:-$(command -v clang++-14 || command -v clang++ || true)}
if [[ -z "$cxx" ]]; then
  echo "fuzz/build.sh: clang++ not found (libFuzzer needs clang)" >&2
  exit 2
fi

mapfile -t sources < <(find "${modules[@]}" -name '*.cc' ! -name '*_test.cc' | sort)
sources+=("$root/fuzz/${target}_fuzz.cc")
binary=$out/${target}_fuzz
mkdir -p "$out"

# Rebuild only when a source or header is newer than the binary.
if [[ -x "$binary" ]] && [[ -z $(find "${modules[@]}" "$root/fuzz" \
    \( -name '*.cc' -o -name '*.h' \) -newer "$binary" -print -quit) ]]; then
  echo "$binary"
  exit 0
fi

# -fno-sanitize-recover makes any undefined behaviour a crash the fuzzer keeps.
"$cxx" -std=c++20 -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Wall -Wextra -Wshadow -Werror \
  -I"$root/src" $(pkg-config --cflags fmt) \
  "${sources[@]}" -o "$binary.tmp" $(pkg-config --libs fmt)
mv "$binary.tmp" "$binary"
echo "$binary"
