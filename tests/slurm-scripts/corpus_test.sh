#!/bin/sh
# Public GPU batch scripts (one per project, README.md) through `shoal up`
# with two simulated DGX H100 nodes, as their users submit them: each script
# runs once on the first node of its allocation and fans out with Shoal's
# srun, scontrol and (OpenMPI's) mpirun. Their training programs and site
# commands (module, conda, ...) are stand-ins on PATH that print
# what the job gave them; the checks read those lines, the output files as
# Slurm names them, and each job's end state.
# Known gaps (README.md, "Known gaps") are run and reported as SKIP, not failed.
# usage: corpus_test.sh <path to shoal>   (KEEP=1 keeps the work folder and says where)
set -u
SHOAL=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
. "$HERE/../cli/lib.sh"
trap 'stop_up; if [ -n "${KEEP:-}" ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi' EXIT

# The scripts' partitions are their sites'; this cluster has one, "gpu", the
# default, and the scripts that name a partition are submitted with -p gpu.
cat > "$TMP/cluster.toml" <<'EOF'
[[partition]]
name = "gpu"
default = true
EOF
start_up --nodes 2 --profile dgx-h100 --config "$TMP/cluster.toml"
# `shoal up` puts node01 and node02 on these addresses: SLURM_JOB_NODELIST
# and `scontrol show hostnames` name the nodes by them.
HEAD=127.0.1.1
WORK=$TMP/work
HOST=$(hostname)  # what `hostname` says in a job: every simulated node is this machine

# --- stand-ins -------------------------------------------------------------
# One program for every launcher and training program: a line with its name,
# the task's identity and the variables distributed training reads, and its
# arguments. Unset variables print as "-".
mkdir -p "$TMP/bin"
cat > "$TMP/bin/standin" <<'EOF'
#!/bin/sh
line="STANDIN $(basename "$0")"
for v in SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_NTASKS SLURM_JOB_PARTITION SLURM_ARRAY_TASK_ID \
         CUDA_VISIBLE_DEVICES MASTER_ADDR MASTER_PORT WORLD_SIZE RANK LOCAL_RANK LOCAL_WORLD_SIZE \
         OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE; do
  eval "line=\"\$line $v=\${$v--}\""
done
echo "$line args=$*"
echo "${SLURM_JOB_ID:--} $(basename "$0") $*" >> "$STUB_LOG"
EOF
# Site commands: logged, nothing else (module and conda are shell functions on
# a cluster; as programs they cannot change the job's environment anyway).
cat > "$TMP/bin/logonly" <<'EOF'
#!/bin/sh
echo "${SLURM_JOB_ID:--} $(basename "$0") $*" >> "$STUB_LOG"
EOF
# `source activate ENV` (conda's old form) finds this file on PATH.
echo 'echo "${SLURM_JOB_ID:--} activate $*" >> "$STUB_LOG"' > "$TMP/bin/activate"
chmod +x "$TMP/bin/standin" "$TMP/bin/logonly"
for p in torchrun accelerate python python3.6 wandb train_gpt2cu; do
  ln -s standin "$TMP/bin/$p"
done
for p in module conda dcgmi make scp; do ln -s logonly "$TMP/bin/$p"; done
# What the scripts expect beside them: startup files, a venv's torchrun and
# activate script, log folders.
echo 'echo "${SLURM_JOB_ID:--} activateEnviroment.sh" >> "$STUB_LOG"' > "$WORK/activateEnviroment.sh"
mkdir -p "$WORK/pt_fsdp/bin" "$WORK/env/bin" "$WORK/slurm_output_files"
echo 'echo "${SLURM_JOB_ID:--} env/bin/activate" >> "$STUB_LOG"' > "$WORK/env/bin/activate"
cp "$TMP/bin/standin" "$WORK/pt_fsdp/bin/torchrun"
touch "$HOME/.bashrc"
# The job gets this shell's environment (--export=ALL), the stand-ins first.
export PATH="$TMP/bin:$PATH" STUB_LOG="$TMP/stub.log"
: > "$STUB_LOG"
if [ "$(id -u)" -eq 0 ]; then  # OpenMPI's mpirun refuses root without these
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

# --- helpers ---------------------------------------------------------------
submit() {  # submit <var> <script> [sbatch options...]: from the work folder; <var> gets the job id
  var=$1; script=$2; shift 2
  cp "$HERE/$script" "$WORK/"
  said=$(cd "$WORK" && "$SHOAL" submit "$@" "$script" 2>&1)
  id=$(printf '%s\n' "$said" | sed -n 's/^Submitted job \(array \)\{0,1\}\([0-9][0-9]*\).*/\2/p')
  if [ -n "$id" ]; then echo "ok   submit $script $*"; else echo "FAIL submit $script $*: $said"; fail=1; fi
  eval "$var=\${id:-0}"
}
state() { "$SHOAL" show "$1" 2>/dev/null | awk '$1 == "state" { print $2; exit }'; }
DEADLINE=$(($(date +%s) + 90))
wait_job() {  # wait_job <id>: until it has ended (bounded by DEADLINE for the whole test)
  [ "$1" -gt 0 ] || return  # not submitted
  while :; do
    case $(state "$1") in completed | failed | cancelled | timeout | node_fail | preempted) return ;; esac
    [ "$(date +%s)" -lt "$DEADLINE" ] || return
    sleep 0.2
  done
}
ended() {  # ended <name> <id> <state>
  check "$1: job $2 $3" 0 "^$3\$" -- state "$2"
}
default_out() {  # the output file of a job without -o: slurm-%j.out, as sbatch names it
  echo "$WORK/slurm-$1.out"
}
has() {  # has <name> <file> <fixed string>: a line of the file holds it
  if grep -qF -- "$3" "$2" 2>/dev/null; then echo "ok   $1"; else
    echo "FAIL $1: ${2#"$WORK"/} lacks '$3'"; sed 's/^/    | /' "$2" 2>/dev/null | head -40; fail=1
  fi
}
lines() {  # lines <name> <file> <n> <ERE>: exactly n lines of the file match
  got=$(grep -Ec -- "$4" "$2" 2>/dev/null)
  if [ "${got:-0}" -eq "$3" ]; then echo "ok   $1"; else
    echo "FAIL $1: ${got:-0} lines of ${2#"$WORK"/} match /$4/, want $3"; sed 's/^/    | /' "$2" 2>/dev/null | head -40; fail=1
  fi
}
exists() {  # exists <name> <file>
  check "$1" 0 "" -- test -f "$2"
}
logged() {  # logged <name> <id> <command line>: a stand-in logged it for the job
  check "$1" 0 "" -- grep -qxF -- "$2 $3" "$STUB_LOG"
}
GAPS=0
gap() {  # gap <name> <what Shoal lacks> <command...>: a known gap; reported, not failed
  name=$1; why=$2; shift 2
  if "$@" > /dev/null 2>&1; then
    echo "ok   $name (a known gap that now works: take it off the gaps in README.md and here)"
  else
    echo "SKIP $name: known gap: $why"; GAPS=$((GAPS + 1))
  fi
}
gpus() {  # gpus <n>: an ERE for CUDA_VISIBLE_DEVICES with n devices
  re="[0-7]"; i=1
  while [ "$i" -lt "$1" ]; do re="$re,[0-7]"; i=$((i + 1)); done
  echo "CUDA_VISIBLE_DEVICES=$re "
}

# --- submit everything; the scripts' own #SBATCH lines, and only the
# command-line options README.md lists for each -------------------------------
submit titan torchtitan_multinode_trainer.slurm -N 2 -n 2 -p gpu
submit mingpt pytorch-examples_mingpt_sbatch_run.sh
submit ddp princeton_multi_gpu_training_ddp_job.slurm
submit accel accelerate_submit_multinode.sh -N 2
submit csc csc_pytorch-ddp-examples_run-ddp-gpu8.sh -p gpu --gres=gpu:4
submit llmc llmc_run_gpt2_124M_fs.sbatch -p gpu -o '%x_%j_%t.log' -e '%x_%j_%t.err'
submit stas ml-engineering_torchrun-launcher.slurm -p gpu
submit aws awsome-distributed-training_fsdp.sbatch -N 2
submit trl trl_sft_moe_expert_parallel.slurm -N 2
submit nano nanotron_train.slurm -p gpu -o '%x-%j-train.out'
# Held (-H) so that an earlier run's line can be put in its output file first:
# its own --open-mode=append must keep that line.
submit clip open_clip_stability_example.sh -N 2 -p gpu -H
[ "$clip" -gt 0 ] && echo "EARLIER RUN of job $clip" > "$WORK/testopenclip_$clip.out"
check "open_clip: released" 0 "" -- "$SHOAL" release "$clip"
submit topo cluster-toolkit_topological_pytorch.sh -N 2 -p gpu
submit bench bigscience_all_reduce_bench-a100-n4.slurm -N 2 -p gpu
MPI=
if command -v mpirun > /dev/null 2>&1 && mpirun --version 2>/dev/null | grep -q 'Open MPI'; then
  MPI=yes
  submit hvd csc_ml-scripts_run-python-gpu-hvd.sh --gres=gpu:4
fi
submit sweep synflownet_launch_wandb_agents.sh -p gpu
last=$((sweep + 53))

for id in $titan $mingpt $ddp $accel $csc $llmc $stas $aws $trl $nano $clip $topo $bench ${MPI:+$hvd} \
          $([ "$sweep" -gt 0 ] && seq "$sweep" "$last"); do
  wait_job "$id"
done

# --- torchtitan: srun -w to ask the head node its address, then torchrun on every node
t=torchtitan; out=$(default_out "$titan")
ended $t "$titan" completed
exists "$t: no -o: the default output file slurm-%j.out" "$out"
ip=$(hostname --ip-address 2> /dev/null)  # what the head node (this machine) says
check "$t: the head node's address from srun -w" 0 "" -- grep -qxF "$(echo Node IP: $ip)" "$out"
lines "$t: one torchrun a task" "$out" 2 "^STANDIN torchrun .*SLURM_NTASKS=2 "
has "$t: task 0 on node 0" "$out" "STANDIN torchrun SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 "
has "$t: task 1 on node 1" "$out" "STANDIN torchrun SLURM_PROCID=1 SLURM_LOCALID=0 SLURM_NODEID=1 "
lines "$t: --gpus-per-task=8: eight GPUs a task" "$out" 2 "$(gpus 8)"
has "$t: the rendezvous at the head node" "$out" "args=--nnodes 4 --nproc_per_node 8 --rdzv_id 101 --rdzv_backend c10d --rdzv_endpoint $ip:29500 -m torchtitan.train --module torchtitan_recipes.tests.models.llama3 --config llama3_debugmodel"
logged "$t: dcgmi paused before the step" "$titan" "dcgmi profile --pause"
logged "$t: and resumed after it" "$titan" "dcgmi profile --resume"

# --- PyTorch examples (minGPT DDP): one task a node, a GPU each
t=pytorch-examples; out=$(default_out "$mingpt")
ended $t "$mingpt" completed
ip=$(hostname --ip-address 2> /dev/null)
check "$t: the head node's address from srun -w" 0 "" -- grep -qxF "$(echo Node IP: $ip)" "$out"
lines "$t: two torchruns" "$out" 2 "^STANDIN torchrun "
has "$t: task 0 on node 0" "$out" "SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 SLURM_NTASKS=2 "
has "$t: task 1 on node 1" "$out" "SLURM_PROCID=1 SLURM_LOCALID=0 SLURM_NODEID=1 SLURM_NTASKS=2 "
lines "$t: --gpus-per-task=1: one GPU a task" "$out" 2 "$(gpus 1)"
lines "$t: torchrun's rendezvous" "$out" 2 "args=--nnodes 2 --nproc_per_node 1 --rdzv_id [0-9]+ --rdzv_backend c10d --rdzv_endpoint $ip:29500 /shared/examples/mingpt/main.py\$"
lines "$t: no -p: SLURM_JOB_PARTITION names the default partition" "$out" 2 "^STANDIN torchrun .*SLURM_JOB_PARTITION=gpu "

# --- Princeton multi_gpu_training (DDP): MASTER_ADDR/PORT and WORLD_SIZE from SLURM_*
t=princeton; out=$(default_out "$ddp")
ended $t "$ddp" completed
port=$(expr 10000 + "$(printf %s "$ddp" | tail -c 4)")  # as the script does (expr: no octal for 0012)
has "$t: WORLD_SIZE from SLURM_NNODES * SLURM_NTASKS_PER_NODE" "$out" "WORLD_SIZE=4"
has "$t: MASTER_ADDR, the first of scontrol show hostnames" "$out" "MASTER_ADDR=$HEAD"
lines "$t: four tasks" "$out" 4 "^STANDIN python "
for r in 0 1 2 3; do
  has "$t: task $r: local $((r % 2)) on node $((r / 2))" "$out" "SLURM_PROCID=$r SLURM_LOCALID=$((r % 2)) SLURM_NODEID=$((r / 2)) SLURM_NTASKS=4 "
done
lines "$t: each task sees the exported MASTER_*, WORLD_SIZE" "$out" 4 "MASTER_ADDR=$HEAD MASTER_PORT=$port WORLD_SIZE=4 "
lines "$t: --gres=gpu:2: both GPUs of its node" "$out" 4 "$(gpus 2)"
lines "$t: the program and its arguments" "$out" 4 "args=mnist_classify_ddp.py --epochs=2\$"
logged "$t: module purge" "$ddp" "module purge"
logged "$t: module load" "$ddp" "module load anaconda3/2021.11"
logged "$t: conda activate" "$ddp" "conda activate torch-env"

# --- Hugging Face accelerate (multi-node): -D ., O-%x.%j / E-%x.%j, accelerate launch on each node
t=accelerate; out=$WORK/O-multinode.$accel
ended $t "$accel" completed
exists "$t: -D . is the submit folder: --output=O-%x.%j there" "$out"
exists "$t: --error=E-%x.%j there" "$WORK/E-multinode.$accel"
logged "$t: source activateEnviroment.sh (found in the submit folder)" "$accel" "activateEnviroment.sh"
lines "$t: accelerate launch on each node" "$out" 2 "^STANDIN accelerate .*args=launch --num_processes 8 --num_machines 2 --rdzv_backend c10d --main_process_ip $HEAD --main_process_port 29500\$"
has "$t: node 0" "$out" "SLURM_PROCID=0 SLURM_LOCALID=0 SLURM_NODEID=0 "
has "$t: node 1" "$out" "SLURM_PROCID=1 SLURM_LOCALID=0 SLURM_NODEID=1 "
lines "$t: --gres=gpu:4: four GPUs a node" "$out" 2 "$(gpus 4)"
# -D . once more, the working folder itself: a one-line job whose output goes elsewhere.
(cd "$WORK" && "$SHOAL" submit -W -D . -o "$TMP/chdir.out" --wrap pwd) > /dev/null 2>&1
check "$t: -D . is the folder sbatch ran in (pwd)" 0 "" -- grep -qxF "$(cd "$WORK" && pwd -P)" "$TMP/chdir.out"

# --- CSC pytorch-ddp-examples (Puhti): torchrun with SLURM_JOB_NUM_NODES, SLURM_JOB_ID
t=csc-ddp; out=$(default_out "$csc")
ended $t "$csc" completed
lines "$t: torchrun on each node" "$out" 2 "^STANDIN torchrun "
lines "$t: its rendezvous" "$out" 2 "args=--nnodes=2 --nproc_per_node=4 --rdzv_id=$csc --rdzv_backend=c10d --rdzv_endpoint=$HOST:29400 mnist_ddp.py --epochs=100\$"
lines "$t: four GPUs a node" "$out" 2 "$(gpus 4)"
logged "$t: module purge" "$csc" "module purge"
logged "$t: module load pytorch" "$csc" "module load pytorch"

# --- llm.c (multi-node, shared file system): srun -l -u, 16 ranks, -pn/-pr/-pg from SLURM_*
t=llm.c; out=$WORK/llmc-multinode_${llmc}_0.log
ended $t "$llmc" completed
exists "$t: -o %x_%j_%t.log (%t is 0 for the batch script)" "$out"
exists "$t: -e %x_%j_%t.err" "$WORK/llmc-multinode_${llmc}_0.err"
logged "$t: make" "$llmc" "make train_gpt2cu USE_CUDNN=1 NO_USE_MPI=1"
has "$t: SLURM_JOB_ID seen" "$out" "Running in a SLURM environment (job ID: $llmc, user: "
lines "$t: sixteen ranks" "$out" 16 "STANDIN train_gpt2cu "
for r in 0 9 15; do  # srun -l labels "%*d: ", as wide as the largest task id: " 0: " .. "15: "
  lines "$t: rank $r, labelled '$(printf %2d "$r"):', told -pn 16 -pr $r -pg 8" "$out" 1 "^$(printf %2d "$r"): STANDIN train_gpt2cu SLURM_PROCID=$r .* -pn 16 -pr $r -pg 8 -pf /ephemeral/data/fineweb/log_gpt2_124M_multi -pi fs\$"
done
lines "$t: every label as wide as '15:'" "$out" 16 "^( [0-9]|1[0-5]): STANDIN "
lines "$t: eight GPUs seen by each rank" "$out" 16 "$(gpus 8)"
lines "$t: scontrol show hostname (no list: SLURM_NODELIST)" "$out" 1 "^Running on hosts: $HEAD 127.0.1.2\$"
gap "$t: the binary copied only to the other node" \
  "\`hostname\` in a job is this machine's name, not the node's (127.0.1.x): the script copies to both nodes" \
  sh -c "test \"\$(grep -c '^$llmc scp ' '$STUB_LOG')\" = 1"

# --- Stas Bekman's ml-engineering torchrun launcher: srun --wait=60 --kill-on-bad-exit=1 --jobid
t=ml-engineering; out=$WORK/torchrun-launcher-$stas.out
ended $t "$stas" completed
exists "$t: --output=%x-%j.out" "$out"
has "$t: START TIME" "$out" "START TIME: "
has "$t: END TIME (set -eo pipefail: every command succeeded)" "$out" "END TIME: "
has "$t: the launcher from SLURM_NNODES and the head node" "$out" "python -u -m torch.distributed.run --nproc_per_node 8 --nnodes 2 --rdzv_endpoint $HEAD:6000 --rdzv_backend c10d"
for r in 0 1; do  # srun --wait=60 --kill-on-bad-exit=1 --jobid $SLURM_JOB_ID: one task a node
  lines "$t: torchrun on node $r" "$out" 1 "^STANDIN python SLURM_PROCID=$r SLURM_LOCALID=0 SLURM_NODEID=$r SLURM_NTASKS=2 .*args=-u -m torch.distributed.run --nproc_per_node 8 --nnodes 2 --rdzv_endpoint $HEAD:6000 --rdzv_backend c10d --max_restarts 0 --role $(hostname -s): --tee 3 my_train_script.py\$"
done
lines "$t: --gres=gpu:8: eight GPUs a node" "$out" 2 "^STANDIN python .*$(gpus 8)"
lines "$t: srun's output teed to main_log.txt" "$WORK/main_log.txt" 2 "^STANDIN python .*args=-u -m torch.distributed.run "

# --- AWS awsome-distributed-training (FSDP): set -ex, srun -l with a venv's torchrun
t=aws-fsdp; out=$(default_out "$aws")
ended $t "$aws" completed
has "$t: set -x tracing reaches the output file" "$out" "+ srun -l ./pt_fsdp/bin/torchrun"
for r in 0 1; do
  lines "$t: task $r, labelled, on node $r" "$out" 1 "^$r: STANDIN torchrun SLURM_PROCID=$r SLURM_LOCALID=0 SLURM_NODEID=$r SLURM_NTASKS=2 "
done
lines "$t: torchrun told the job's nodes and id" "$out" 2 "args=--nproc_per_node=8 --nnodes=2 --rdzv_id=$aws --rdzv_backend=c10d --rdzv_endpoint=$HOST ./train.py --max_context_width=4096 "

# --- Hugging Face TRL (MoE expert parallel): getent on the head node's name
t=trl; out=$(default_out "$trl")
ended $t "$trl" completed
lines "$t: torchrun on each node" "$out" 2 "^STANDIN torchrun .*SLURM_NTASKS=2 "
lines "$t: the head node's IPv4 address, SLURM_SUBMIT_DIR" "$out" 2 "args=--nnodes 2 --nproc_per_node 8 --rdzv_backend c10d --rdzv_endpoint $HEAD:29700 .*/sft_moe_expert_parallel.py\$"
check "$t: SLURM_SUBMIT_DIR is the submit folder" 0 "" -- grep -qF "$(cd "$WORK" && pwd -P)/sft_moe_expert_parallel.py" "$out"
lines "$t: eight GPUs a node" "$out" 2 "$(gpus 8)"

# --- Hugging Face nanotron: #SBATCz lines are comments, printenv, node ranks from SLURM_PROCID
t=nanotron; out=$WORK/aaa-$nano-train.out
ended $t "$nano" completed
exists "$t: -o %x-%j-train.out" "$out"
has "$t: CONFIG_FILE unset" "$out" "CONFIG_FILE is unset, using default"
has "$t: printenv shows the job" "$out" "SLURM_JOB_ID=$nano"
for r in 0 1; do
  lines "$t: node rank $r" "$out" 1 "^STANDIN torchrun SLURM_PROCID=$r .*args=--nproc_per_node 8 --nnodes 2 --rdzv_endpoint $HEAD:6000 --rdzv_backend c10d --max_restarts 0 --tee 3 --node_rank $r --role "
done
logged "$t: source activate" "$nano" "activate /fsx/nouamane/miniconda/envs/2-1-cu121"
logged "$t: module load" "$nano" "module load cuda/12.1"
for r in 0 1; do
  lines "$t: --role \$SLURMD_NODENAME: on node $r" "$out" 1 "args=.* --node_rank $r --role node0$((r + 1)): run_train.py "
done

# --- OpenCLIP (Stability cluster example): 8 tasks a node, srun --comment --cpu_bind --accel-bind
t=open_clip; out=$WORK/testopenclip_$clip.out
exists "$t: --output=%x_%j.out" "$out"
lines "$t: --open-mode=append: the earlier run's line kept, first" "$out" 1 "^EARLIER RUN of job $clip\$"
check "$t: ... as the first line, this run's after it" 0 "" -- sh -c "head -n 1 '$out' | grep -q '^EARLIER RUN'"
lines "$t: COUNT_NODE from scontrol show hostnames | wc -l" "$out" 1 "^go 2\$"
lines "$t: HOSTNAMES from scontrol show hostnames in backquotes" "$out" 1 "^$HEAD 127.0.1.2\$"
has "$t: cd to its site's folder fails with a message only (no set -e)" "$out" "cd: /admin/home-mitchellw/open_clip/src: No such file or directory"
logged "$t: module load openmpi" "$clip" "module load openmpi"
logged "$t: module load cuda/11.7" "$clip" "module load cuda/11.7"
ended "$t" "$clip" completed
check "$t: sixteen tasks, 8 a node, the exported MASTER_ADDR/PORT" 0 "" -- \
  sh -c "test \"\$(grep -c '^STANDIN python .*SLURM_NTASKS=16 .*MASTER_ADDR=$HEAD MASTER_PORT=12802 ' '$out')\" = 16"
for r in 0 7 8 15; do
  lines "$t: task $r: SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID (open_clip reads them)" "$out" 1 \
    "^STANDIN python SLURM_PROCID=$r SLURM_LOCALID=$((r % 8)) SLURM_NODEID=$((r / 8)) SLURM_NTASKS=16 "
done
has "$t: python -m training.main and its arguments" "$out" \
  "args=-m training.main --save-frequency 1 --train-data=pipe:aws s3 cp s3://s-datasets/laion5b/{laion2B-data/{000000..231349}.tar,laion2B-multi-data/{000000..226687}.tar,laion1B-nolang-data/{000000..127231}.tar} - --train-num-samples 135646078 "

# --- Google Cloud cluster-toolkit (topological PyTorch): a step of one task a node, then 8 a node
t=cluster-toolkit; out=$(default_out "$topo")
ended $t "$topo" completed
exists "$t: no -o: slurm-%j.out" "$out"
has "$t: the missing site profile is a message only" "$out" "/var/lib/tcpxo/lib64/nccl-env-profile.sh: No such file or directory"
logged "$t: source env/bin/activate" "$topo" "env/bin/activate"
check "$t: the steps in order: Standard, two torchruns, Topologically aware" 0 "" -- \
  sh -c "test \"\$(sed -n '/^Standard\$/,/^Topologically aware\$/p' '$out' | grep -c 'args=-m torch.distributed.run ')\" = 2"
for r in 0 1; do
  lines "$t: srun --ntasks-per-node=1 --nodes \$SLURM_NNODES: task $r on node $r" "$out" 1 "^STANDIN python SLURM_PROCID=$r SLURM_LOCALID=0 SLURM_NODEID=$r SLURM_NTASKS=2 .*args=-m torch.distributed.run --nproc_per_node 8 --rdzv_endpoint $HEAD:12345 --rdzv_backend c10d --nnodes 2 topological_pytorch.py\$"
done
lines "$t: --nproc_per_node \$SLURM_GPUS_PER_NODE (8), all 8 GPUs each" "$out" 2 "$(gpus 8).*args=-m torch.distributed.run "
lines "$t: plain srun: the job's 16 tasks" "$out" 16 "^STANDIN python .*SLURM_NTASKS=16 .*args=topological_pytorch.py --topology\$"
for r in 0 7 8 15; do
  lines "$t: task $r: SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID for --topology" "$out" 1 "^STANDIN python SLURM_PROCID=$r SLURM_LOCALID=$((r % 8)) SLURM_NODEID=$((r / 8)) SLURM_NTASKS=16 "
done
lines "$t: --gpus-per-node=8: every task sees the 8 GPUs of its node" "$out" 16 "$(gpus 8).*--topology\$"
lines "$t: every task sees the exported MASTER_ADDR/PORT" "$out" 18 "MASTER_ADDR=$HEAD MASTER_PORT=12345 "

# --- BigScience all-reduce benchmark: srun --jobid, --node_rank from SLURM_PROCID, tee
t=bigscience; out=$WORK/all_reduce_bench-a100-n4-$bench.out
ended $t "$bench" completed
exists "$t: --output=%x-%j.out (--hint=nomultithread, --account taken)" "$out"
for r in 0 1; do
  lines "$t: srun --jobid \$SLURM_JOBID: node rank $r on node $r" "$out" 1 "^STANDIN python SLURM_PROCID=$r SLURM_LOCALID=0 SLURM_NODEID=$r SLURM_NTASKS=2 .*args=-m torch.distributed.launch --nnodes 2 --nproc_per_node 8 --node_rank $r --master_addr $HEAD --master_port 12345 all_reduce_bench.py\$"
done
lines "$t: --gres=gpu:8: eight GPUs a node" "$out" 2 "$(gpus 8)"
lines "$t: srun's output teed to \$LOG_FILE" "$WORK/all_reduce_bench-a100-4n.txt" 2 "^STANDIN python .*all_reduce_bench.py\$"

# --- CSC machine-learning-scripts (Horovod): mpirun -np 4 inside a 4-task job
t=csc-horovod
if [ -n "$MPI" ]; then
  out=$(default_out "$hvd")
  ended $t "$hvd" completed
  lines "$t: four MPI ranks" "$out" 4 "^STANDIN python3.6 .*OMPI_COMM_WORLD_SIZE=4 "
  for r in 0 1 2 3; do
    lines "$t: rank $r" "$out" 1 "^STANDIN python3.6 .*OMPI_COMM_WORLD_RANK=$r "
  done
  logged "$t: module load" "$hvd" "module load python-env/3.6.3-ml"
  logged "$t: module list" "$hvd" "module list"
else
  echo "SKIP $t: no OpenMPI mpirun here"
fi

# --- SynFlowNet (wandb sweep): a 54-task array, %x_%N_%A_%a.out in a folder
t=synflownet
bad=0
for a in $(seq 1 54); do
  id=$((sweep + a - 1))
  [ "$(state "$id")" = completed ] || { echo "    task $a (job $id): $(state "$id")"; bad=1; }
done
check "$t: all 54 array tasks completed" 0 "" -- test "$bad" = 0
ls "$WORK/slurm_output_files" > "$TMP/sweep.ls"
lines "$t: --output=slurm_output_files/%x_%N_%A_%a.out, one file a task" "$TMP/sweep.ls" 54 "^wandb_sweep_agent_node0[12]_${sweep}_([1-9]|[1-4][0-9]|5[0-4])\.out\$"
bad=0
for f in "$WORK"/slurm_output_files/*.out; do
  a=${f##*_}; a=${a%.out}
  grep -q "^STANDIN wandb .*SLURM_ARRAY_TASK_ID=$a $(gpus 1).*args=agent --count 1 --entity valencelabs --project gflownet\$" "$f" ||
    { echo "    ${f##*/}:"; sed 's/^/    | /' "$f"; bad=1; }
done
check "$t: each task's file: its SLURM_ARRAY_TASK_ID, one GPU, wandb agent" 0 "" -- test "$bad" = 0
logged "$t: source activate (task 1)" "$sweep" "activate sfn"

[ "$GAPS" -eq 0 ] || echo "($GAPS checks skipped for known gaps: tests/slurm-scripts/README.md)"
exit $fail
