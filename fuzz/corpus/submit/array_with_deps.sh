#!/bin/bash
#SBATCH --array=0-99%10
#SBATCH -d afterok:1234:1235,afterany:1300
#SBATCH --export=ALL,LR=3e-4,TAG=sweep=1
#SBATCH --begin=2025-01-01T06:00:00
#SBATCH --mail-type=END,FAIL
#SBATCH -H
#SBATCH -G a100:2 --mem-per-gpu=40G

python sweep.py --index "$SLURM_ARRAY_TASK_ID"
