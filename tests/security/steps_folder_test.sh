#!/bin/sh
# The running steps' folder of `shoal up` (root's here): on a tmpfs, named
# after the state folder, removed when `shoal up` stops. Where it is in
# /dev/shm, which every local user may write to, another user who makes the
# name first (a folder, or a link to a folder of theirs) does not get the
# steps: `shoal up` keeps them under its state folder instead, and jobs run.
# Needs root (a throwaway user is made with useradd); exits 77 otherwise.
set -u
SHOAL=$1
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP [privilege] the steps folder test needs root to create a throwaway user"
  exit 77
fi
TMP=$(mktemp -d)
chmod 755 "$TMP"
EVE=shoalshm$$
STEPS=
cleanup() {
  stop_up
  userdel "$EVE" 2>/dev/null
  [ -n "$STEPS" ] && rm -rf "$STEPS"
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../cli/lib.sh"
useradd -M -d "$TMP/eve" -s /bin/sh "$EVE" || { echo "FAIL useradd $EVE"; exit 1; }
mkdir -p "$TMP/eve" && chown "$EVE" "$TMP/eve"
as_eve() { setpriv --reuid "$EVE" --regid "$(id -g "$EVE")" --init-groups "$@"; }

empty() { [ -z "$(ls -A "$1")" ] && echo empty; }

# A job to completion: its id, then its state until it ends.
job_completes() {
  id=$("$SHOAL" submit --parsable --gpus 1 --wrap 'echo ran' 2>&1) || { echo "$id"; return 1; }
  for _ in $(seq 100); do
    "$SHOAL" show "$id" 2>/dev/null | grep -q 'state.*completed' && { echo "job $id completed"; return 0; }
    sleep 0.1
  done
  "$SHOAL" show "$id"
  return 1
}

start_up --nodes 1
STEPS=$(sed -n 's/^running job steps in //p' "$TMP/up.log")
check "shoal up keeps its running steps apart from its state" 0 "" -- test -n "$STEPS"
check "  on a tmpfs" 0 "^tmpfs$" -- stat -f -c %T "$STEPS"
check "  in a folder of root's that others may only pass through" 0 "^711 root$" -- \
  stat -c '%a %U' "$STEPS"
check "  where a job's step runs" 0 "job .* completed" -- job_completes
stop_up
check "stopped, shoal up removes the folder" 1 "" -- test -e "$STEPS"

case "$STEPS" in
  /dev/shm/*) ;;
  *)
    echo "ok   (the folder is not in /dev/shm here: nobody else can make its name first)"
    exit $fail
    ;;
esac

# Eve makes the name first: a folder of hers.
as_eve mkdir -m 777 "$STEPS"
start_up --nodes 1
check "a folder another user made first is not used" 1 "" -- grep -q "running job steps" "$TMP/up.log"
check "  jobs still run" 0 "job .* completed" -- job_completes
check "  and nothing of ours went into hers" 0 "^empty$" -- empty "$STEPS"
stop_up
rmdir "$STEPS"

# Eve makes the name a link to a folder of hers.
as_eve mkdir -m 777 "$TMP/eve/steps"
as_eve ln -s "$TMP/eve/steps" "$STEPS"
start_up --nodes 1
check "a link another user made first is not followed" 1 "" -- grep -q "running job steps" "$TMP/up.log"
check "  jobs still run" 0 "job .* completed" -- job_completes
check "  and nothing of ours went where it points" 0 "^empty$" -- empty "$TMP/eve/steps"
stop_up
rm -f "$STEPS"
exit $fail
