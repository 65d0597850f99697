#!/bin/sh
# `shoal qos` and `shoal reservation` through `shoal up` (two simulated
# 8-GPU nodes): QoS are made and listed, a job must name a known one and gets
# the default otherwise, a per-user limit holds a job back with its reason; a
# reservation keeps its node for its users (SLURM_JOB_RESERVATION set), a
# maintenance window keeps a long job off until it is deleted; a non-admin may
# look but not change (exit 4); bad values are refused before anything is sent.
set -u
SHOAL=$(realpath "$1")
TMP=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'stop_up; rm -rf "$TMP"' EXIT
start_up --nodes 2 --profile dgx-h100

wait_for() {  # wait_for <job> <pattern in shoal show>: up to 20 s
  for _ in $(seq 200); do "$SHOAL" show "$1" 2>/dev/null | grep -q -- "$2" && return 0; sleep 0.1; done
  return 1
}

# QoS.
check "qos list: none yet" 0 "no QoS" -- "$SHOAL" qos list
check "a --qos on a cluster without QoS is kept" 0 "Submitted job" -- "$SHOAL" submit -W -q high -o /dev/null --wrap true
check "qos set creates the first" 0 "must name one of them" -- "$SHOAL" qos set normal --default --max-gpus-per-user 8
check "qos set: another that preempts it" 0 "preempt=qos" -- "$SHOAL" qos set high --priority 10 --preempt normal
check "qos list" 0 "^normal\* *0  *-  *8  *-  *-  *-$" -- "$SHOAL" qos list
check "  with whom each preempts" 0 "^high  *10  *-  *-  *-  *-  *normal$" -- "$SHOAL" qos list
check "qos show" 0 "^GPUs per user  *8 at once$" -- "$SHOAL" qos show normal
check "qos set changes only what it is given" 0 "^Updated QoS normal$" -- "$SHOAL" qos set normal --max-time 2:00:00
check "  the limit kept" 0 '"max_gpus_per_user": 8' -- "$SHOAL" qos show normal --json
check "an unknown QoS is refused" 1 "unknown QoS 'hihg' (the cluster's: normal, high)" -- \
  "$SHOAL" submit -q hihg --wrap true
check "a job that names none" 0 "^[0-9][0-9]*$" -- "$SHOAL" submit --parsable -G 8 -t 30 -o /dev/null --wrap 'sleep 60'
first=$(cat "$TMP/out")
check "  gets the default" 0 '"qos": "normal"' -- "$SHOAL" show "$first" --json
check "a second 8-GPU job of the user" 0 "^[0-9][0-9]*$" -- "$SHOAL" submit --parsable -G 8 -t 30 -o /dev/null --wrap true
second=$(cat "$TMP/out")
wait_for "$second" "qos_limit"
check "  waits at the QoS's limit" 0 "holds 8 of the 8 GPUs QoS 'normal' allows" -- "$SHOAL" show "$second"
check "past the QoS's max time" 0 "^[0-9][0-9]*$" -- "$SHOAL" submit --parsable -t 3:00:00 -o /dev/null --wrap true
slow=$(cat "$TMP/out")
wait_for "$slow" "qos_limit"
check "  waits with the reason" 0 "exceeds QoS 'normal' maximum 02:00:00" -- "$SHOAL" show "$slow"
check "a QoS in use is not deleted" 1 "uses QoS 'normal'" -- "$SHOAL" qos delete normal
"$SHOAL" cancel "$first" "$second" "$slow" > /dev/null 2>&1
check "qos delete" 0 "^Deleted qos high$" -- "$SHOAL" qos delete high
check "qos set --max-time 0: no limit" 0 "^Updated QoS normal$" -- "$SHOAL" qos set normal --max-time 0

# Reservations.
me=$(id -un)
check "reservation list: none" 0 "no reservations" -- "$SHOAL" reservation list
check "reservation create by node count" 0 "^Reservation created: team on node01 from " -- \
  "$SHOAL" reservation create team --node-count 1 --users "$me" --duration 1h
check "reservation list" 0 "^team  *active  .* node01  *8  *users $me$" -- "$SHOAL" reservation list
check "reservation show" 0 "^duration  *01:00:00$" -- "$SHOAL" reservation show team
check "a job in it runs there" 0 "Submitted job" -- "$SHOAL" submit -W --reservation team -G 2 -o res.out \
  --wrap 'echo "$SLURM_JOB_RESERVATION on $SLURMD_NODENAME"'
check "  with SLURM_JOB_RESERVATION" 0 "^team on node01$" -- cat res.out
check "the same node twice at once is refused" 1 "node 'node01' is in reservation 'team'" -- \
  "$SHOAL" reservation create other --nodes node01 --users "$me" --duration 10m
check "a maintenance window on node02 in an hour" 0 "^Reservation created: maint on node02" -- \
  "$SHOAL" reservation create maint --nodes node02 --start now+1h --duration 2h --maintenance
check "  listed as planned, for nobody" 0 "^maint  *planned  .* nobody (maintenance)$" -- "$SHOAL" reservation list
check "a 2-hour job outside them" 0 "^[0-9][0-9]*$" -- "$SHOAL" submit --parsable -t 2:00:00 -o /dev/null --wrap true
long=$(cat "$TMP/out")
wait_for "$long" "reserved"
check "  waits: its nodes are reserved" 0 "waits for  *reservation: the nodes it could use now are reserved: .team. .*, .maint." -- "$SHOAL" show "$long"
check "a 30-minute job runs before the window" 0 "Submitted job" -- "$SHOAL" submit -W -t 30 -o /dev/null --wrap true
check "reservation delete" 0 "^Deleted reservation maint$" -- "$SHOAL" reservation delete maint
check "  the long job runs" 0 "" -- wait_for "$long" "state  *completed"

# A user may look, not change, and not use a reservation that is not for them.
BOB=$("$SHOAL" token create --user bob --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
check "bob lists QoS" 0 "^normal" -- env SHOAL_TOKEN="$BOB" "$SHOAL" qos list
check "bob lists reservations" 0 "^team " -- env SHOAL_TOKEN="$BOB" "$SHOAL" reservation list
check "bob cannot set a QoS" 4 "^shoal qos: only admins change QoS$" -- env SHOAL_TOKEN="$BOB" "$SHOAL" qos set normal --priority 5
check "bob cannot reserve" 4 "only admins make reservations" -- \
  env SHOAL_TOKEN="$BOB" "$SHOAL" reservation create mine --node-count 1 --users bob --duration 1h
check "bob cannot use team" 4 "reservation 'team' is for users $me" -- \
  env SHOAL_TOKEN="$BOB" "$SHOAL" submit --reservation team --wrap true
check "no such reservation" 1 "no reservation 'nope'" -- "$SHOAL" submit --reservation nope --wrap true

# Bad values.
check "a start that is no time" 1 "unsupported form" -- "$SHOAL" reservation create x --start soon --duration 1h --users "$me" --node-count 1
check "neither end nor duration" 1 "give the reservation's --end or its --duration" -- \
  "$SHOAL" reservation create x --users "$me" --node-count 1
check "for nobody" 1 "needs users or accounts" -- "$SHOAL" reservation create x --node-count 1 --duration 1h
check "more nodes than there are" 1 "asked for 3 nodes" -- "$SHOAL" reservation create x --node-count 3 --users "$me" --duration 1h
check "a negative QoS limit" 2 "whole number" -- "$SHOAL" qos set normal --max-jobs-per-user=-1
check "preempting an unknown QoS" 1 "'nosuch', which does not exist" -- "$SHOAL" qos set normal --preempt nosuch
exit $fail
