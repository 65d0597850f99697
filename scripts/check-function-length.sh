#!/bin/sh
# Fails when a function in src/ is longer than MAX_LINES (default 150, as
# STYLE.md asks), listing each one longest first: "LINES FILE:LINE NAME".
# Functions and where they end come from universal-ctags (Debian package
# universal-ctags; `make deps` installs it).
# Usage: scripts/check-function-length.sh [MAX_LINES]
set -eu
cd "$(dirname "$0")/.."
max=${1:-150}
case "$max" in
  '' | *[!0-9]*) echo "check-function-length: MAX_LINES must be a number, not '$max'" >&2; exit 2 ;;
esac
# Debian names the binary ctags-universal; `ctags` may be another ctags.
ctags=""
for c in ctags-universal universal-ctags ctags; do
  if command -v "$c" > /dev/null && "$c" --version 2>/dev/null | grep -q "Universal Ctags"; then
    ctags=$c
    break
  fi
done
[ -n "$ctags" ] || { echo "check-function-length: universal-ctags is not installed" >&2; exit 1; }
# '|' between the fields: an operator's name has spaces in it.
tags=$("$ctags" -x --_xformat="%N|%F|%n|%e|%K" --fields=+ne --kinds-c++=f --languages=C++ -R src)
functions=$(echo "$tags" | awk -F'|' '$5 == "function" && $4 != ""' | wc -l)
long=$(echo "$tags" | awk -F'|' -v max="$max" \
  '$5 == "function" && $4 != "" && $4 - $3 + 1 > max { print $4 - $3 + 1, $2 ":" $3, $1 }' |
  sort -rn)
if [ -n "$long" ]; then
  echo "$long"
  echo "check-function-length: the functions above are over $max lines; split them into named steps" >&2
  exit 1
fi
echo "check-function-length: $functions functions in src/, none over $max lines"
