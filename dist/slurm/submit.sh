#!/bin/bash
# Submits the scan job array and the merge job that runs once every array task has succeeded.
# Variables given here (LIBRARY, SHARDS_DIR, OUT, SHARDS, NAVISCAN) reach both jobs.
set -euo pipefail
cd "$(dirname "$0")"
scan=$(sbatch --parsable --export=ALL naviscan-scan.sbatch)
scan=${scan%%;*}   # "jobid;cluster" on a federation
sbatch --parsable --export=ALL --dependency=afterok:"$scan" naviscan-merge.sbatch
echo "scan array $scan, then the merge; watch with: squeue -u $USER" >&2
