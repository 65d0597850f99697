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
cd "$TMP/work"

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
check "the allocations are given back" 0 "" -- sh -c "! '$SHOAL' queue | grep -q running"
FOO=from-here check "the environment travels" 0 "^from-here$" -- "$SHOAL" run printenv FOO
FOO=from-here check "--export=NONE" 1 "" -- "$SHOAL" run --export=NONE printenv FOO
check "--gpus-per-task: a GPU each" 0 "" -- "$SHOAL" run -N 1 --gpus-per-node 2 --ntasks-per-node 2 --gpus-per-task 1 -l printenv CUDA_VISIBLE_DEVICES
cp "$TMP/out" "$TMP/gpus.out"
check "  task 0 sees GPU 0" 0 "" -- grep -qx "0: 0" "$TMP/gpus.out"
check "  task 1 sees GPU 1" 0 "" -- grep -qx "1: 1" "$TMP/gpus.out"

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
exit $fail
