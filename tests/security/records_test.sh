#!/bin/sh
# What the server accepts at submit and what it still lists after a restart,
# against real `shoal server` and `shoal agent` processes:
#  - an account that is not configured is refused at submit (400) once the
#    cluster has accounts, not accepted and then failed at launch; with no
#    accounts configured, an account is a free label (as Slurm with
#    AccountingStorageEnforce off): the job runs and sees it as
#    SLURM_JOB_ACCOUNT;
#  - `GET /v1/jobs?state=completed` (shoal queue -t completed) lists the jobs
#    that completed before a restart of the server, once each, with those
#    that complete after it.
set -u
SHOAL=$1
command -v curl > /dev/null || { echo "SKIP [program] curl is missing"; exit 77; }
TMP=$(mktemp -d)
cleanup() {
  stop_cluster
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

start_cluster --allow-root-jobs --heartbeat 200ms
mkdir -p "$TMP/work"
submit() {  # submit <shoal submit args...>; prints the job id
  "$SHOAL" submit -D "$TMP/work" "$@" 2>&1 | sed -n 's/^Submitted job \([0-9]*\).*/\1/p'
}
job_state() { "$SHOAL" show "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
wait_state() {  # wait_state <job> <state>
  for _ in $(seq 200); do [ "$(job_state "$1")" = "$2" ] && return 0; sleep 0.05; done
  echo "FAIL job $1 never reached $2 (it is $(job_state "$1"))"
  exit 1
}
# The ids `shoal queue -t <states>` lists, sorted, one line.
listed() {
  "$SHOAL" queue -t "$1" --json |
    python3 -c 'import json,sys; print(" ".join(sorted(str(j["id"]) for j in json.load(sys.stdin)["jobs"])))'
}

# No accounts configured: any account is a label the job carries.
J=$(submit -A anything --wrap 'echo account=$SLURM_JOB_ACCOUNT')
wait_state "$J" completed
check "no accounts: a job's account is a label, and the job runs with it" 0 "^account=anything$" -- \
  "$SHOAL" logs "$J"

# Accounts configured: an unknown one is refused at submit, before it is stored.
"$SHOAL" account set vision > /dev/null || { echo "FAIL account set"; exit 1; }
before=$(listed pending,running,completed,failed,cancelled)
check "an unknown account is refused at submit" 1 "unknown account 'nosuch'" -- \
  "$SHOAL" submit -D "$TMP/work" -A nosuch --wrap true
check "  and nothing was stored" 0 "^$before\$" -- sh -c "echo '$(listed pending,running,completed,failed,cancelled)'"
check "  through the API too: 400" 0 "^400$" -- curl -s -o /dev/null -w '%{http_code}' \
  -H "Authorization: Bearer $(cat "$SHOAL_STATE_DIR/admin.token")" \
  -d '{"command":"true","gpus":1,"account":"nosuch"}' "$SHOAL_SERVER/v1/jobs"
J2=$(submit -A vision --wrap 'echo account=$SLURM_JOB_ACCOUNT')
wait_state "$J2" completed
check "a configured account is taken" 0 "^account=vision$" -- "$SHOAL" logs "$J2"

# Jobs that ended before a restart: completed, cancelled, and one still held.
J3=$(submit --wrap true)
wait_state "$J3" completed
J4=$(submit -H --wrap true)
"$SHOAL" cancel "$J4" > /dev/null
J5=$(submit -H --wrap true)
completed=$(listed completed)
check "before the restart: the completed jobs" 0 "^$(echo "$J $J2 $J3" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')\$" -- \
  echo "$completed"

# Restart the server on the same address (the agent finds it again).
kill "$SERVER_PID" && wait "$SERVER_PID"
"$SHOAL" server --plain-http --state-dir "$SHOAL_STATE_DIR" --listen "${SHOAL_SERVER#http://}" \
  > "$TMP/server2.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do grep -qs "listening on" "$TMP/server2.log" && break; sleep 0.05; done
grep -qs "listening on" "$TMP/server2.log" || { echo "FAIL the server did not restart"; cat "$TMP/server2.log"; exit 1; }

check "after the restart: the same completed jobs" 0 "^$completed\$" -- sh -c "echo '$(listed completed)'"
check "  the cancelled one with state=cancelled" 0 "^$J4\$" -- sh -c "echo '$(listed cancelled)'"
check "  the held one is still pending" 0 "^$J5\$" -- sh -c "echo '$(listed pending)'"
for _ in $(seq 100); do "$SHOAL" nodes 2>/dev/null | grep -q '^n1 *up' && break; sleep 0.05; done
J6=$(submit --wrap true)
wait_state "$J6" completed
check "  and with one completed since, each once" 0 "^$(echo "$completed $J6" | tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//')\$" -- \
  sh -c "echo '$(listed completed)'"
check "  as shoal queue shows them" 0 "^ *$J3 .*completed" -- "$SHOAL" queue -t completed
exit $fail
