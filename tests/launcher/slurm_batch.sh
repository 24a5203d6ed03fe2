#!/bin/bash
# An sbatch script that runs its arguments as one srun step over the whole allocation, as a
# user's job script does; no coll variable is set (launch_env.cc reads Slurm's or PMIx's).
#
#   sbatch -N 4 -n 8 --wait -o OUT tests/launcher/slurm_batch.sh build/bin/all_reduce_perf -b 8 -e 1M -c 1
#SBATCH --job-name=coll-batch
#SBATCH --time=5
echo "batch host $(hostname), job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, $SLURM_NTASKS tasks"
exec srun "$@"
