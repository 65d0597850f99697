#!/usr/bin/env bash
#SBATCH -n 32 -c 2 -N 2 --mem=64G --time=4:00:00 # tokenise the corpus
#SBATCH --partition=cpu --no-requeue
  #SBATCH --this-is-a-comment
#sbatch -N 9

set -euo pipefail
#SBATCH -N 3
srun ./tokenise --shards 64
