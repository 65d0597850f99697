#!/bin/sh
# The server's structured logs (docs/logs.md), as JSON at debug level: every
# line is one JSON object with a time, level, program and event; a job's and
# a node's state changes, the scheduling pass that started the job, each
# HTTP request (method, path, status, time, who) and a refused token are
# logged; and no secret is: neither the admin's token, a user's, a node's,
# nor the wrong token a stranger tried.
set -u
SHOAL=$1
command -v curl > /dev/null 2>&1 || { echo "[program] curl is not installed"; exit 77; }
TMP=$(mktemp -d)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

"$SHOAL" server --memory --plain-http --socket none --listen 127.0.0.1:0 --node-timeout 1h \
  --log-level debug --log-format json > "$TMP/stdout" 2> "$TMP/log" &
SERVER_PID=$!
for _ in $(seq 200); do grep -qs "admin token" "$TMP/stdout" && break; sleep 0.05; done
ADDR=$(grep -o '127\.0\.0\.1:[0-9]*' "$TMP/stdout" | head -1)
ADMIN=$(sed -n 's/.*admin token: *//p' "$TMP/stdout" | head -1)
[ -n "$ADDR" ] && [ -n "$ADMIN" ] || { echo "FAIL the server did not start"; cat "$TMP/stdout" "$TMP/log"; exit 1; }
URL=http://$ADDR
api() {  # api TOKEN METHOD PATH [BODY]
  curl -sS -X "$2" -H "Authorization: Bearer $1" ${4:+-d "$4"} "$URL$3"
}
token() {  # token USER ROLE
  api "$ADMIN" POST /v1/tokens "{\"user\":\"$1\",\"role\":\"$2\"}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])'
}
ALICE=$(token alice user)
NODE=$(token gpu01 node)
api "$NODE" POST /v1/nodes/register \
  '{"name":"gpu01","address":"127.0.0.1:1","cpus":64,"memory_mib":524288,"gpus":[{"index":0,"uuid":"GPU-a","model":"H100-SXM-80GB","memory_mib":81920}]}' > /dev/null
JOB=$(api "$ALICE" POST /v1/jobs '{"command":"python3 train.py","gpus":1,"time_limit_s":600}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0])')
api "$NODE" POST /v1/nodes/gpu01/heartbeat '{"running":[],"events":[]}' > /dev/null
WRONG=shoal_0123456789abcdef_not-a-real-secret-0123456789
check "a wrong token is refused" 0 "401" -- curl -sS -o /dev/null -w '%{http_code}' \
  -H "Authorization: Bearer $WRONG" "$URL/v1/jobs"
for _ in $(seq 100); do grep -q '"event":"job.state".*"to":"running"' "$TMP/log" && break; sleep 0.05; done
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=

python3 - "$TMP/log" > "$TMP/verdict" 2>&1 <<'PY'
import json, sys
bad = 0
for n, line in enumerate(open(sys.argv[1]), 1):
    try:
        e = json.loads(line)
    except ValueError:
        print("line", n, "is not JSON:", line.strip()); bad += 1; continue
    for key in ("time", "level", "program", "event"):
        if key not in e:
            print("line", n, "lacks", key); bad += 1
print("json lines ok" if bad == 0 else "json lines bad")
PY
check "every line is a JSON object with time, level, program and event" 0 "json lines ok" -- cat "$TMP/verdict"
check "the node's state change" 0 '"event":"node.state","node":"gpu01","from":"new","to":"up"' -- cat "$TMP/log"
check "the job's submission" 0 "\"event\":\"job.state\",\"job\":$JOB,\"user\":\"alice\",\"partition\":\"[a-z]*\",\"from\":\"new\",\"to\":\"pending\"" -- cat "$TMP/log"
check "the job's start" 0 "\"event\":\"job.state\",\"job\":$JOB,.*\"from\":\"pending\",\"to\":\"running\",\"nodes\":1" -- cat "$TMP/log"
check "the pass that started it" 0 '"level":"info",.*"event":"sched.pass",.*"started":1' -- cat "$TMP/log"
check "a user's request, with who asked" 0 '"event":"http.request","method":"POST","path":"/v1/jobs","status":201,"ms":[0-9.e+-]*,"who":"alice (user)"' -- cat "$TMP/log"
check "a node's beat, at debug" 0 '"level":"debug",.*"event":"http.request","method":"POST","path":"/v1/nodes/gpu01/heartbeat","status":200,.*"who":"gpu01 (node)"' -- cat "$TMP/log"
check "the refused token" 0 '"level":"warning",.*"event":"auth.refused","method":"GET","path":"/v1/jobs"' -- cat "$TMP/log"
check "  and its request, 401" 0 '"path":"/v1/jobs","status":401' -- cat "$TMP/log"
for secret in "$ADMIN" "$ALICE" "$NODE" "$WRONG"; do
  check "no token in the log (${secret%"${secret#??????????}"}...)" 1 "" -- grep -F -q "$secret" "$TMP/log"
done
# The token's public id (before its secret part) may be named; its secret never.
check "no secret part of a token either" 1 "" -- grep -F -q "${ALICE##*_}" "$TMP/log"

# At the default level (info), agents' beats are not logged.
"$SHOAL" server --memory --plain-http --socket none --listen 127.0.0.1:0 > "$TMP/stdout2" 2> "$TMP/log2" &
SERVER_PID=$!
for _ in $(seq 200); do grep -qs "admin token" "$TMP/stdout2" && break; sleep 0.05; done
ADDR=$(grep -o '127\.0\.0\.1:[0-9]*' "$TMP/stdout2" | head -1)
curl -sS -o /dev/null "http://$ADDR/healthz"
curl -sS -o /dev/null -H "Authorization: Bearer $WRONG" "http://$ADDR/v1/jobs"
sleep 0.2
check "info: text lines by default" 0 " warning auth.refused method=GET path=/v1/jobs peer=127.0.0.1:" -- cat "$TMP/log2"
check "info: health checks are not logged" 1 "" -- grep -q "healthz" "$TMP/log2"
exit $fail
