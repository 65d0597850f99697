#!/bin/sh
# Real distributed jobs through `shoal up` (2 simulated nodes on loopback),
# written as Slurm users write them and submitted unchanged:
#  - PyTorch (Debian's python3-torch), the classic recipe: the batch script
#    takes the first host of `scontrol show hostnames "$SLURM_JOB_NODELIST"`
#    as MASTER_ADDR and starts the ranks with `srun`; 2 nodes x 2 tasks join
#    one gloo process group from SLURM_PROCID and SLURM_NTASKS and
#    all_reduce their rank + 1: every rank must see 1+2+3+4 = 10.
#  - OpenMPI: plain `mpirun ./hello` in the batch script (an MPI hello
#    world compiled here with mpicc). mpirun finds the Slurm allocation in the
#    environment and starts its daemons with `srun`, which in a Shoal job is
#    Shoal's: every rank reports one world of 4, MPI_Allreduce of the ranks
#    gives 0+1+2+3 = 6.
# The batch script itself runs once, on the first node, as under Slurm.
# A part whose tools are missing is skipped with a message; with both
# missing the test is skipped (exit 77).
set -u
SHOAL=$(realpath "$1")
TMP=$(mktemp -d)
. "$(dirname "$0")/../cli/lib.sh"
trap 'stop_up; rm -rf "$TMP"' EXIT

have_torch=0; have_mpi=0
/usr/bin/python3 -c 'import torch.distributed' 2>/dev/null && have_torch=1
command -v mpicc > /dev/null && command -v mpirun > /dev/null && have_mpi=1
if [ $have_torch = 0 ] && [ $have_mpi = 0 ]; then
  echo "[program] neither python3-torch nor OpenMPI is installed (scripts/install-deps.sh)"; exit 77
fi

start_up --nodes 2 --profile dgx-h100
cd "$TMP/work"

# Waits (up to 120 s) for job $1 to end; prints its final state.
wait_job() {
  for _ in $(seq 600); do
    state=$("$SHOAL" show "$1" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    case $state in pending|running|completing) sleep 0.2 ;; *) echo "$state"; return ;; esac
  done
  echo "still-$state"
}

if [ $have_torch = 1 ]; then
  cat > allreduce.sh <<'SH'
#!/bin/sh
#SBATCH -J gloo -N 2 --ntasks-per-node=2 --gpus-per-node=2 -t 5 -o gloo-%j.out
echo "batch script on node $SLURM_NODEID, $SLURM_NNODES nodes"
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
export MASTER_ADDR=$head MASTER_PORT=$((20000 + SLURM_JOB_ID % 10000)) GLOO_SOCKET_IFNAME=lo
srun -l /usr/bin/python3 -c '
import datetime, os, torch, torch.distributed as dist
rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
dist.init_process_group("gloo", init_method="tcp://%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]),
                        rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
t = torch.tensor([rank + 1.0])
dist.all_reduce(t)
print("rank %d of %d local %s node %s: sum %g" % (rank, world, os.environ["SLURM_LOCALID"], os.environ["SLURM_NODEID"], t.item()))
dist.destroy_process_group()'
SH
  check "torch submit" 0 "Submitted job" -- "$SHOAL" submit allreduce.sh
  job=$(grep -o '[0-9]*' "$TMP/out" | head -1)
  check "torch job completes" 0 "^completed" -- wait_job "$job"
  check "the batch script ran once" 0 "" -- test "$(grep -c 'batch script on node 0, 2 nodes' "gloo-$job.out")" = 1
  for r in 0 1 2 3; do
    check "torch rank $r reduced" 0 "^$r: rank $r of 4 local $((r % 2)) node $((r / 2)): sum 10" -- cat "gloo-$job.out"
  done
else
  echo "skip torch part: /usr/bin/python3 cannot import torch.distributed"
fi

if [ $have_mpi = 1 ]; then
  cat > hello.c <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, sum;
  char host[MPI_MAX_PROCESSOR_NAME];
  int len;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &len);
  MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  printf("hello from rank %d of %d on %s, sum of ranks %d\n", rank, size, host, sum);
  MPI_Finalize();
  return 0;
}
C
  check "mpicc" 0 "" -- mpicc -o hello hello.c
  # Root runs the tests here (OpenMPI then wants --allow-run-as-root); the
  # mca options keep OpenMPI on loopback, where this machine's nodes are.
  cat > mpi.sh <<'SH'
#!/bin/sh
#SBATCH -J mpi -N 2 --ntasks-per-node=2 --gpus-per-node=1 -t 5 -o mpi-%j.out
mpirun --allow-run-as-root --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo ./hello
SH
  check "mpi submit" 0 "Submitted job" -- "$SHOAL" submit mpi.sh
  job=$(grep -o '[0-9]*' "$TMP/out" | head -1)
  check "mpi job completes" 0 "^completed" -- wait_job "$job"
  for r in 0 1 2 3; do
    check "mpi rank $r" 0 "hello from rank $r of 4 on .*, sum of ranks 6" -- cat "mpi-$job.out"
  done
  check "mpi: one world" 0 "" -- test "$(grep -c 'of 4' "mpi-$job.out")" = 4
else
  echo "skip MPI part: no mpicc/mpirun (openmpi-bin, libopenmpi-dev)"
fi
exit $fail
