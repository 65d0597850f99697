#!/bin/sh
# The data Shoal ships (data/README.md) is what its sources published: every
# file matches its line in data/SHA256SUMS, every file is listed there, and
# every data folder (data/compiled, data/vtrain, data/gavel and each source
# under data/traces) has a README.md that names its source and licence.
# After a deliberate change, regenerate the list from data/:
#   find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS
set -u
cd "$1" || exit 1
fail=0
if sha256sum --quiet --strict -c SHA256SUMS; then
  echo "ok   every listed file matches its checksum"
else
  echo "FAIL files differ from data/SHA256SUMS"; fail=1
fi
listed=$(sed 's/^[0-9a-f]*  //' SHA256SUMS | LC_ALL=C sort)
present=$(find . -type f ! -name SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort)
if [ "$listed" = "$present" ]; then
  echo "ok   every file is listed"
else
  echo "FAIL data/SHA256SUMS and the files differ:"
  printf '%s\n' "$listed" > "${TMPDIR:-/tmp}/shoal-listed.$$"
  printf '%s\n' "$present" | diff "${TMPDIR:-/tmp}/shoal-listed.$$" - | grep '^[<>]'
  rm -f "${TMPDIR:-/tmp}/shoal-listed.$$"
  fail=1
fi
for dir in compiled vtrain gavel traces/*/; do
  dir=${dir%/}
  if [ ! -f "$dir/README.md" ]; then
    echo "FAIL $dir has no README.md (source, licence)"; fail=1
  elif ! grep -qi 'licen[cs]e' "$dir/README.md"; then
    echo "FAIL $dir/README.md does not state a licence"; fail=1
  else
    echo "ok   $dir/README.md"
  fi
done
exit $fail
