#!/bin/sh
# Two `shoal server`s on one PostgreSQL: one leads, one stands by. A real
# PostgreSQL server is started here (initdb and pg_ctl in a temporary
# directory, a unix socket there only, fsync on), with two agents
# (simulated GPUs) and the CLI given both controllers' addresses. Under a
# flood of submits the leader is killed with SIGKILL, and:
#   - the standby leads within 10 s;
#   - every acknowledged job is there, once, and new ids follow the old;
#   - a job that was running keeps running, in the same process, and its
#     node is reconciled with the new leader;
#   - the CLI and the agents follow the lead through their address lists;
#   - the old leader, started again, stands by.
# Prints the takeover time. Skipped (77) without PostgreSQL.
set -u
SHOAL=$1
command -v curl > /dev/null 2>&1 || { echo "[program] curl is not installed"; exit 77; }
TMP=$(mktemp -d)
PIDS=""
cleanup() {
  touch "$TMP/stop-flood"
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  for p in $PIDS; do wait "$p" 2>/dev/null; done
  [ -n "${LONG_PID:-}" ] && kill "$LONG_PID" 2>/dev/null
  stop_postgres
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/postgres.sh"
start_postgres || exit 77

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
PORT_A=$(free_port)
PORT_B=$(free_port)
start_server() {  # start_server NAME PORT: its pid in SERVER_PID
  "$SHOAL" server --plain-http --listen "127.0.0.1:$2" --state-dir "$TMP/$1" --socket none \
    --postgres "$PG" >> "$TMP/$1.log" 2>&1 &
  SERVER_PID=$!
  PIDS="$PIDS $SERVER_PID"
}
wait_log() {  # wait_log FILE PATTERN SECONDS
  n=0
  while [ $n -lt $(($3 * 20)) ]; do grep -qs "$2" "$1" && return 0; sleep 0.05; n=$((n + 1)); done
  return 1
}

start_server a "$PORT_A"
A_PID=$SERVER_PID
wait_log "$TMP/a.log" "listening on" 30 || { echo "FAIL server a did not start"; cat "$TMP/a.log"; exit 1; }
echo "ok   server a leads on PostgreSQL"
# The standby needs the first controller's secrets (docs/deploy.md).
mkdir -m 700 "$TMP/b"
cp "$TMP/a/admin.token" "$TMP/a/node.token" "$TMP/a/job.key" "$TMP/b/"
start_server b "$PORT_B"
B_PID=$SERVER_PID
wait_log "$TMP/b.log" "standing by" 30 || { echo "FAIL server b does not stand by"; cat "$TMP/b.log"; exit 1; }
check "server b stands by, naming the leader" 0 "standing by: shoal-server" -- cat "$TMP/b.log"
check "server b does not listen while it stands by" 7 "" -- curl -sS -f "http://127.0.0.1:$PORT_B/healthz"

export HOME="$TMP/home"
mkdir -p "$HOME" "$TMP/work"
unset SHOAL_TOKEN_FILE SHOAL_SOCKET SHOAL_CA_FILE
SHOAL_SERVER="http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B"
SHOAL_TOKEN=$(cat "$TMP/a/admin.token")
export SHOAL_SERVER SHOAL_TOKEN
for n in 1 2; do
  "$SHOAL" agent --server "http://127.0.0.1:$PORT_A,http://127.0.0.1:$PORT_B" --token "$(cat "$TMP/a/node.token")" \
    --name "n$n" --listen 127.0.0.1:0 --gpus simulated:dgx-h100 --state-dir "$TMP/agent$n" \
    --cgroup-root none --allow-root-jobs --heartbeat 200ms > "$TMP/agent$n.log" 2>&1 &
  PIDS="$PIDS $!"
done
up=0
for _ in $(seq 200); do
  [ "$("$SHOAL" nodes 2>/dev/null | grep -c ' up ')" = 2 ] && { up=1; break; }
  sleep 0.1
done
[ $up = 1 ] || { echo "FAIL the agents did not register"; cat "$TMP"/agent*.log; exit 1; }
echo "ok   two agents registered with server a"

LONG=$(cd "$TMP/work" && "$SHOAL" submit --gpus 8 --parsable -- \
  sh -c "echo \$\$ > $TMP/long.pid; exec sleep 600")
for _ in $(seq 200); do [ -s "$TMP/long.pid" ] && break; sleep 0.1; done
LONG_PID=$(cat "$TMP/long.pid" 2>/dev/null)
[ -n "$LONG_PID" ] || { echo "FAIL the long job did not start"; "$SHOAL" show "$LONG"; exit 1; }
LONG_NODE=$("$SHOAL" show "$LONG" | sed -n 's/^nodes  *//p' | head -1)
echo "ok   job $LONG runs (pid $LONG_PID) on $LONG_NODE"

# The flood: submits one after another through the CLI, each acknowledged
# id kept; a submit that fails (the leader died under it) is not.
(
  cd "$TMP/work" || exit 1
  while [ ! -e "$TMP/stop-flood" ]; do
    if id=$("$SHOAL" submit --parsable --begin 2099-01-01 --job-name flood -- true 2> /dev/null); then
      echo "$id" >> "$TMP/acked"
    else
      echo x >> "$TMP/failed"
    fi
  done
) &
FLOOD=$!
PIDS="$PIDS $FLOOD"
for _ in $(seq 300); do [ "$(wc -l < "$TMP/acked" 2>/dev/null || echo 0)" -ge 30 ] && break; sleep 0.1; done
BEFORE=$(wc -l < "$TMP/acked")
LAST_A=$(tail -1 "$TMP/acked")
T0=$(date +%s%N)
kill -9 "$A_PID"
wait "$A_PID" 2>/dev/null
took=""
for _ in $(seq 400); do
  if curl -sS -f "http://127.0.0.1:$PORT_B/healthz" > /dev/null 2>&1; then
    took=$(( ($(date +%s%N) - T0) / 1000000 ))
    break
  fi
  sleep 0.05
done
[ -n "$took" ] || { echo "FAIL server b did not take over within 20 s"; cat "$TMP/b.log"; exit 1; }
echo "takeover: server b answered $took ms after server a was killed ($BEFORE jobs acknowledged by a)"
check "server b took over within 10 s" 0 "" -- test "$took" -le 10000
check "server b says it took the lead" 0 "took the lead" -- cat "$TMP/b.log"
for _ in $(seq 300); do [ "$(wc -l < "$TMP/acked")" -ge $((BEFORE + 30)) ] && break; sleep 0.1; done
touch "$TMP/stop-flood"
wait "$FLOOD"
ACKED=$(wc -l < "$TMP/acked")
FAILED=$(wc -l < "$TMP/failed" 2>/dev/null || echo 0)
echo "flood: $ACKED submits acknowledged ($BEFORE by a, $((ACKED - BEFORE)) by b), $FAILED failed during the takeover"
check "the CLI followed the lead to server b" 0 "" -- test "$ACKED" -ge $((BEFORE + 30))

# Every acknowledged job, once, from the new leader.
curl -sS -f -H "Authorization: Bearer $SHOAL_TOKEN" \
  "http://127.0.0.1:$PORT_B/v1/jobs?state=pending&limit=10000" > "$TMP/jobs.json"
python3 - "$TMP/jobs.json" "$TMP/acked" "$LAST_A" > "$TMP/verdict" <<'PY'
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
ids = [j["id"] for j in jobs if j.get("spec", {}).get("name") == "flood"]
acked = [int(line) for line in open(sys.argv[2]) if line.strip()]
last_a = int(sys.argv[3])
missing = sorted(set(acked) - set(ids))
print("listed", len(ids), "acked", len(acked), "missing", missing[:10],
      "duplicate ids", len(ids) - len(set(ids)), "repeated acks", len(acked) - len(set(acked)),
      "b reused an id", any(a <= last_a for a in acked[acked.index(last_a) + 1:]))
PY
check "no acknowledged job lost" 0 "missing \[\]" -- cat "$TMP/verdict"
check "no job twice, no id given twice" 0 "duplicate ids 0 repeated acks 0 b reused an id False" -- cat "$TMP/verdict"

# The agents follow the lead; the running job is reconciled, not lost.
up=0
for _ in $(seq 300); do
  [ "$("$SHOAL" nodes 2>/dev/null | grep -c ' up ')" = 2 ] && { up=1; break; }
  sleep 0.1
done
check "both agents beat to server b" 0 "" -- test $up = 1
sleep 1
check "the running job still runs on server b" 0 "^state  *running" -- "$SHOAL" show "$LONG"
check "  on its node" 0 "^nodes  *$LONG_NODE\$" -- "$SHOAL" show "$LONG"
check "  in the same process" 0 "" -- kill -0 "$LONG_PID"
JOB=$(cd "$TMP/work" && "$SHOAL" submit --gpus 1 --parsable -- true)
for _ in $(seq 200); do "$SHOAL" show "$JOB" 2>/dev/null | grep -q 'state.*completed' && break; sleep 0.1; done
check "server b schedules and runs new jobs" 0 "state.*completed" -- "$SHOAL" show "$JOB"
check "  with an id after every one server a gave" 0 "" -- test "$JOB" -gt "$LAST_A"

# The old leader, back, stands by.
start_server a "$PORT_A"
A_PID=$SERVER_PID
wait_log "$TMP/a.log" "standing by" 30
check "server a, started again, stands by" 0 "standing by" -- cat "$TMP/a.log"
kill "$A_PID"
wait "$A_PID" 2>/dev/null
# A standby without the first controller's secrets refuses the lead, saying
# what it lacks, rather than lead with keys of its own.
start_server c "$(free_port)"
C_PID=$SERVER_PID
wait_log "$TMP/c.log" "standing by" 30
kill -9 "$B_PID"
wait "$C_PID"
C_CODE=$?
check "a standby without the secrets refuses the lead, saying what it lacks" 0 \
  "node.token is missing" -- cat "$TMP/c.log"
check "  and exits with an error" 0 "" -- test "$C_CODE" = 1
exit $fail
