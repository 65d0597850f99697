#!/bin/sh
# shoal nodes and GET /v1/nodes at scale: pages in name order with a cursor,
# filters by state and model, the summary by model and state, and a cluster
# of more than 64 nodes summarised unless asked for every node.
# Usage: nodes_test.sh SHOAL
set -u
SHOAL=$1
command -v curl > /dev/null 2>&1 || { echo "[program] curl is not installed (scripts/install-deps.sh)"; exit 77; }
TMP=$(mktemp -d)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fake_node.sh"

start_memory_server
for n in n3 n1 n2; do register_node "$n" 8; done
api POST /v1/nodes/n2/drain '{"reason":"bad fan"}' > /dev/null

check "a small cluster lists every node" 0 "^n2  *drain" -- "$SHOAL" nodes
check "a page of two, with the next one's cursor" 0 '"next_after":"n2"' -- api GET '/v1/nodes?limit=2'
check "the page after the cursor" 0 '^ok$' -- sh -c "curl -sS -f -H 'Authorization: Bearer $SHOAL_TOKEN' '$SHOAL_SERVER/v1/nodes?limit=2&after=n2' | python3 -c 'import json,sys; d=json.load(sys.stdin); assert [n[\"name\"] for n in d[\"nodes\"]] == [\"n3\"] and \"next_after\" not in d, d; print(\"ok\")'"
check "the whole listing, streamed" 0 '^3$' -- sh -c "curl -sS -f -H 'Authorization: Bearer $SHOAL_TOKEN' '$SHOAL_SERVER/v1/nodes' | python3 -c 'import json,sys; print(len(json.load(sys.stdin)[\"nodes\"]))'"
check "a limit out of range is refused" 0 '^400$' -- curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_SERVER/v1/nodes?limit=0"
check "an unknown state is refused" 0 '^400$' -- curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SHOAL_TOKEN" "$SHOAL_SERVER/v1/nodes?state=sleepy"
check "--state lists those nodes only" 0 '^ok$' -- sh -c "'$SHOAL' nodes --state up > '$TMP/d' && grep -q '^n1 ' '$TMP/d' && grep -q '^n3 ' '$TMP/d' && ! grep -q '^n2 ' '$TMP/d' && echo ok"
check "--model lists nothing of a model no node has" 0 '^ok$' -- sh -c "'$SHOAL' nodes --model A100-SXM-80GB > '$TMP/m' && ! grep -q '^n' '$TMP/m' && echo ok"
check "--summary: nodes and GPUs by model and state" 0 "H100-SXM-80GB  *up  *2  *0/16" -- "$SHOAL" nodes --summary
check "a bad --state is a usage error" 1 "unknown node state" -- "$SHOAL" nodes --state sleepy

# Past 64 nodes the default is the summary; --all lists them.
k=0  # (register_node uses i)
while [ "$k" -lt 70 ]; do register_node "m$(printf %03d "$k")" 1; k=$((k + 1)); done
check "a large cluster is summarised" 0 "73 nodes; .shoal nodes --all. lists each" -- "$SHOAL" nodes
check "--all lists every node" 0 '^ok$' -- sh -c "[ \"\$('$SHOAL' nodes --all | grep -c '^m0')\" = 70 ] && echo ok"
check "--json gives the summary as JSON" 0 '"nodes": 73' -- "$SHOAL" nodes --json
exit $fail
