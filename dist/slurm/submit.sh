#!/bin/bash
# naviscan on a Slurm cluster: submits the scan of a library as a job array (one task per shard) and
# the merge that follows it. Run it from anywhere; every setting is a variable:
#
#   LIBRARY      the music library, on a file system every node reads            (required)
#   SHARDS_DIR   a shared folder for the shard stores and the logs (logs/)       (required)
#   OUT          the merged store, served by `naviscan serve --out OUT`          (required)
#   SHARDS       number of shards (array tasks)                                  (8)
#   CPUS         CPUs per scan task; each task scans with that many threads      (2)
#   MEM, TIME    memory and time limit per scan task                             (4G, 08:00:00)
#   MERGE_MEM, MERGE_TIME   the same for the merge                               (2G, 02:00:00)
#   NAVISCAN     the naviscan binary, at the same path on every node             (naviscan on PATH)
#   PARTITION, ACCOUNT      passed to sbatch when set
#   RESCAN=1     scan every shard again (picks up changes in the library); without it, a run
#                re-submits only the shards that have not completed, then merges
#
# Running it again with the same variables after a failure re-runs the shards that did not complete
# (the scan is incremental: what a task finished is kept) and merges. See docs/scale-out.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "submit.sh: $*" >&2; exit 2; }

: "${LIBRARY:?set LIBRARY to the music library (a folder every node reads)}"
: "${SHARDS_DIR:?set SHARDS_DIR to a shared folder for the shard stores}"
: "${OUT:?set OUT to the folder of the merged store}"
SHARDS=${SHARDS:-8}
CPUS=${CPUS:-2}
MEM=${MEM:-4G}
TIME=${TIME:-08:00:00}
MERGE_MEM=${MERGE_MEM:-2G}
MERGE_TIME=${MERGE_TIME:-02:00:00}
NAVISCAN=${NAVISCAN:-$(command -v naviscan || true)}

[[ $SHARDS =~ ^[0-9]+$ ]] && (( SHARDS >= 1 && SHARDS <= 4096 )) || die "SHARDS must be a whole number from 1 to 4096, not '$SHARDS'"
[[ $CPUS =~ ^[0-9]+$ ]] && (( CPUS >= 1 )) || die "CPUS must be a whole number of at least 1, not '$CPUS'"
[[ -n $NAVISCAN ]] || die "no naviscan on PATH; set NAVISCAN to the binary (the same path on every node)"
"$NAVISCAN" --version >/dev/null 2>&1 || die "NAVISCAN=$NAVISCAN does not run here; set NAVISCAN to the naviscan binary"
NAVISCAN=$(command -v "$NAVISCAN")
[[ -d $LIBRARY ]] || die "LIBRARY=$LIBRARY is not a folder"
LIBRARY=$(cd "$LIBRARY" && pwd)
for path in "$LIBRARY" "$SHARDS_DIR" "$OUT" "$NAVISCAN"; do
    [[ $path != *,* ]] || die "$path holds a comma, which sbatch's --export cannot pass on; use a path without one"
done

mkdir -p "$SHARDS_DIR/logs" "$OUT" || die "cannot make $SHARDS_DIR/logs or $OUT"
SHARDS_DIR=$(cd "$SHARDS_DIR" && pwd)
OUT=$(cd "$OUT" && pwd)
command -v sbatch >/dev/null || die "sbatch is not on PATH: run this on a Slurm login node"

# A shard is complete once its task's scan exited 0: it writes SHARDS_DIR/shard-K.complete naming
# "K/SHARDS", so a mark from a split into another number of shards does not count.
todo=()
for ((k = 0; k < SHARDS; k++)); do
    mark=$(cat "$SHARDS_DIR/shard-$k.complete" 2>/dev/null || true)
    if [[ ${RESCAN:-0} == 1 || ${mark%% *} != "$k/$SHARDS" ]]; then todo+=("$k"); fi
done

common=(--parsable --export="ALL,LIBRARY=$LIBRARY,SHARDS_DIR=$SHARDS_DIR,OUT=$OUT,SHARDS=$SHARDS,NAVISCAN=$NAVISCAN")
[[ -n ${PARTITION:-} ]] && common+=(--partition="$PARTITION")
[[ -n ${ACCOUNT:-} ]] && common+=(--account="$ACCOUNT")

dependency=()
if (( ${#todo[@]} > 0 )); then
    array=$(IFS=,; echo "${todo[*]}")
    scan=$(sbatch "${common[@]}" --job-name=naviscan-scan --array="$array" --cpus-per-task="$CPUS" --mem="$MEM" \
        --time="$TIME" --output="$SHARDS_DIR/logs/scan-%A_%a.log" "$here/naviscan-scan.sbatch")
    scan=${scan%%;*}   # "jobid;cluster" on a federation
    # afterany: the merge runs however the tasks end, and says which shards did not complete.
    dependency=(--dependency="afterany:$scan")
    echo "scan: job array $scan, shards $array of $SHARDS ($CPUS CPU$( (( CPUS > 1 )) && echo s), $MEM, $TIME each)" >&2
else
    echo "scan: every shard is complete; merging (RESCAN=1 scans them again)" >&2
fi
merge=$(sbatch "${common[@]}" "${dependency[@]}" --job-name=naviscan-merge --cpus-per-task=1 --mem="$MERGE_MEM" \
    --time="$MERGE_TIME" --output="$SHARDS_DIR/logs/merge-%j.log" "$here/naviscan-merge.sbatch")
merge=${merge%%;*}
echo "merge: job $merge into $OUT" >&2
echo "logs: $SHARDS_DIR/logs/ (scan-JOB_SHARD.log, merge-JOB.log); watch with: squeue -u ${USER:-$(id -un)}" >&2
echo "if a shard fails, fix the cause its log names and run this again with the same variables" >&2
