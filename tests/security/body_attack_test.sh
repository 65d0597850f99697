#!/bin/sh
# Bodies an anonymous client or an ordinary user sends to make a listener
# buffer what it should refuse, against real `shoal server` and `shoal agent`
# processes: chunked bodies (no Content-Length, which cpp-httplib 0.11 reads
# without limit) and large bodies without credentials. Each must be refused
# before it is read: 411 for chunked, 401 without a token, 413 over the
# limit; nothing is stored, the process stays small and keeps answering.
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

start_cluster --allow-root-jobs
USER_TOKEN=$(user_token mallory)
NODE_TOKEN=$(cat "$SHOAL_STATE_DIR/node.token")

rss_mib() { awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$1/status"; }
# code <curl args...>: the HTTP status (000 when the connection was closed
# before an answer could be read).
code() { curl -s -o "$TMP/body" -w '%{http_code}' --max-time 20 "$@" 2>/dev/null; }
expect_code() {  # expect_code <name> <allowed codes, |-separated> <curl args...>
  name=$1; want=$2; shift 2
  got=$(code "$@")
  if echo "$got" | grep -Eqx "$want"; then echo "ok   $name ($got)"; else
    echo "FAIL $name: HTTP $got, want $want"; cat "$TMP/body"; echo; fail=1; fi
}
head -c 104857600 /dev/zero | tr '\0' 'a' > "$TMP/100m"
printf '{"command":"true","gpus":1,"name":"%s"}' "$(head -c 65536 /dev/zero | tr '\0' 'n')" > "$TMP/job.json"

# Chunked bodies: refused whether or not the caller has a token.
expect_code "server: small chunked submit with a token" 411 -X POST -H "Authorization: Bearer $USER_TOKEN" \
  -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/job.json" "$SHOAL_SERVER/v1/jobs"
for i in 1 2 3 4; do
  expect_code "server: 100 MB chunked submit #$i" "411|000" -X POST -H "Authorization: Bearer $USER_TOKEN" \
    -H 'Transfer-Encoding: chunked' -T "$TMP/100m" "$SHOAL_SERVER/v1/jobs"
  expect_code "agent: 100 MB chunked launch without a token #$i" "411|000" -X POST \
    -H 'Transfer-Encoding: chunked' -T "$TMP/100m" "$AGENT/v1/launch"
done
# Large bodies with a length but without credentials: 401 before the body is read.
expect_code "server: 100 MB body without a token" "401|000" -X POST --data-binary @"$TMP/100m" "$SHOAL_SERVER/v1/jobs"
expect_code "agent: 100 MB body without a token" "401|000" -X POST --data-binary @"$TMP/100m" "$AGENT/v1/launch"
expect_code "agent: a body with the node token but over the limit" "413|000" -X POST \
  -H "Authorization: Bearer $NODE_TOKEN" --data-binary @"$TMP/100m" "$AGENT/v1/launch"
expect_code "server: a body to a public path" 413 -X GET --data-binary @"$TMP/job.json" "$SHOAL_SERVER/healthz"
expect_code "server: no token, no body" 401 -X POST "$SHOAL_SERVER/v1/jobs"

# Nothing was stored, both still answer, and neither grew.
check "nothing was stored" 0 "^0$" -- sh -c "'$SHOAL' queue --all --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"jobs\"]))'"
expect_code "server still answers" 200 "$SHOAL_SERVER/healthz"
expect_code "agent still answers" 200 "$AGENT/healthz"
for p in "server $SERVER_PID" "agent $AGENT_PID"; do
  set -- $p
  rss=$(rss_mib "$2")
  if sanitized; then echo "note $1 RSS ${rss} MiB (a sanitizer build: the bound is checked without one)"
  elif [ "$rss" -lt 100 ]; then echo "ok   $1 RSS ${rss} MiB"; else echo "FAIL $1 RSS ${rss} MiB after the attacks"; fail=1; fi
done
# A good request with a length is still served after all this.
check "an ordinary submit works" 0 "Submitted job" -- env SHOAL_TOKEN="$USER_TOKEN" "$SHOAL" submit --wrap true
# What curl sends by default is taken as the docs show it: a `-d` body is
# form-encoded to curl (httplib would cap it at 8 KiB), a bare `-X POST` has
# no Content-Length.
printf '{"command":"%s","gpus":1,"hold":true}' "$(head -c 9000 /dev/zero | tr '\0' 'x')" > "$TMP/9k.json"
expect_code "curl -d with a 9 KB job" 201 -H "Authorization: Bearer $USER_TOKEN" -d @"$TMP/9k.json" "$SHOAL_SERVER/v1/jobs"
JOB=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["jobs"][0])' "$TMP/body")
expect_code "curl -X POST without a body" 200 -H "Authorization: Bearer $USER_TOKEN" -X POST \
  "$SHOAL_SERVER/v1/jobs/$JOB/cancel"
expect_code "an empty job body is bad JSON, not a transport error" 400 -H "Authorization: Bearer $USER_TOKEN" \
  -X POST "$SHOAL_SERVER/v1/jobs"
grep -q malformed "$TMP/body" || { echo "FAIL the empty body's error: $(cat "$TMP/body")"; fail=1; }
exit $fail
