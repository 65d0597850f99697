#!/bin/sh
# `shoal run` (srun), `shoal alloc` (salloc) and the srun and scontrol of a
# job, through `shoal up` (two simulated nodes): steps over the allocation's
# nodes with their tasks' output (labelled), exit codes as srun gives them,
# --kill-on-bad-exit, the environment that travels (--export), a step
# cancelled by Ctrl-C, a batch script that fans out with srun, and the
# environment a batch script gets (--export, SLURM_*, --wait).
set -u
SHOAL=$(realpath "$1")
TMP=$(mktemp -d)
. "$(dirname "$0")/lib.sh"
trap 'stop_up; rm -rf "$TMP"' EXIT
start_up --nodes 2 --profile dgx-h100

# Outside a job: an allocation for the step alone, given back after it.
check "run over two nodes" 0 "" -- "$SHOAL" run -N 2 --ntasks-per-node 2 -l sh -c 'echo "task $SLURM_PROCID of $SLURM_NTASKS on node $SLURM_NODEID"'
cp "$TMP/out" "$TMP/run.out"  # check writes each command's output to $TMP/out
for r in 0 1 2 3; do
  check "  task $r, labelled" 0 "" -- grep -qx "$r: task $r of 4 on node $((r / 2))" "$TMP/run.out"
done
check "run gives the task's exit code" 7 "" -- "$SHOAL" run -n 1 sh -c 'exit 7'
check "run: no program" 2 "nothing to run" -- "$SHOAL" run -n 2
check "run: an unknown option" 2 "unknown option --bogus" -- "$SHOAL" run --bogus true
check "run without a shell: the words as they are" 0 "a  b|c" -- "$SHOAL" run printf '%s|%s\n' 'a  b' c
check "run -w: on the listed node" 0 "^node02$" -- "$SHOAL" run -w node02 printenv SLURMD_NODENAME
check "run -x: never on the excluded node" 0 "^node02$" -- "$SHOAL" run -x node01 printenv SLURMD_NODENAME
check "submit -w: a node that is not there" 1 "no node is named 'nosuch'" -- "$SHOAL" submit -w nosuch --wrap true
# The last run's job ends once its node reports the end (a heartbeat later).
check "the allocations are given back" 0 "" -- sh -c "for i in \$(seq 100); do '$SHOAL' queue | grep -q running || exit 0; sleep 0.1; done; exit 1"
FOO=from-here check "the environment travels" 0 "^from-here$" -- "$SHOAL" run printenv FOO
FOO=from-here check "--export=NONE" 1 "" -- "$SHOAL" run --export=NONE printenv FOO
check "--gpus-per-task: a GPU each" 0 "" -- "$SHOAL" run -N 1 --gpus-per-node 2 --ntasks-per-node 2 --gpus-per-task 1 -l printenv CUDA_VISIBLE_DEVICES
cp "$TMP/out" "$TMP/gpus.out"
check "  task 0 sees GPU 0" 0 "" -- grep -qx "0: 0" "$TMP/gpus.out"
check "  task 1 sees GPU 1" 0 "" -- grep -qx "1: 1" "$TMP/gpus.out"

# srun -l pads the rank to the widest one's digits; the job's partition is named.
check "run -l with 12 tasks" 0 "^ 0: x$" -- "$SHOAL" run -N 2 --ntasks-per-node 6 -l echo x
cp "$TMP/out" "$TMP/labels.out"
check "  the last task's label" 0 "^11: x$" -- cat "$TMP/labels.out"
check "SLURM_JOB_PARTITION without -p" 0 "^default$" -- "$SHOAL" run printenv SLURM_JOB_PARTITION

# scontrol's words abbreviate; the host list defaults to the job's.
ln -s "$SHOAL" "$TMP/scontrol"
SLURM_JOB_NODELIST='gpu[01-02]' check "scontrol show hostname" 0 "^gpu02$" -- "$TMP/scontrol" show hostname
check "scontrol sho hostl" 0 "^gpu\[01-03\]$" -- "$TMP/scontrol" sho hostl gpu01,gpu02,gpu03
check "scontrol: what it does not know" 2 "knows" -- "$TMP/scontrol" show host gpu01

# srun --jobid: a step in a running job of one's own, from outside it.
check "submit a job to step into" 0 "Submitted job" -- "$SHOAL" submit --gpus 1 -o sleeper.out --wrap 'sleep 60'
sleeper=$(grep -o '[0-9]*' "$TMP/out" | head -1)
for _ in $(seq 200); do "$SHOAL" show "$sleeper" 2>/dev/null | grep -q 'state.*running' && break; sleep 0.1; done
check "run --jobid: in that job" 0 "^$sleeper$" -- "$SHOAL" run --jobid "$sleeper" -n 1 printenv SLURM_JOB_ID
check "  and the job goes on" 0 "running" -- "$SHOAL" show "$sleeper"
check "show: a GPU-only job has the node's CPUs and memory, not 0" 0 "GPUs [0-9]*, the node's CPUs (none reserved), memory not limited" -- "$SHOAL" show "$sleeper"
# squeue --start: a job that waits for the sleeper's GPU, with when and where.
"$SHOAL" submit --gpus 16 -J startsoon --wrap true > "$TMP/out" 2>&1
waiter=$(grep -o '[0-9]*' "$TMP/out" | head -1)
for _ in $(seq 50); do "$SHOAL" queue --start | grep -q "^$waiter .*T[0-9]" && break; sleep 0.1; done
check "queue --start: when and on which nodes a waiting job starts" 0 "^$waiter  *startsoon .* 20[0-9-]*T[0-9:]*  *node\[01-02\]  *(resources)" -- "$SHOAL" queue --start
"$SHOAL" cancel "$waiter" > /dev/null
"$SHOAL" cancel "$sleeper" > /dev/null

# Job arrays: pending tasks are one line of the queue (squeue's 7_[2-5%2]),
# and ARRAY_INDEX names one task for cancel and show.
check "submit an array of 6, 2 at a time" 0 "" -- "$SHOAL" submit --parsable --array=0-5%2 -o /dev/null --wrap 'sleep 60'
array=$(cat "$TMP/out")
for _ in $(seq 100); do [ "$("$SHOAL" queue | grep -c running)" = 2 ] && break; sleep 0.1; done
check "queue: the pending tasks as one line" 0 "^${array}_\[2-5%2\] " -- "$SHOAL" queue
check "show ARRAY_INDEX" 0 "^array task  *${array}_1 (array 0-5%2)" -- "$SHOAL" show "${array}_1"
check "cancel ARRAY_INDEX: that task alone" 0 "" -- "$SHOAL" cancel "${array}_3"
check "  it is cancelled" 0 "cancelled" -- "$SHOAL" show $((array + 3))
check "  the others wait on" 0 "^${array}_\[2,4-5%2\] " -- "$SHOAL" queue
check "cancel ARRAY_INDEX: no such task" 1 "job array $array has no task 9" -- "$SHOAL" cancel "${array}_9"
check "cancel the array: every task" 0 "" -- "$SHOAL" cancel "$array"
for _ in $(seq 100); do "$SHOAL" queue | grep -q "${array}" || break; sleep 0.1; done
check "  none left" 0 "" -- sh -c "! '$SHOAL' queue | grep -q '^$array\|($array'"

# shoal alloc: steps from a command that runs here.
check "alloc then run inside it" 0 "inside job" -- "$SHOAL" alloc -N 2 -- sh -c \
  "echo inside job \$SHOAL_JOB_ID; '$SHOAL' run -n 2 -l hostname && scontrol_out=\$('$SHOAL' run -n 1 printenv SLURM_STEP_ID) && echo step \$scontrol_out"
cp "$TMP/out" "$TMP/alloc.out"
check "  its steps are numbered from 0 (Slurm's)" 0 "" -- grep -qx "step 1" "$TMP/alloc.out"

# --kill-on-bad-exit: one failed task ends the others at once.
start=$(date +%s)
check "--kill-on-bad-exit" 3 "" -- "$SHOAL" run -N 2 -K sh -c '[ "$SLURM_PROCID" = 0 ] && exit 3; sleep 60'
check "  the others did not run on" 0 "" -- test $(( $(date +%s) - start )) -lt 30

# Ctrl-C (SIGINT) cancels the step and the allocation.
"$SHOAL" run -N 1 sh -c 'echo started; sleep 60' > "$TMP/sigint.out" 2>&1 &
RUN=$!
for _ in $(seq 100); do grep -q started "$TMP/sigint.out" && break; sleep 0.1; done
kill -INT "$RUN"
for _ in $(seq 100); do kill -0 "$RUN" 2>/dev/null || break; sleep 0.1; done
check "Ctrl-C ends shoal run" 0 "" -- sh -c "! kill -0 $RUN 2>/dev/null"
check "  with the step cancelled" 0 "cancelling step" -- cat "$TMP/sigint.out"

# A batch script: runs once, fans out with srun, scontrol names the hosts.
cat > fan.sh <<'SH'
#!/bin/sh
#SBATCH -N 2 --ntasks-per-node=2 -o fan-%j.out
echo "script once on $(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)"
srun sh -c 'echo "task $SLURM_PROCID"'
srun -n 1 false
echo "srun said $?"
SH
check "submit the fan-out script" 0 "Submitted job" -- "$SHOAL" submit fan.sh
job=$(grep -o '[0-9]*' "$TMP/out" | head -1)
for _ in $(seq 200); do "$SHOAL" show "$job" 2>/dev/null | grep -q 'state.*completed' && break; sleep 0.1; done
check "  the script ran once" 0 "" -- test "$(grep -c 'script once on 127.0.1.1' "fan-$job.out")" = 1
for r in 0 1 2 3; do
  check "  srun task $r" 0 "" -- grep -qx "task $r" "fan-$job.out"
done
check "  srun's exit code reaches the script" 0 "" -- grep -qx "srun said 1" "fan-$job.out"
check "logs --json: the output as JSON objects" 0 "^ok$" -- sh -c "'$SHOAL' logs --json $job | python3 -c 'import json,sys; p=[json.loads(l) for l in sys.stdin]; assert p and p[0][\"job\"] == $job and p[0][\"offset\"] == 0; assert \"srun said 1\" in \"\".join(x[\"data\"] for x in p); print(\"ok\")'"
check "shoal show lists the steps" 0 "steps" -- "$SHOAL" show "$job"

# sbatch's environment: the submitting shell's variables travel (--export),
# the job's SLURM_* are its own, --wait gives the job's exit code.
cat > env.sh <<'SH'
#!/bin/sh
echo "LR=${LR:-unset} KEEP=${KEEP:-unset} SET=${SET:-unset} tasks=$SLURM_NTASKS dir=$SLURM_SUBMIT_DIR"
exit 4
SH
LR=0.1 KEEP=yes check "submit --wait: the job's exit code" 4 "" -- "$SHOAL" submit --wait -o env-all.out -n 3 env.sh
check "  the shell's variables went with it" 0 "LR=0.1 KEEP=yes SET=unset tasks=3 dir=$TMP/work" -- cat env-all.out
LR=0.1 KEEP=yes check "submit --export=KEEP,SET=1" 4 "" -- "$SHOAL" submit -W -o env-some.out --export=KEEP,SET=1 env.sh
check "  only those" 0 "LR=unset KEEP=yes SET=1" -- cat env-some.out
LR=0.1 check "submit --export=NONE" 4 "" -- "$SHOAL" submit -W -o env-none.out --export=NONE env.sh
check "  none of them" 0 "LR=unset KEEP=unset SET=unset" -- cat env-none.out
# SLURM_JOB_CPUS_PER_NODE as sbatch sets it: each node's CPUs, compressed.
check "submit: SLURM_JOB_CPUS_PER_NODE" 0 "" -- "$SHOAL" submit -W -N 2 -c 4 --ntasks-per-node=2 -o cpn.out --wrap 'echo "cpn=$SLURM_JOB_CPUS_PER_NODE"'
check "  8 CPUs on each of the 2 nodes" 0 "^cpn=8(x2)$" -- cat cpn.out

# --dependency joined with ?: one satisfied dependency is enough.
check "a job that fails" 1 "Submitted job" -- "$SHOAL" submit -W -o /dev/null --wrap 'exit 1'
failed=$(grep -o '[0-9]*' "$TMP/out" | head -1)
check "submit -d afterok:F?afterany:F: starts on afterany" 0 "" -- "$SHOAL" submit -W -o /dev/null -d "afterok:$failed?afterany:$failed" --wrap true

# --test-only: when and where, as sbatch prints it, and nothing submitted.
check "submit --test-only" 0 "^sbatch: Job [0-9]* to start at [0-9-]*T[0-9:]* using 4 processors on nodes node0[12] in partition default$" -- "$SHOAL" submit --test-only -n 4 --wrap true
cp "$TMP/out" "$TMP/test-only.out"  # check writes each command's output to $TMP/out
check "  it says what it leaves out" 0 "not the other pending jobs" -- cat "$TMP/test-only.out"
check "  nothing was submitted" 0 "" -- sh -c "! '$SHOAL' queue | grep -q pending"
check "submit --test-only: more nodes than the cluster has" 1 "asks for 3 nodes" -- "$SHOAL" submit --test-only -N 3 --wrap true

printf '#!/bin/sh\necho "args: $#|$1|$2"\n' > args.sh
check "submit script.sh ARGS: the script's arguments" 0 "" -- "$SHOAL" submit -W -o args.out args.sh --lr '0.1 x'
check "  as the script saw them" 0 "^args: 2|--lr|0.1 x$" -- cat args.out
# --open-mode: a job's output file starts empty (truncate), unless append.
check "the first job writes mode.out" 0 "" -- "$SHOAL" submit -W -o mode.out --wrap 'echo first'
check "a second job empties it" 0 "" -- "$SHOAL" submit -W -o mode.out --wrap 'echo second'
check "  only the second's line" 0 "" -- test "$(cat mode.out)" = second
check "--open-mode=append adds to it" 0 "" -- "$SHOAL" submit -W -o mode.out --open-mode=append --wrap 'echo third'
check "  both lines" 0 "" -- test "$(cat mode.out | tr '\n' ' ')" = "second third "
mkdir -p sub/dir
check "submit -D relative: from the submitting directory" 0 "" -- "$SHOAL" submit -W -D sub/dir -o pwd.out --wrap pwd
check "  the job ran there" 0 "^$TMP/work/sub/dir$" -- cat sub/dir/pwd.out
check "  and sbatch's default output name" 0 "" -- sh -c "'$SHOAL' submit -W -D sub --wrap 'echo hi' >/dev/null && ls sub | grep -q '^slurm-[0-9]*.out$'"
# --signal: the warning before the time limit reaches the batch shell (B:),
# and shoal cancel --signal reaches a running job's tasks.
cat > warn.sh <<'SH'
#!/bin/sh
trap 'echo "warned"; exit 0' USR1
sleep 50 &
wait
echo "not warned"
SH
start=$(date +%s)
check "submit --signal=B:USR1@56 -t 1" 0 "" -- "$SHOAL" submit -W -t 1 --signal=B:USR1@56 -o warn.out warn.sh
check "  the script trapped the warning" 0 "^warned$" -- cat warn.out
check "  about 4 s in, not at the limit" 0 "" -- test $(( $(date +%s) - start )) -lt 30
check "submit a job that waits for USR2" 0 "Submitted job" -- "$SHOAL" submit -o usr2.out -- \
  sh -c 'trap "echo got USR2; exit 0" USR2; echo ready; while :; do sleep 0.1; done'
job=$(grep -o '[0-9]*' "$TMP/out" | head -1)
for _ in $(seq 200); do grep -q ready usr2.out 2>/dev/null && break; sleep 0.1; done
check "cancel --signal=USR2" 0 "" -- "$SHOAL" cancel --signal=SIGUSR2 "$job"
for _ in $(seq 200); do "$SHOAL" show "$job" 2>/dev/null | grep -q 'state.*completed' && break; sleep 0.1; done
check "  the job's task got it and ended by itself" 0 "completed" -- "$SHOAL" show "$job"
check "cancel --signal: a signal that does not exist" 1 "'BOGUS' is not a signal" -- "$SHOAL" cancel --signal=BOGUS "$job"
check "cancel --signal: an ended job" 1 "not running\|ended" -- "$SHOAL" cancel -s USR1 "$job"
exit $fail
