#!/bin/sh
# The user commands against a real `shoal server` on loopback: submission
# (commands, --wrap, batch scripts with #SBATCH lines), the queue, show,
# cancel, tokens and who may do what, exit codes (0 ok, 1 refused, 2 usage,
# 3 unreachable, 4 denied), and state that survives a restart.
set -u
SHOAL=$1
TMP=$(mktemp -d)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
. "$(dirname "$0")/lib.sh"

STATE="$TMP/state"
start_server() {
  "$SHOAL" server --state-dir "$STATE" --listen 127.0.0.1:0 > "$TMP/server.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 100); do
    grep -qs "listening on" "$TMP/server.log" && break
    sleep 0.05
  done
  SHOAL_SERVER=$(grep -o '127\.0\.0\.1:[0-9]*' "$TMP/server.log" | head -1)
  export SHOAL_SERVER
}
stop_server() {
  kill "$SERVER_PID" && wait "$SERVER_PID"
  SERVER_PID=
}
# The CLI finds the server's unix socket through the state directory.
export SHOAL_STATE_DIR="$STATE"
unset SHOAL_TOKEN SHOAL_TOKEN_FILE
export HOME="$TMP/home"
start_server
[ -n "$SHOAL_SERVER" ] || { echo "FAIL server did not start"; cat "$TMP/server.log"; exit 1; }

check "submit command" 0 "Submitted job 1" -- "$SHOAL" submit --gpus 2 -t 30 -J train -- python3 train.py --lr 3
check "submit wrap" 0 "Submitted job 2" -- "$SHOAL" submit --wrap "sleep 100" -G 1
cat > "$TMP/job.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH -N 2
#SBATCH --gpus-per-node=8
#SBATCH --time=1:00:00
#SBATCH --array=0-3%2
srun python3 train.py
SCRIPT
check "submit script" 0 "Submitted job" -- "$SHOAL" submit "$TMP/job.sh"
printf '#!/bin/bash\n#SBATCH --gpus=1\n#SBATCH --frobnicate=a\necho hi\n' > "$TMP/bad.sh"
check "unknown #SBATCH option" 2 "bad.sh:3: option --frobnicate has no meaning in Shoal" -- "$SHOAL" submit "$TMP/bad.sh"
printf '#!/bin/bash\n#SBATCH --gpus=1\n#SBATCH --hint=nomultithread\necho hi\n' > "$TMP/slurmonly.sh"
check "Slurm-only #SBATCH option runs with a note" 0 "--hint=nomultithread: accepted; it has no meaning in Shoal" -- "$SHOAL" submit "$TMP/slurmonly.sh"
check "--strict refuses it" 2 "--strict: these options have no meaning in Shoal: --hint=nomultithread" -- "$SHOAL" submit --strict "$TMP/slurmonly.sh"
printf 'echo no interpreter line\n' > "$TMP/noshebang.sh"
check "a script needs #!" 2 "#!" -- "$SHOAL" submit "$TMP/noshebang.sh"
check "--parsable prints the id alone" 0 "^[0-9][0-9]*$" -- "$SHOAL" submit --parsable --wrap true
printf '#!/bin/bash\n#SBATCH --gpus=1\n#SBATCH -J bad\377name\necho hi\n' > "$TMP/utf8.sh"
check "invalid UTF-8 in a directive" 2 "not valid UTF-8" -- "$SHOAL" submit "$TMP/utf8.sh"
check "misspelt option" 2 "did you mean --partition" -- "$SHOAL" submit --partiton gpu --wrap true
check "negative gpus" 2 "gpus" -- "$SHOAL" submit --gpus=-1 --wrap true
check "nothing to run" 2 "nothing to run" -- "$SHOAL" submit --gpus 1
check "queue" 0 "train" -- "$SHOAL" queue
check "queue --noheader: the rows without the header" 0 "^ok$" -- sh -c "'$SHOAL' queue --noheader > '$TMP/rows' && grep -q train '$TMP/rows' && ! grep -q JOBID '$TMP/rows' && echo ok"
check "queue json" 0 "ok" -- sh -c "'$SHOAL' queue --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"jobs\"]) >= 3; print(\"ok\")'"
# Every command that prints data prints JSON with --json: one document, an object.
for c in "queue" "queue --all" "show 1" "history" "nodes" "top" "partition list" "account list" \
         "qos list" "reservation list" "token list"; do
  check "$c --json is JSON" 0 "^ok$" -- sh -c "'$SHOAL' $c --json | python3 -c 'import json,sys; assert isinstance(json.load(sys.stdin), dict); print(\"ok\")'"
done
check "queue by state" 0 "pending" -- "$SHOAL" queue --state pending
check "queue --start: no start foreseen without nodes" 0 "^1  *train .*N/A  *(null)" -- "$SHOAL" queue --start
check "queue bad state" 1 "unknown job state" -- "$SHOAL" queue --state bogus
check "show" 0 "waits for" -- "$SHOAL" show 1
check "show names the command" 0 "python3 train.py --lr 3" -- "$SHOAL" show 1
check "show missing" 1 "no job 99" -- "$SHOAL" show 99
check "nodes" 0 "NODE" -- "$SHOAL" nodes
check "drain unknown node" 1 "no node nope" -- "$SHOAL" drain nope --reason test

# Tokens and permissions: bob cannot touch the admin's jobs, nor list them.
BOB=$("$SHOAL" token create --user bob --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
check "token list" 0 "bob" -- "$SHOAL" token list
check "bob cannot cancel" 4 "belongs to another user" -- env SHOAL_TOKEN="$BOB" "$SHOAL" cancel 1
check "bob cannot list all" 4 "only admins" -- env SHOAL_TOKEN="$BOB" "$SHOAL" queue --all
check "bob cannot make tokens" 4 "admin" -- env SHOAL_TOKEN="$BOB" "$SHOAL" token create --user eve
check "bob submits" 0 "Submitted job" -- env SHOAL_TOKEN="$BOB" "$SHOAL" submit --wrap true
check "bad token" 4 "token" -- env SHOAL_TOKEN=shoal_0123456789ab_0000000000000000000000000000000000000000 "$SHOAL" queue
check "a refused token: the error says where it came from" 4 "the token came from .SHOAL_TOKEN)" -- env SHOAL_TOKEN=shoal_0123456789ab_0000000000000000000000000000000000000000 "$SHOAL" queue
echo shoal_0123456789ab_0000000000000000000000000000000000000000 > "$TMP/other-cluster.token"
check "  a token file: its path" 4 "the token came from .SHOAL_TOKEN_FILE ($TMP/other-cluster.token)" -- env SHOAL_TOKEN_FILE="$TMP/other-cluster.token" "$SHOAL" queue
check "unreachable" 3 "cannot reach" -- env SHOAL_SERVER=127.0.0.1:1 "$SHOAL" queue

check "hold" 0 "" -- "$SHOAL" hold 2
check "held shows" 0 "held" -- "$SHOAL" show 2
check "release" 0 "" -- "$SHOAL" release 2
check "cancel" 0 "" -- "$SHOAL" cancel 1
check "history" 0 "cancelled" -- "$SHOAL" history

# squeue's -t all, state codes and -o/--format.
check "queue -t all: a job that has just ended" 0 "^ *1 CA CANCELLED$" -- "$SHOAL" queue -t all -h -o "%.5A %t %T"
check "  not without it" 0 "^ok$" -- sh -c "'$SHOAL' queue -h -o '%A' > '$TMP/ids' && ! grep -qx 1 '$TMP/ids' && grep -qx 2 '$TMP/ids' && echo ok"
check "queue -t PD: squeue's codes" 0 "^2|PD|PENDING|.*sleep 100$" -- "$SHOAL" queue -t PD -o "%A|%t|%T|%o"
check "  in any case" 0 "^2 PENDING$" -- "$SHOAL" queue -t pd,r -h -o "%A %.7T"
check "--format: an array's pending tasks, its task ids" 0 "^3_\[0-3%2\]|0-3%2|3|1:00:00|2$" -- "$SHOAL" queue -o "%i|%K|%F|%l|%D"
check "  a size pads, right-justified with ." 0 "^    2|PD |$" -- "$SHOAL" queue -h -t PD -o "%.5A|%3t|"
check "  and cuts what is longer, the header too" 0 "^ok$" -- sh -c "'$SHOAL' queue -o '%.4i|%4A' > '$TMP/cut' && head -1 '$TMP/cut' | grep -qx 'JOBI|JOBI' && grep -qx '3_\\[0|3   ' '$TMP/cut' && echo ok"
check "  %% is a percent sign" 0 "^100% 2$" -- "$SHOAL" queue -h -t PD -o "100%% %A"
check "  an unknown field is an error" 2 "unknown field '%X'" -- "$SHOAL" queue -o "%i %X"
check "  so is a % at the end" 2 "'%.8' at the end names no field" -- "$SHOAL" queue -o "%i %.8"

# Everything acknowledged survives a restart.
stop_server
start_server
check "restart keeps the queue" 0 "sleep 100" -- "$SHOAL" show 2
check "restart keeps history" 0 "train" -- "$SHOAL" history

# A job's speed on each GPU model (--gpu-speed), shown and kept.
SPEEDY=$("$SHOAL" submit --parsable --gpus 1 --gpu-speed h100=1,a100=0.55 --wrap true)
check "show: the job's GPU speeds" 0 "^gpu speeds  *a100=0.55, h100=1 (--gpu-speed)$" -- "$SHOAL" show "$SPEEDY"
check "speeds: nothing learned yet" 0 "^USER  *NAME  *MODEL  *RATE/S" -- "$SHOAL" speeds
check "speeds: forgetting what was never learned" 0 "^forgot 0 models' speeds of .*'s job 'nothing'$" -- "$SHOAL" speeds --forget nothing
check "a speed must be above 0" 2 "'a100=0' is not MODEL=SPEED" -- "$SHOAL" submit --gpus 1 --gpu-speed h100=1,a100=0 --wrap true
exit $fail
