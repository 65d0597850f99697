#!/bin/sh
# Real distributed jobs through `shoal up` (2 simulated nodes on loopback)
# and `shoal submit -N 2`, unchanged from how they run elsewhere:
#  - PyTorch (Debian's python3-torch): 2 nodes x 2 processes join one gloo
#    process group from the environment the agent sets (env://) and
#    all_reduce their rank + 1; every rank must see 1+2+3+4 = 10.
#  - OpenMPI: an MPI hello world (compiled here with mpicc) started by
#    mpirun from the job's first node with the job's hostfile; every rank
#    reports, and an MPI_Allreduce of the ranks gives 0+1+2+3 = 6.
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
  cat > allreduce.py <<'PY'
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE from Shoal
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([rank + 1.0])
dist.all_reduce(t)
print(f"rank {rank} of {world} local {os.environ['LOCAL_RANK']} node {os.environ['NODE_RANK']}: sum {t.item():g}")
dist.destroy_process_group()
PY
  cat > allreduce.sh <<'SH'
#!/bin/sh
#SBATCH -J gloo -N 2 -n 4 --gpus-per-node=2 -t 5 -o gloo-%t.out
export GLOO_SOCKET_IFNAME=lo
exec /usr/bin/python3 allreduce.py
SH
  check "torch submit" 0 "Submitted job" -- "$SHOAL" submit allreduce.sh
  job=$(grep -o '[0-9]*' "$TMP/out" | head -1)
  check "torch job completes" 0 "^completed" -- wait_job "$job"
  for r in 0 1 2 3; do
    check "torch rank $r reduced" 0 "rank $r of 4 local $((r % 2)) node $((r / 2)): sum 10" -- cat "gloo-$r.out"
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
  # The batch script runs once per node; mpirun starts from the first.
  cat > mpi.sh <<'SH'
#!/bin/sh
#SBATCH -J mpi -N 2 --ntasks-per-node=2 --gpus-per-node=1 -t 5 -o mpi-%N-%t.out
[ "$SHOAL_NODE_RANK" = 0 ] || exit 0
cat "$SHOAL_HOSTFILE"
exec mpirun --allow-run-as-root --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
  --hostfile "$SHOAL_HOSTFILE" -np "$WORLD_SIZE" ./hello
SH
  check "mpi submit" 0 "Submitted job" -- "$SHOAL" submit mpi.sh
  job=$(grep -o '[0-9]*' "$TMP/out" | head -1)
  check "mpi job completes" 0 "^completed" -- wait_job "$job"
  out=$(ls mpi-*-0.out 2>/dev/null | head -1)
  check "mpi hostfile" 0 "slots=4" -- cat "$out"
  for r in 0 1 2 3; do
    check "mpi rank $r" 0 "hello from rank $r of 4 on .*, sum of ranks 6" -- cat "$out"
  done
else
  echo "skip MPI part: no mpicc/mpirun (openmpi-bin, libopenmpi-dev)"
fi
exit $fail
