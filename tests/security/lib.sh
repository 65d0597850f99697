# Shared by the attack tests: a real `shoal server --plain-http` and one
# `shoal agent` (node n1, simulated GPUs) on loopback, with state under $TMP
# (tls_attack_test.sh has its own TLS cluster). The caller
# sets SHOAL and TMP, sources ../cli/lib.sh too, and calls stop_cluster on
# exit.
#   start_cluster [agent flags...]
# exports SHOAL_SERVER and SHOAL_STATE_DIR, and sets AGENT (http://host:port),
# SERVER_PID and AGENT_PID; it returns once the node is up.
SERVER_PID=
AGENT_PID=
start_cluster() {
  export SHOAL_STATE_DIR="$TMP/state" HOME="$TMP/home"
  unset SHOAL_TOKEN SHOAL_TOKEN_FILE SHOAL_SOCKET
  mkdir -p "$HOME"
  "$SHOAL" server --plain-http --state-dir "$SHOAL_STATE_DIR" --listen 127.0.0.1:0 > "$TMP/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do grep -qs "listening on" "$TMP/server.log" && break; sleep 0.05; done
  SHOAL_SERVER=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
  [ -n "$SHOAL_SERVER" ] || { echo "FAIL server did not start"; cat "$TMP/server.log"; exit 1; }
  export SHOAL_SERVER
  "$SHOAL" agent --server "$SHOAL_SERVER" --token-file "$SHOAL_STATE_DIR/node.token" --name n1 \
    --listen 127.0.0.1:0 --state-dir "$TMP/agent" --gpus simulated:dgx-h100 "$@" > "$TMP/agent.log" 2>&1 &
  AGENT_PID=$!
  for _ in $(seq 100); do "$SHOAL" nodes 2>/dev/null | grep -q '^n1 *up' && break; sleep 0.05; done
  "$SHOAL" nodes 2>/dev/null | grep -q '^n1 *up' || { echo "FAIL the agent did not join"; cat "$TMP/agent.log"; exit 1; }
  AGENT="http://$(grep -o 'listening on [^ ,]*' "$TMP/agent.log" | head -1 | sed 's/listening on //; s,^http://,,')"
}
stop_cluster() {
  [ -n "$AGENT_PID" ] && kill "$AGENT_PID" 2>/dev/null && wait "$AGENT_PID" 2>/dev/null
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  AGENT_PID=
  SERVER_PID=
}
# A token for a new user: user_token NAME
user_token() {
  "$SHOAL" token create --user "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
# Whether $SHOAL is a sanitizer build: its shadow memory and allocation
# quarantine dominate the RSS, so memory bounds are only checked without one.
sanitized() { ldd "$SHOAL" 2>/dev/null | grep -q 'lib[at]san'; }
