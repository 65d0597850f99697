#!/bin/sh
# TLS and node identities, attacked through real `shoal server` and `shoal
# agent` processes on loopback: plain HTTP to a TLS listener, a client that
# trusts another CA, join tokens used twice, expired tokens, one node's
# certificate acting for another, the node token over TLS, a node submitting
# jobs, strangers and nodes giving an agent orders or reading its metrics
# (unless they are public), a re-keyed node's old
# certificate, node sessions forged, misused or outliving their certificate
# or the server's key, and a connection that never finishes its handshake. A job
# runs and its log is read through the controller's mutual TLS to the agent.
set -u
SHOAL=$1
command -v curl > /dev/null || { echo "SKIP [program] curl is missing"; exit 77; }
command -v openssl > /dev/null || { echo "SKIP [program] openssl is missing"; exit 77; }
TMP=$(mktemp -d)
PIDS=""
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/../cli/lib.sh"
export SHOAL_STATE_DIR="$TMP/state" HOME="$TMP/home"
unset SHOAL_TOKEN SHOAL_TOKEN_FILE SHOAL_SOCKET SHOAL_SERVER SHOAL_CA_FILE
mkdir -p "$HOME"

code() { curl -s -o "$TMP/body" -w '%{http_code}' --max-time 20 "$@" 2>/dev/null; }
expect_code() {  # expect_code <name> <allowed codes, |-separated> <curl args...>
  name=$1; want=$2; shift 2
  got=$(code "$@")
  if echo "$got" | grep -Eqx "$want"; then echo "ok   $name ($got)"; else
    echo "FAIL $name: HTTP $got, want $want"; cat "$TMP/body"; echo; fail=1; fi
}
body_has() {  # body_has <name> <pattern>: the last answer's body holds it
  if grep -q -- "$2" "$TMP/body"; then echo "ok   $1"; else
    echo "FAIL $1: the answer lacks '$2'"; cat "$TMP/body"; echo; fail=1; fi
}
# start_agent NAME [flags...]: an agent for node NAME with its state in $TMP/NAME
start_agent() {
  n=$1; shift
  "$SHOAL" agent --server "$URL" --name "$n" --listen 127.0.0.1:0 --state-dir "$TMP/$n" \
    --gpus simulated:dgx-h100 --allow-root-jobs --heartbeat 200ms "$@" > "$TMP/$n.log" 2>&1 &
  PIDS="$PIDS $!"
  LAST_PID=$!
}
wait_up() {  # wait_up NAME: until the node is up
  for _ in $(seq 100); do "$SHOAL" nodes 2>/dev/null | grep -q "^$1 *up" && return 0; sleep 0.1; done
  return 1
}
join_token() {  # join_token [--node NAME]
  "$SHOAL" token create --role join "$@" 2>/dev/null
}

check "plain HTTP is refused off loopback" 2 "plain HTTP is refused on 0.0.0.0" -- \
  "$SHOAL" server --plain-http --listen 0.0.0.0:0 --state-dir "$TMP/other"

"$SHOAL" server --listen 127.0.0.1:0 > "$TMP/server.log" 2>&1 &
SERVER_PID=$!
PIDS="$PIDS $!"
for _ in $(seq 100); do grep -qs "fingerprint" "$TMP/server.log" && break; sleep 0.05; done
URL=$(grep -o 'https://127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
FINGERPRINT=$(sed -n 's/.*fingerprint \([0-9A-F:]*\).*/\1/p' "$TMP/server.log")
CA="$SHOAL_STATE_DIR/tls/ca.crt"
[ -n "$URL" ] && [ -n "$FINGERPRINT" ] || { echo "FAIL server did not start"; cat "$TMP/server.log"; exit 1; }
ADDR=${URL#https://}

# The listener speaks TLS only; the CLI checks the server's certificate.
expect_code "plain HTTP to the TLS listener gets no answer" 000 "http://$ADDR/healthz"
expect_code "TLS with the cluster CA" 200 --cacert "$CA" "$URL/healthz"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=other \
  -keyout "$TMP/other.key" -out "$TMP/other.crt" -days 1 2> /dev/null
check "a CLI trusting another CA refuses the server" 3 "TLS certificate" -- \
  "$SHOAL" nodes --ca-file "$TMP/other.crt"
check "the CLI finds the local server and its CA" 0 "NODE" -- "$SHOAL" nodes

# Joining: a one-time token, bound to its node; the CA checked by fingerprint.
T1=$(join_token --node n1)
start_agent n1 --join-token "$T1" --ca-file "$CA"
wait_up n1 || { echo "FAIL n1 did not join"; cat "$TMP/n1.log"; exit 1; }
echo "ok   n1 joined with a join token"
check "a join token works once" 1 "unknown or revoked token" -- \
  "$SHOAL" agent --server "$URL" --name n1 --join-token "$T1" --ca-file "$CA" \
  --state-dir "$TMP/n1-again" --listen 127.0.0.1:0 --gpus simulated:dgx-h100
check "a wrong CA fingerprint is refused before anything is sent" 1 "fingerprint" -- \
  "$SHOAL" agent --server "$URL" --name n3 --join-token "$(join_token --node n3)" \
  --ca-fingerprint "00:11:22" --state-dir "$TMP/n3" --listen 127.0.0.1:0 --gpus simulated:dgx-h100
check "a token bound to n3 cannot join as n4" 1 "for node n3, not n4" -- \
  "$SHOAL" agent --server "$URL" --name n4 --join-token "$(join_token --node n3)" \
  --ca-fingerprint "$FINGERPRINT" --state-dir "$TMP/n4" --listen 127.0.0.1:0 --gpus simulated:dgx-h100
check "an unbound token cannot take a joined node's name" 1 "has joined already" -- \
  "$SHOAL" agent --server "$URL" --name n1 --join-token "$(join_token)" \
  --ca-fingerprint "$FINGERPRINT" --state-dir "$TMP/n1-thief" --listen 127.0.0.1:0 --gpus simulated:dgx-h100
start_agent n2 --join-token "$(join_token --node n2)" --ca-fingerprint "$FINGERPRINT" --metrics-public
wait_up n2 || { echo "FAIL n2 did not join"; cat "$TMP/n2.log"; exit 1; }
echo "ok   n2 joined, checking the CA by its fingerprint"
check "the node key never left the node" 0 "" -- test "$(stat -c %a "$TMP/n2/tls/node.key")" = 600

# A node's certificate acts for that node only.
N2="--cacert $CA --cert $TMP/n2/tls/node.crt --key $TMP/n2/tls/node.key"
expect_code "n2's certificate cannot heartbeat as n1" 403 $N2 -X POST -d '{}' "$URL/v1/nodes/n1/heartbeat"
body_has "  ... and says whose it is" "acts for node n2, not n1"
expect_code "n2's certificate cannot register as n1" 403 $N2 -X POST \
  -d '{"name":"n1","address":"127.0.0.1:9","cpus":1,"memory_mib":1,"gpus":[]}' "$URL/v1/nodes/register"
expect_code "n2's certificate heartbeats as n2" 200 $N2 -X POST -d '{}' "$URL/v1/nodes/n2/heartbeat"
expect_code "a node cannot submit jobs" 403 $N2 -X POST -d '{"command":"id","gpus":1}' "$URL/v1/jobs"
NODE_TOKEN=$(cat "$SHOAL_STATE_DIR/node.token")
expect_code "the node token is refused over TLS" 401 --cacert "$CA" -H "Authorization: Bearer $NODE_TOKEN" \
  -X POST -d '{}' "$URL/v1/nodes/n1/heartbeat"
body_has "  ... nodes prove themselves by certificate" "certificate"

# Tokens expire and are revocable.
TTL_TOKEN=$("$SHOAL" token create --user eve --ttl 1s 2>/dev/null)
expect_code "a fresh token works" 200 --cacert "$CA" -H "Authorization: Bearer $TTL_TOKEN" "$URL/v1/whoami"
sleep 1.2
expect_code "an expired token is refused" 401 --cacert "$CA" -H "Authorization: Bearer $TTL_TOKEN" "$URL/v1/whoami"
body_has "  ... as expired" "expired"
check "token list shows expiry" 0 "expired" -- "$SHOAL" token list
JOIN_ONLY=$(join_token --node n9)
expect_code "a join token is good for joining only" 403 --cacert "$CA" -H "Authorization: Bearer $JOIN_ONLY" "$URL/v1/jobs"

# The agents take orders from the controller only.
AGENT=$(grep -o 'listening on [^ ,]*' "$TMP/n1.log" | head -1 | sed 's/listening on //')
expect_code "a stranger cannot open the agent's TLS" 000 --cacert "$CA" -X POST -d '{}' "https://$AGENT/v1/launch"
expect_code "another node cannot give the agent orders" 401 $N2 -X POST -d '{}' "https://$AGENT/v1/launch"
expect_code "plain HTTP to the agent gets no answer" 000 -X POST -d '{}' "http://$AGENT/v1/launch"
expect_code "the controller's own certificate may" 400 --cacert "$CA" --cert "$SHOAL_STATE_DIR/tls/server.crt" \
  --key "$SHOAL_STATE_DIR/tls/server.key" -X POST -d '{}' "https://$AGENT/v1/launch"

# An agent's /metrics: the controller's only, unless metrics_public; then
# anyone who trusts the cluster CA reads it without a certificate, and
# nothing else of the agent opens up.
expect_code "a stranger cannot read n1's metrics" 000 --cacert "$CA" "https://$AGENT/metrics"
expect_code "the controller's certificate may" 200 --cacert "$CA" --cert "$SHOAL_STATE_DIR/tls/server.crt" \
  --key "$SHOAL_STATE_DIR/tls/server.key" "https://$AGENT/metrics"
AGENT2=$(grep -o 'listening on [^ ,]*' "$TMP/n2.log" | head -1 | sed 's/listening on //')
expect_code "anyone reads n2's public metrics" 200 --cacert "$CA" "https://$AGENT2/metrics"
for _ in $(seq 50); do grep -q DCGM_FI_DEV_GPU_UTIL "$TMP/body" && break; sleep 0.1; code --cacert "$CA" "https://$AGENT2/metrics" > /dev/null; done
body_has "  ... with its GPUs" 'DCGM_FI_DEV_GPU_UTIL{gpu="0",.*Hostname="n2"'
expect_code "  ... but cannot give it orders" 401 --cacert "$CA" -X POST -d '{}' "https://$AGENT2/v1/launch"
expect_code "  ... nor read its jobs' output" 401 --cacert "$CA" "https://$AGENT2/v1/jobs/1/output"

# Bodies over TLS: refused before they are read, as on plain HTTP.
expect_code "chunked body over TLS" 411 --cacert "$CA" -X POST -H 'Transfer-Encoding: chunked' \
  -H "Authorization: Bearer $TTL_TOKEN" --data-binary '{}' "$URL/v1/jobs"
head -c 20000000 /dev/zero > "$TMP/20m"
expect_code "20 MB body without a token over TLS" "401|000" --cacert "$CA" -X POST --data-binary @"$TMP/20m" "$URL/v1/jobs"

# A job runs on a TLS cluster and its log comes back through the agent.
check "submit over TLS" 0 "Submitted job" -- "$SHOAL" submit --gpus 1 --wrap 'echo tls-job-ran'
for _ in $(seq 100); do "$SHOAL" logs 1 2>/dev/null | grep -q tls-job-ran && break; sleep 0.1; done
check "the job's log comes through mutual TLS" 0 "tls-job-ran" -- "$SHOAL" logs 1

# Node sessions: a registration proven by certificate gives one, with which
# the node's later connections need no certificate (docs/scale.md). It acts
# for that node and certificate only. The agent registers with its
# certificate and takes the session up within ten heartbeat intervals.
logged() {  # logged FILE PATTERN: FILE has PATTERN, or has it within 15 s
  for _ in $(seq 150); do grep -q "$2" "$1" && return 0; sleep 0.1; done
  return 1
}
grep -q 'registered.*certificate' "$TMP/n1.log" && echo "ok   the agent registered with its certificate" ||
  { echo "FAIL the agent did not register with its certificate:"; cat "$TMP/n1.log"; fail=1; }
logged "$TMP/n1.log" 'node.session ' && echo "ok   ... and took its session up" ||
  { echo "FAIL the agent kept its certificate:"; cat "$TMP/n1.log"; fail=1; }
cp "$TMP/n1/tls/node.crt" "$TMP/n1-old.crt"; cp "$TMP/n1/tls/node.key" "$TMP/n1-old.key"
N1_OLD="--cacert $CA --cert $TMP/n1-old.crt --key $TMP/n1-old.key"
N1_BODY='{"name":"n1","address":"127.0.0.1:9","cpus":1,"memory_mib":1,"gpus":[]}'
expect_code "n1 registers with its certificate" 200 $N1_OLD -X POST -d "$N1_BODY" "$URL/v1/nodes/register"
body_has "  ... and is given a node session" '"node_session":"shoalnode_n1_'
SESSION=$(sed -n 's/.*"node_session":"\([^"]*\)".*/\1/p' "$TMP/body")
expect_code "the session beats as n1 without a certificate" 200 --cacert "$CA" \
  -H "Authorization: Bearer $SESSION" -X POST -d '{}' "$URL/v1/nodes/n1/heartbeat"
expect_code "  ... and registers n1" 200 --cacert "$CA" -H "Authorization: Bearer $SESSION" \
  -X POST -d "$N1_BODY" "$URL/v1/nodes/register"
if grep -q node_session "$TMP/body"; then echo "FAIL a session gave another session"; fail=1; else
  echo "ok   ... which gives no new session (only a certificate does)"; fi
expect_code "the session cannot beat as n2" 403 --cacert "$CA" \
  -H "Authorization: Bearer $SESSION" -X POST -d '{}' "$URL/v1/nodes/n2/heartbeat"
expect_code "the session cannot submit jobs" 403 --cacert "$CA" \
  -H "Authorization: Bearer $SESSION" -X POST -d '{"command":"id","gpus":1}' "$URL/v1/jobs"
FORGED=$(echo "$SESSION" | sed 's/^shoalnode_n1_/shoalnode_n2_/')
expect_code "a session renamed for n2 is refused" 401 --cacert "$CA" \
  -H "Authorization: Bearer $FORGED" -X POST -d '{}' "$URL/v1/nodes/n2/heartbeat"
FORGED=$(echo "$SESSION" | sed 's/_\([0-9]*\)_/_9\1_/')
expect_code "a session made to last longer is refused" 401 --cacert "$CA" \
  -H "Authorization: Bearer $FORGED" -X POST -d '{}' "$URL/v1/nodes/n1/heartbeat"

# Re-keying: a token made for n1 gives it a new certificate; the old one stops working.
kill "$LAST_PID" 2>/dev/null  # n2 stays; stop nothing else
check "n1 re-keyed with a token made for it" 0 "" -- sh -c "
  '$SHOAL' agent --server '$URL' --name n1 --join-token '$(join_token --node n1)' --ca-file '$CA' \
    --state-dir '$TMP/n1-new' --listen 127.0.0.1:0 --gpus simulated:dgx-h100 > '$TMP/n1-new.log' 2>&1 &
  echo \$! > '$TMP/n1-new.pid'
  for i in \$(seq 100); do grep -q 'listening on' '$TMP/n1-new.log' && exit 0; sleep 0.1; done; exit 1"
PIDS="$PIDS $(cat "$TMP/n1-new.pid")"
expect_code "the old certificate of n1 is refused" 403 --cacert "$CA" --cert "$TMP/n1-old.crt" \
  --key "$TMP/n1-old.key" -X POST -d '{}' "$URL/v1/nodes/n1/heartbeat"
body_has "  ... as another certificate" "another certificate"
expect_code "  ... and so is the session it gave" 403 --cacert "$CA" \
  -H "Authorization: Bearer $SESSION" -X POST -d '{}' "$URL/v1/nodes/n1/heartbeat"
body_has "  ... as another certificate's" "another certificate"

# A connection that never finishes its handshake is cut off at the
# request deadline (10 s), and the server answers meanwhile.
python3 - "$ADDR" > "$TMP/handshake.out" 2>&1 <<'EOF' &
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)))
s.sendall(b"\x16\x03")  # the start of a TLS record, then nothing
start = time.time()
s.settimeout(30)
try:
    data = s.recv(1)
except OSError:
    data = b""
print("closed after %.1f s" % (time.time() - start))
EOF
SLOW=$!
sleep 1
expect_code "the server answers while a handshake hangs" 200 --cacert "$CA" "$URL/healthz"
wait "$SLOW"
secs=$(sed -n 's/closed after \([0-9]*\)\..*/\1/p' "$TMP/handshake.out")
if [ -n "$secs" ] && [ "$secs" -ge 8 ] && [ "$secs" -le 13 ]; then echo "ok   a stalled handshake is cut off ($secs s)"; else
  echo "FAIL a stalled handshake: $(cat "$TMP/handshake.out")"; fail=1; fi

# A restart keeps the key sessions are signed with (the state directory):
# the agent goes on with its session. With a new key the session is
# refused, and the agent goes back to its certificate for a new one.
restart_server() {
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null
  "$SHOAL" server --listen "$ADDR" > "$TMP/server-$1.log" 2>&1 &
  SERVER_PID=$!
  PIDS="$PIDS $!"
}
logged_since() {  # logged_since LINE PATTERN: n1's agent logs PATTERN after its log line LINE (15 s at most)
  for _ in $(seq 150); do
    tail -n "+$1" "$TMP/n1-new.log" | grep -q "$2" && return 0; sleep 0.1
  done
  return 1
}
logged "$TMP/n1-new.log" 'node.session ' && echo "ok   the re-keyed n1 has a session" ||
  { echo "FAIL the re-keyed n1 has no session"; fail=1; }
MARK=$(wc -l < "$TMP/n1-new.log")
restart_server kept
wait_up n1 && echo "ok   n1 is up after a restart" || { echo "FAIL n1 is not up after a restart"; fail=1; }
sleep 1
if tail -n "+$MARK" "$TMP/n1-new.log" | grep -q 'session.refused' ||
  grep -q 'auth.refused' "$TMP/server-kept.log"; then
  echo "FAIL the restarted server refused n1's session"; cat "$TMP/server-kept.log"; fail=1; else
  echo "ok   ... and its session still holds"; fi
MARK=$(wc -l < "$TMP/n1-new.log")
rm "$SHOAL_STATE_DIR/job.key"
restart_server rekeyed
logged_since "$MARK" 'session.refused' && echo "ok   a server with a new key refuses the old session" ||
  { echo "FAIL the old session was not refused"; cat "$TMP/n1-new.log"; fail=1; }
logged_since "$MARK" 'registered.*certificate' && echo "ok   ... and the agent registers with its certificate" ||
  { echo "FAIL n1 did not register with its certificate"; cat "$TMP/n1-new.log"; fail=1; }
logged_since "$MARK" 'node.session ' && echo "ok   ... and takes a new session up" ||
  { echo "FAIL n1 took no new session"; cat "$TMP/n1-new.log"; fail=1; }

exit $fail
