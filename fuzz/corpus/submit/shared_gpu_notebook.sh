#!/bin/sh
# A small evaluation that shares a GPU with others.
#SBATCH -J eval
#SHOAL --gpus=1 --gpu-share=250
#SHOAL --mem-per-gpu=16G --cpus-per-gpu=4
#SBATCH -t 45m
#SBATCH -D /data/eval 'run 1'
python eval.py --checkpoint "$CKPT"
