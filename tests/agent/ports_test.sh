#!/bin/sh
# Rendezvous ports on a shared node: 50 two-task jobs at once on one node of
# `shoal up`, each task binding what its job was given (task 0 MASTER_PORT,
# every task its TensorFlow worker port from TF_CONFIG) on the node's
# address, and holding it until all 100 tasks hold theirs (a barrier of
# files, at most 60 s). A port handed to two jobs fails a bind with
# EADDRINUSE; every task must report "bound", within the configured range.
set -u
SHOAL=$(realpath "$1")
TMP=$(mktemp -d)
. "$(dirname "$0")/../cli/lib.sh"
trap 'stop_up; rm -rf "$TMP"' EXIT
/usr/bin/python3 -c 'import socket, json' 2>/dev/null || { echo "[program] no python3"; exit 77; }

JOBS=50
# A range of its own, away from what other tests on this machine bind on the
# same loopback addresses at the same time (their clusters' 20000-).
printf '[server]\nrendezvous_ports = "13000-13999"\n' > "$TMP/server.toml"
start_up --nodes 1 --profile dgx-h100 --config "$TMP/server.toml"
cd "$TMP/work"
mkdir barrier
cat > bind.py <<'PY'
import json, os, socket, sys, time
rank = int(os.environ["SLURM_PROCID"])
tf = json.loads(os.environ["TF_CONFIG"])
mine = [tf["cluster"]["worker"][tf["task"]["index"]]]
if rank == 0:
    mine.append("%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]))
held = []
try:
    for endpoint in mine:
        host, port = endpoint.rsplit(":", 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((host, int(port)))
        s.listen(1)
        held.append(s)
except OSError as e:
    print("job %s rank %d: %s: %s" % (os.environ["SLURM_JOB_ID"], rank, endpoint, e))
    sys.exit(1)
open(os.path.join(sys.argv[1], "%s.%d" % (os.environ["SLURM_JOB_ID"], rank)), "w").close()
deadline = time.time() + 60
while len(os.listdir(sys.argv[1])) < int(sys.argv[2]) and time.time() < deadline:
    time.sleep(0.1)
print("bound %s together=%d" % (" ".join(mine), len(os.listdir(sys.argv[1]))))
PY
ids=""
i=0
while [ $i -lt $JOBS ]; do
  "$SHOAL" submit --parsable -n 2 -c 1 --mem 64M -t 5 -o "ports-%j-%t.out" -- \
    /usr/bin/python3 bind.py "$TMP/work/barrier" $((JOBS * 2)) > "$TMP/id" 2>&1 || { cat "$TMP/id"; exit 1; }
  ids="$ids $(cat "$TMP/id")"
  i=$((i + 1))
done
check "$JOBS jobs submitted" 0 "" -- test "$(echo $ids | wc -w)" = $JOBS
# Wait (at most 300 s: a sanitizer build is slow) until none of them is
# pending or running: one listing a round, not one call per job.
deadline=$(( $(date +%s) + 300 ))
while [ "$(date +%s)" -lt $deadline ]; do
  [ "$("$SHOAL" queue -t pending,running | tail -n +2 | grep -c .)" = 0 ] && break
  sleep 0.5
done
check "every job completed" 0 "" -- sh -c "for id in $ids; do '$SHOAL' show \$id | grep -q 'state.*completed' || { '$SHOAL' show \$id; exit 1; }; done"
check "all $((JOBS * 2)) tasks bound their ports" 0 "" -- test "$(cat ports-*.out | grep -c '^bound ')" = $((JOBS * 2))
check "  and held them at once" 0 "" -- test "$(ls barrier | wc -l)" = $((JOBS * 2))
check "  no port was handed out twice" 0 "" -- sh -c "cat ports-*.out | tr ' ' '\n' | grep ':' | sort | uniq -d | grep -q . && exit 1; exit 0"
check "  nothing in use" 0 "" -- sh -c "! grep -l 'in use' ports-*.out"
check "  all from rendezvous_ports" 0 "" -- sh -c "cat ports-*.out | tr ' ' '\n' | grep ':' | grep -qv ':13[0-9][0-9][0-9]\$' && exit 1; exit 0"
exit $fail
