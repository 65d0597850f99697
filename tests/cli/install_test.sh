#!/bin/sh
# An installed Shoal is whole: `cmake --install` into a fresh prefix, then,
# from another directory and with nothing pointing at the source tree, the
# installed `shoal` finds its data under <prefix>/share/shoal/data and runs
# `plan validate` and `sim` on a shipped trace given by name.
# install_test.sh <cmake> <build dir> <prefix (emptied first)>
set -u
CMAKE=$1
BUILD=$2
PREFIX=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP" "$PREFIX"' EXIT
. "$(dirname "$0")/lib.sh"
unset SHOAL_DATA_DIR
rm -rf "$PREFIX"

check "install" 0 "" -- "$CMAKE" --install "$BUILD" --prefix "$PREFIX"
SHOAL="$PREFIX/bin/shoal"
DATA="$PREFIX/share/shoal/data"
check "installed binaries" 0 "shoal-step" -- ls "$PREFIX/bin"
check "installed binaries: shoal-full beside shoal" 0 "shoal-full" -- ls "$PREFIX/bin"
check "installed data" 0 "SHA256SUMS" -- ls "$DATA"
check "installed checksums" 0 "" -- sh -c "cd '$DATA' && sha256sum --quiet -c SHA256SUMS"
cd "$TMP"
check "version names the installed data" 0 "data: $DATA (install prefix)" -- "$SHOAL" version
check "validate" 0 "worst row" -- "$SHOAL" plan validate
check "sim on a shipped trace" 0 "JCT mean" -- "$SHOAL" sim --nodes 16 --trace microsoft-itp-2021/raw/cluster01.csv --policy fifo --max-jobs 100 --no-progress
exit $fail
