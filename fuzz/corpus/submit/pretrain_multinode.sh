#!/bin/bash
#SBATCH --job-name="pretrain 7b"
#SBATCH -N 4
#SBATCH --ntasks-per-node=8
#SBATCH --gres=gpu:h100:8
#SBATCH --cpus-per-task=12
#SBATCH --mem=1800G
#SBATCH --time=2-00:00:00
#SBATCH -p gpu -A llm -q high
#SBATCH --exclusive --requeue
#SBATCH -o logs/%x-%j.out
#SBATCH -e logs/%x-%j.err
#SBATCH -C ib&nvme

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
srun python -m torch.distributed.run --nproc_per_node=8 train.py --config configs/7b.yaml
