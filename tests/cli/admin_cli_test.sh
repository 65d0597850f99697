#!/bin/sh
# `shoal partition` and `shoal account` through `shoal up` (two simulated
# nodes): list and show what the server has, set creates a record or changes
# only the fields given, the changes take effect (a job runs in a new default
# partition, waits while its partition is down, is refused past its maximum
# time), a non-admin may look but not change (exit 4), and bad values are
# usage errors (exit 2) told before anything is sent.
set -u
SHOAL=$(realpath "$1")
TMP=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'stop_up; rm -rf "$TMP"' EXIT
start_up --nodes 2 --profile dgx-h100

# What `shoal up` starts with: one partition, the default, with both nodes; no accounts.
check "partition list: the default partition" 0 "^default  *yes  *up  *2  *16 " -- "$SHOAL" partition list
check "partition list --json: the API's answer" 0 "ok" -- sh -c "'$SHOAL' partition list --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"partitions\"][0][\"name\"] == \"default\" and d[\"partitions\"][0][\"default\"]; print(\"ok\")'"
check "partition show" 0 "^default  *yes" -- "$SHOAL" partition show default
check "partition show: an unknown one" 1 "no partition 'nope'" -- "$SHOAL" partition show nope
check "account list: none yet" 0 "no accounts" -- "$SHOAL" account list

# set creates, then changes only what it is given.
check "partition set creates" 0 "^Created partition gpu$" -- "$SHOAL" partition set gpu \
  --max-time 2-00:00:00 --default-time 1:00:00 --max-gpus 8 --priority-tier 2 \
  --idle-util-pct 2.5 --idle-minutes 10 --idle-action cancel --require-acceptance
check "  list shows it, beside the default" 0 "^gpu  *no  *up  *0  *0  *2-00:00:00  *01:00:00  *-  *8  *all  *2  *<2.5% 10m cancel  *required$" -- \
  "$SHOAL" partition list
check "  show: its max time" 0 "^max time  *2-00:00:00$" -- "$SHOAL" partition show gpu
check "  show: what idle GPUs bring" 0 "under 2.5% for 10 minutes is cancelled" -- "$SHOAL" partition show gpu
check "partition set changes" 0 "^Updated partition gpu$" -- "$SHOAL" partition set gpu \
  --max-nodes 2 --no-require-acceptance --accounts ALL
check "  the fields given change" 0 '"max_nodes_per_job": 2' -- "$SHOAL" partition show gpu --json
check "  the others keep their values" 0 '"max_time_s": 172800' -- "$SHOAL" partition show gpu --json
check "  acceptance off" 0 '"require_acceptance": false' -- "$SHOAL" partition show gpu --json
check "  the idle rule kept" 0 '"idle_action": "cancel"' -- "$SHOAL" partition show gpu --json
check "a partition without nodes: the server refuses the job" 1 "no node in partition 'gpu'" -- \
  "$SHOAL" submit -p gpu --wrap true

# --default: the nodes that name no partition serve the default one.
check "partition set --default" 0 "^Updated partition gpu$" -- "$SHOAL" partition set gpu --default
check "  it is the default" 0 "^gpu  *yes  *up  *2  *16 " -- "$SHOAL" partition list
check "  the old one is not" 0 "^default  *no " -- "$SHOAL" partition list
check "a job in it runs" 0 "Submitted job" -- "$SHOAL" submit -W -p gpu -o /dev/null --wrap true
check "past its max time: refused" 1 "exceeds partition 'gpu' maximum 2-00:00:00" -- \
  "$SHOAL" submit -p gpu -t 3-00:00:00 --wrap true

# --down: its jobs wait, and start once it is up again.
check "partition set --down" 0 "" -- "$SHOAL" partition set gpu --down
check "  list says down" 0 "^gpu  *yes  *down " -- "$SHOAL" partition list
check "  a job submitted to it" 0 "^[0-9][0-9]*$" -- "$SHOAL" submit --parsable -p gpu -o /dev/null --wrap true
job=$(cat "$TMP/out")
for _ in $(seq 100); do "$SHOAL" show "$job" 2>/dev/null | grep -q "is down" && break; sleep 0.1; done
check "  waits: the partition is down" 0 "partition 'gpu' is down" -- "$SHOAL" show "$job"
check "  queue -p gpu lists it" 0 "^$job .* gpu  *pending" -- "$SHOAL" queue -p gpu
check "  queue -p default does not" 0 "" -- sh -c "! '$SHOAL' queue -p default | grep -q '^$job '"
check "partition set --up" 0 "" -- "$SHOAL" partition set gpu --up
for _ in $(seq 200); do "$SHOAL" show "$job" 2>/dev/null | grep -q 'state.*completed' && break; sleep 0.1; done
check "  and the job runs" 0 "state  *completed" -- "$SHOAL" show "$job"

# Accounts.
check "account set creates the first" 0 "must name one of them" -- "$SHOAL" account set vision --shares 2 --max-gpus 64
cp "$TMP/out" "$TMP/first.out"  # check writes each command's output to $TMP/out
check "  says so" 0 "" -- grep -qx "Created account vision" "$TMP/first.out"
check "another" 0 "^Created account nlp$" -- "$SHOAL" account set nlp
check "account set changes" 0 "^Updated account vision$" -- "$SHOAL" account set vision --max-gpus 8
check "  list: shares kept, GPUs changed" 0 "^vision  *2  *67%  *8  *0.00$" -- "$SHOAL" account list
check "  a new one: one share, no limit" 0 "^nlp  *1  *33%  *-  *0.00$" -- "$SHOAL" account list
check "account show" 0 "^max GPUs  *8 at once$" -- "$SHOAL" account show vision
check "account show --json" 0 '"shares": 2' -- "$SHOAL" account show vision --json
check "account show: an unknown one" 1 "no account 'nope'" -- "$SHOAL" account show nope
check "partition set --accounts" 0 "" -- "$SHOAL" partition set default --accounts nlp
check "  account show: the partitions that allow it" 0 "^partitions  *gpu$" -- "$SHOAL" account show vision

# A user may look, not change.
BOB=$("$SHOAL" token create --user bob --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
check "bob lists partitions" 0 "^gpu " -- env SHOAL_TOKEN="$BOB" "$SHOAL" partition list
check "bob lists accounts" 0 "^vision " -- env SHOAL_TOKEN="$BOB" "$SHOAL" account list
check "bob cannot set a partition" 4 "^shoal partition: only admins change partitions$" -- \
  env SHOAL_TOKEN="$BOB" "$SHOAL" partition set gpu --down
check "bob cannot create one" 4 "only admins" -- env SHOAL_TOKEN="$BOB" "$SHOAL" partition set mine
check "bob cannot set an account" 4 "^shoal account: only admins change accounts$" -- \
  env SHOAL_TOKEN="$BOB" "$SHOAL" account set vision --shares 100
check "  nothing changed" 0 "^gpu  *yes  *up " -- "$SHOAL" partition list
check "  nor there" 0 "^vision  *2 " -- "$SHOAL" account list

# Bad values: usage errors, exit 2, before anything changes.
check "bad --max-time" 2 "^shoal partition: --max-time: 'soon' is not a time" -- "$SHOAL" partition set gpu --max-time soon
check "--max-time past a year" 2 "more than 365 days" -- "$SHOAL" partition set gpu --max-time 400-00:00:00
check "negative --max-gpus" 2 "'-1' is not a whole number from 0" -- "$SHOAL" partition set gpu --max-gpus=-1
check "--max-nodes not a number" 2 "'two' is not a whole number" -- "$SHOAL" partition set gpu --max-nodes two
check "--idle-util-pct past 100" 2 "'101' is not a percentage from 0 to 100" -- "$SHOAL" partition set gpu --idle-util-pct 101
check "--idle-action" 2 "--idle-action: kill not in {notify,cancel}" -- "$SHOAL" partition set gpu --idle-action kill
check "--up with --down" 2 "--up excludes --down" -- "$SHOAL" partition set gpu --up --down
check "--accounts with a bad name" 2 "'a b' is not an account name" -- "$SHOAL" partition set gpu --accounts 'x,a b'
check "a bad partition name" 2 "is not a partition name" -- "$SHOAL" partition set 'no/slash'
check "default time past the max time" 2 "the default time 3-00:00:00 would be more than the max time 2-00:00:00 (shoal partition set --help)" -- \
  "$SHOAL" partition set gpu --default-time 3-00:00:00
check "--shares 0" 2 "^shoal account: --shares: '0' is not a number more than 0" -- "$SHOAL" account set vision --shares 0
check "--max-gpus for an account" 2 "whole number" -- "$SHOAL" account set vision --max-gpus lots
check "set needs a name" 2 "NAME is required" -- "$SHOAL" account set
check "  nothing changed by them" 0 '"max_time_s": 172800' -- "$SHOAL" partition show gpu --json
exit $fail
