#!/bin/sh
# Slow and idle connections against real `shoal server` and `shoal agent`
# processes while a job runs (default settings): 1,000 hostile connections
# (headers trickled a byte a second, connections that say nothing, bodies
# trickled with a user's token), each reopened as soon as it is closed, for
# SHOAL_SLOW_SECONDS (default 60). Throughout, /healthz of both must answer
# within 1 s (3 s in a sanitizer build, whose processes run several times
# slower on a machine that runs other tests beside this one); afterwards the job must still run on a node that stayed up,
# and neither process may have grown past 200 MiB.
set -u
SHOAL=$1
SECONDS_UNDER_ATTACK=${SHOAL_SLOW_SECONDS:-60}
command -v curl > /dev/null || { echo "SKIP [program] curl is missing"; exit 77; }
TMP=$(mktemp -d)
ATTACK_PIDS=
cleanup() {
  for p in $ATTACK_PIDS; do kill "$p" 2>/dev/null; done
  stop_cluster
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../cli/lib.sh"
. "$(dirname "$0")/lib.sh"

mkdir -p "$TMP/work"
start_cluster --allow-root-jobs
USER_TOKEN=$(user_token mallory)

JOB=$("$SHOAL" submit -G 1 -D "$TMP/work" --wrap "sleep $((SECONDS_UNDER_ATTACK + 120))" | sed -n 's/^Submitted job \([0-9]*\).*/\1/p')
for _ in $(seq 200); do "$SHOAL" show "$JOB" 2>/dev/null | grep -q running && break; sleep 0.05; done
check "the job runs" 0 "running" -- "$SHOAL" show "$JOB"

HOSTILE="$(dirname "$0")/hostile_clients.py"
python3 "$HOSTILE" "${SHOAL_SERVER#http://}" 600 "$SECONDS_UNDER_ATTACK" "$USER_TOKEN" > "$TMP/attack-server.log" 2>&1 &
ATTACK_PIDS="$!"
python3 "$HOSTILE" "${AGENT#http://}" 400 "$SECONDS_UNDER_ATTACK" > "$TMP/attack-agent.log" 2>&1 &
ATTACK_PIDS="$ATTACK_PIDS $!"

# Probe both every half second while the attack lasts.
BOUND=1
sanitized && BOUND=3
slow=0; probes=0; peak_server=0; peak_agent=0; worst=0
end=$(( $(date +%s) + SECONDS_UNDER_ATTACK ))
while [ "$(date +%s)" -lt "$end" ]; do
  for target in "$SHOAL_SERVER" "$AGENT"; do
    t=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time $BOUND "$target/healthz")
    probes=$((probes + 1))
    case "$t" in
      "200 "*) worst=$(echo "$worst ${t#200 }" | awk '{print ($2 > $1) ? $2 : $1}') ;;
      *) slow=$((slow + 1)); echo "slow or failed /healthz of $target: $t" ;;
    esac
  done
  r=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$SERVER_PID/status"); [ "$r" -gt "$peak_server" ] && peak_server=$r
  r=$(awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$AGENT_PID/status"); [ "$r" -gt "$peak_agent" ] && peak_agent=$r
  sleep 0.5
done
for p in $ATTACK_PIDS; do wait "$p"; done
ATTACK_PIDS=
cat "$TMP/attack-server.log" "$TMP/attack-agent.log"
echo "probes: $probes, slower than $BOUND s or failed: $slow, slowest answer ${worst} s; peak RSS server ${peak_server} MiB, agent ${peak_agent} MiB"
if [ "$slow" -eq 0 ]; then echo "ok   /healthz answered within $BOUND s throughout"; else echo "FAIL /healthz was slow or failed $slow times"; fail=1; fi
if sanitized; then echo "note a sanitizer build: the memory bound is checked without one"
elif [ "$peak_server" -lt 200 ] && [ "$peak_agent" -lt 200 ]; then echo "ok   memory stayed bounded"
else echo "FAIL memory grew"; fail=1; fi
grep -q 'opened' "$TMP/attack-server.log" || { echo "FAIL the attack on the server did not run"; fail=1; }
check "the job still runs" 0 "running" -- "$SHOAL" show "$JOB"
check "the node stayed up" 0 "^n1 *up" -- "$SHOAL" nodes
"$SHOAL" cancel "$JOB" > /dev/null 2>&1
exit $fail
