#!/bin/bash
#SBATCH --nodes=2-4
#SBATCH --mail-user=someone@example.org
#SBATCH --nodelist=gpu[01-04]
#SBATCH --mem-per-cpu=4G
hostname
