#!/bin/sh
# Checks that every C++ file in the repository is formatted as .clang-format
# says (clang-format --dry-run -Werror); `make format` rewrites them.
# Usage: scripts/check-format.sh [--fix]
set -eu
cd "$(dirname "$0")/.."
command -v clang-format > /dev/null || { echo "check-format: clang-format is not installed" >&2; exit 1; }
files=$(git ls-files '*.cc' '*.h' '*.cu' ':!:data/**')
if [ "${1:-}" = "--fix" ]; then
  echo "$files" | xargs clang-format -i
  exit 0
fi
if echo "$files" | xargs clang-format --dry-run -Werror; then
  echo "check-format: $(echo "$files" | wc -l) files formatted as .clang-format says"
else
  echo "check-format: the files above are not formatted; run 'make format'" >&2
  exit 1
fi
