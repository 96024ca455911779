#!/usr/bin/env bash
# Runs the Slurm recipe (dist/slurm) as shipped, on a one-node Slurm cluster started by hand on this
# machine from Debian's packages (slurmctld, slurmd, slurm-client, munge), without systemd:
#  1. installs the packages when missing; starts a private munged (own key, own socket), slurmctld and
#     slurmd with a minimal slurm.conf in a scratch folder (own ports, so a Slurm or munge already on
#     the machine is left alone); checks that sinfo shows the node idle and that srun runs;
#  2. makes a library of 8 short tones (FLAC and MP3, in 3 folders) and scans it once without Slurm;
#  3. submit.sh's own checks with a recording sbatch: the scripts parse, the array and CPUs follow the
#     variables, only the incomplete shards of this split are re-submitted, bad variables stop it early;
#  4. submit.sh with SHARDS=4: every shard completes, the merge succeeds, the merged store holds the
#     same track rows as the single scan, and its naviscan.db copied alone is whole (WAL folded in);
#  5. a shard that fails (a file where its shard folder goes, RESCAN=1): the queue empties, the merge
#     exits 1 naming shard 2, shard-2.complete is absent; after the fix the same submit.sh command
#     submits only shard 2, and the merge succeeds and equals the single scan again;
#     once more, with every shard complete, it submits the merge alone, which succeeds;
#  6. stops the daemons and removes the scratch folder (SLURM_TEST_KEEP=1 keeps it).
# Usage: scripts/ci/slurm-test.sh PATH/TO/naviscan   (as root: it installs packages and runs slurmd)
# Settings: SLURM_TEST_TIMEOUT (seconds to wait for a submission's jobs, default 300),
#           SLURM_TEST_PORT (first port tried for slurmctld, default 16817; slurmd takes the next).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# == 1 ]] || { echo "usage: $0 PATH/TO/naviscan" >&2; exit 2; }
[[ -x $1 ]] || { echo "FAIL: $1 is not an executable (build it: swift build --product naviscan)" >&2; exit 2; }
[[ $(id -u) == 0 ]] || { echo "FAIL: run as root (it installs packages with apt-get and starts slurmd)" >&2; exit 2; }
timeout=${SLURM_TEST_TIMEOUT:-300}
started=$SECONDS
summary=()
note() { summary+=("$*"); echo "   ok: $*"; }
step() { echo "== $*"; }

# ---------------------------------------------------------------------------------------------------
# 1. Slurm
step "packages"
packages=()
for pair in slurmctld:slurmctld slurmd:slurmd sbatch:slurm-client munged:munge ffmpeg:ffmpeg sqlite3:sqlite3 jq:jq; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || packages+=("${pair#*:}")
done
if (( ${#packages[@]} > 0 )); then
    echo "   installing ${packages[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
    summary+=("installed: ${packages[*]}")
else
    summary+=("installed: nothing (slurmctld, slurmd, slurm-client, munge, ffmpeg, sqlite3, jq were there)")
fi
echo "   $(slurmctld -V), $(munged -V 2>&1 | head -1)"

# munged wants its socket's folders traversable by everyone, and the key's folder private.
work=$(mktemp -d "${TMPDIR:-/tmp}/naviscan-slurm-test.XXXXXX")
chmod 755 "$work"
mkdir -p "$work/etc" "$work/run" "$work/log" "$work/spool/ctld" "$work/spool/d" "$work/bin"
mkdir -m 700 "$work/munge"
export SLURM_CONF=$work/etc/slurm.conf
munge_socket=$work/run/munge.socket

fail_message=
cleanup() {
    local status=$?
    set +e
    if [[ -f $SLURM_CONF ]]; then
        # Cancels whatever is left, then stops both daemons (scontrol shutdown), by their pids if need be.
        scancel --quiet --full "--user=$(id -un)" 2>/dev/null
        scontrol shutdown >/dev/null 2>&1
        for pidfile in "$work/run/slurmd.pid" "$work/run/slurmctld.pid"; do
            [[ -s $pidfile ]] || continue
            pid=$(cat "$pidfile")
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -0 "$pid" 2>/dev/null && { kill -TERM "$pid"; sleep 1; kill -KILL "$pid" 2>/dev/null; }
        done
    fi
    if [[ -S $munge_socket ]]; then
        munged --socket="$munge_socket" --stop >/dev/null 2>&1 || {
            [[ -s $work/run/munged.pid ]] && kill -TERM "$(cat "$work/run/munged.pid")" 2>/dev/null; }
    fi
    if (( status != 0 )); then
        for log in "$work"/log/*.log "$work"/shards/logs/*.log; do
            [[ -f $log ]] || continue
            echo "---- last lines of $log"; tail -n 15 "$log"
        done
        echo "FAIL: ${fail_message:-exit status $status}" >&2
    fi
    if [[ ${SLURM_TEST_KEEP:-0} == 1 ]]; then
        echo "kept $work"
    else
        rm -rf "$work"
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'fail_message="interrupted"; exit 130' INT TERM

fail() {
    fail_message=$*
    echo "FAIL: $*" >&2
    exit 1
}

# Two free ports, not Slurm's defaults (6817, 6818), so a Slurm already on the machine is left alone.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ctld_port=${SLURM_TEST_PORT:-16817}
while port_busy "$ctld_port" || port_busy $((ctld_port + 1)); do ctld_port=$((ctld_port + 2)); done
slurmd_port=$((ctld_port + 1))

step "munged (private key and socket)"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --key-file="$work/munge/munge.key" --socket="$munge_socket" --pid-file="$work/run/munged.pid" \
    --log-file="$work/log/munged.log" --seed-file="$work/munge/munged.seed" \
    || fail "munged did not start (log above)"
munge -n -S "$munge_socket" | unmunge -S "$munge_socket" >/dev/null || fail "munge cannot encode and decode a credential"
note "munged on $munge_socket"

step "slurmctld and slurmd"
node=$(hostname -s)
cpus=$(nproc)
total_mb=$(free -m | awk '/^Mem:/ {print $2}')
margin_mb=$(( total_mb / 10 > 512 ? total_mb / 10 : 512 ))
real_mb=$(( total_mb - margin_mb ))
(( real_mb >= 1024 )) || fail "this machine has ${total_mb} MB of memory; the test needs about 1.5 GB"
cat > "$SLURM_CONF" <<EOF
# naviscan's slurm-test.sh: one node, started by hand, everything under $work
ClusterName=naviscan-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mb State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
for _ in $(seq 30); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 1; done
scontrol ping | grep -q UP || fail "slurmctld does not answer scontrol ping"
slurmd -f "$SLURM_CONF" -N "$node" || fail "slurmd did not start"
state=
for _ in $(seq 60); do
    state=$(sinfo -h -n "$node" -o %T 2>/dev/null || true)
    [[ $state == idle ]] && break
    sleep 1
done
[[ $state == idle ]] || { sinfo -R; fail "the node is '$state', not idle, 60 s after slurmd started"; }
sinfo
ran_on=$(srun --time=1 --ntasks=1 hostname) || fail "srun hostname failed"
note "node $node ($cpus CPUs, RealMemory=$real_mb MB) idle; srun hostname ran on $ran_on"

# ---------------------------------------------------------------------------------------------------
# 2. The library, and the single scan the merged stores are compared with
step "library and single scan"
naviscan=$work/bin/naviscan   # a copy: a rebuild of the original during the run changes nothing
cp "$1" "$naviscan"
library=$work/library
mkdir -p "$library/ambient" "$library/jazz" "$library/live"
folders=(ambient jazz live)
i=0
for freq in 220 247 262 294 330 349 392 440; do
    ext=flac; (( i % 2 )) && ext=mp3
    ffmpeg -nostdin -loglevel error -f lavfi -i "sine=frequency=$freq:duration=3" -ac 2 -ar 44100 \
        "$library/${folders[i % 3]}/tone-$freq.$ext" || fail "ffmpeg could not make tone-$freq.$ext"
    i=$((i + 1))
done
"$naviscan" scan "$library" --out "$work/single" --quiet || fail "the single scan exited $?"
rows() { sqlite3 "$1" "select relative_path,status,bpm,lufs,duration from track order by 1"; }
rows "$work/single/naviscan.db" > "$work/single.rows"
[[ $(wc -l < "$work/single.rows") == 8 ]] || fail "the single scan stored $(wc -l < "$work/single.rows") tracks, not 8"
note "8 tracks (4 FLAC, 4 MP3 in 3 folders); the single scan stored 8"

# ---------------------------------------------------------------------------------------------------
# 3. submit.sh's own checks and choices, with sbatch replaced by one that records its arguments and
#    answers a job id (nothing reaches the cluster): the scripts parse, nothing that the node size or
#    the shard count decides is fixed in them, the array follows the marks of this split, and every
#    bad variable stops it before anything is submitted.
step "submit.sh's checks and choices (sbatch recorded)"
for script in naviscan-scan.sbatch naviscan-merge.sbatch submit.sh; do
    bash -n "$repo/dist/slurm/$script" || fail "dist/slurm/$script does not parse (bash -n)"
    ! grep -Eq '^#SBATCH --(array|cpus-per-task)' "$repo/dist/slurm/$script" \
        || fail "dist/slurm/$script fixes the array or the CPUs in an #SBATCH line; submit.sh decides them"
done
dry=$work/dry
mkdir -p "$dry/bin" "$dry/music"
cat > "$dry/bin/sbatch" <<SBATCH
#!/bin/bash
echo "\$*" >> "$dry/calls"
echo \$((1000 + \$(wc -l < "$dry/calls")))
SBATCH
chmod +x "$dry/bin/sbatch"
dry_run() {   # dry_run [VAR=value...]: submit.sh's exit status in $dry_status, its sbatch calls in $dry/calls
    rm -f "$dry/calls"; touch "$dry/calls"
    dry_status=0
    env -u USER PATH="$dry/bin:/usr/bin:/bin" LIBRARY="$dry/music" SHARDS_DIR="$dry/shards" OUT="$dry/store" SHARDS=4 \
        NAVISCAN="$naviscan" "$@" "$repo/dist/slurm/submit.sh" > "$dry/stderr" 2>&1 || dry_status=$?
}
calls() { wc -l < "$dry/calls"; }
dry_run
[[ $dry_status == 0 && $(calls) == 2 ]] || { cat "$dry/stderr"; fail "submit.sh exited $dry_status with $(calls) sbatch calls, not 0 with 2"; }
scan_call=$(sed -n 1p "$dry/calls") merge_call=$(sed -n 2p "$dry/calls")
for want in "--array=0,1,2,3 " "--cpus-per-task=2 " "--output=$dry/shards/logs/scan-%A_%a.log" "SHARDS=4" "naviscan-scan.sbatch"; do
    [[ $scan_call == *"$want"* ]] || fail "the scan submission lacks '$want': $scan_call"
done
[[ $merge_call == *"--dependency=afterany:1001 "* && $merge_call == *"--output=$dry/shards/logs/merge-%j.log"* ]] \
    || fail "the merge submission does not wait on the array (afterany) or logs elsewhere: $merge_call"
grep -q 'squeue -u' "$dry/stderr" || fail "submit.sh with USER unset did not print how to watch the queue"
for k in 0 1 3; do echo "$k/4 2026-01-01T00:00:00Z" > "$dry/shards/shard-$k.complete"; done
dry_run
[[ $(sed -n 1p "$dry/calls") == *"--array=2 "* && $(calls) == 2 ]] || fail "with shards 0, 1, 3 complete it submitted: $(cat "$dry/calls")"
echo "2/4 2026-01-01T00:00:00Z" > "$dry/shards/shard-2.complete"
dry_run
[[ $(calls) == 1 && $(cat "$dry/calls") == *naviscan-merge.sbatch* && $(cat "$dry/calls") != *--dependency* ]] \
    || fail "with every shard complete it submitted: $(cat "$dry/calls")"
dry_run SHARDS=8
[[ $(sed -n 1p "$dry/calls") == *"--array=0,1,2,3,4,5,6,7 "* ]] || fail "marks of a split into 4 counted for a split into 8: $(cat "$dry/calls")"
dry_run RESCAN=1 CPUS=8
[[ $(sed -n 1p "$dry/calls") == *"--array=0,1,2,3 "* && $(sed -n 1p "$dry/calls") == *"--cpus-per-task=8 "* ]] \
    || fail "RESCAN=1 CPUS=8 submitted: $(cat "$dry/calls")"
for bad in "NAVISCAN=$dry/nowhere:NAVISCAN" "SHARDS=four:SHARDS" "OUT=$dry/a,b:comma" "LIBRARY=$dry/missing:not a folder"; do
    dry_run "${bad%:*}"
    [[ $dry_status == 2 && $(calls) == 0 ]] && grep -q "${bad##*:}" "$dry/stderr" \
        || { cat "$dry/stderr"; fail "submit.sh with ${bad%:*} exited $dry_status after $(calls) sbatch calls, not 2 naming '${bad##*:}' before any"; }
done
note "submit.sh: array and CPUs from the variables, afterany merge, only incomplete shards of this split re-submitted, 4 bad variables stop it before sbatch"

# ---------------------------------------------------------------------------------------------------
# 4. The recipe, as shipped
shards_dir=$work/shards
out=$work/out
submit_log=
submit() {   # the same command every time; extra variables (RESCAN=1) come first
    submit_log=$work/submit-$((++submissions)).txt
    env "$@" LIBRARY="$library" SHARDS_DIR="$shards_dir" OUT="$out" SHARDS=4 CPUS=1 MEM=500M TIME=00:10:00 \
        MERGE_MEM=500M MERGE_TIME=00:10:00 NAVISCAN="$naviscan" "$repo/dist/slurm/submit.sh" > "$submit_log" 2>&1 \
        || { local rc=$?; cat "$submit_log"; fail "submit.sh exited $rc"; }
    sed 's/^/   | /' "$submit_log"
    scan_job=$(sed -n 's/^scan: job array \([0-9]*\),.*/\1/p' "$submit_log")
    merge_job=$(sed -n 's/^merge: job \([0-9]*\) .*/\1/p' "$submit_log")
    [[ -n $merge_job ]] || fail "submit.sh printed no merge job"
}
submissions=0

wait_queue() {
    local t0=$SECONDS queue
    while :; do
        queue=$(squeue -h -o '%i %j %T %r') || fail "squeue failed (is slurmctld down?)"
        [[ -z $queue ]] && break
        (( SECONDS - t0 < timeout )) || { echo "$queue"; fail "jobs still queued after ${timeout}s (above)"; }
        sleep 1
    done
    waited=$((SECONDS - t0))
}

# job_state JOB [ARRAY_TASK]: "STATE EXIT:SIGNAL" from scontrol (Slurm keeps ended jobs MinJobAge, 300 s)
job_state() {
    scontrol -o show job "$1" | awk -v task="${2:-}" '
        task != "" && $0 !~ ("ArrayTaskId=" task " ") { next }
        { for (i = 1; i <= NF; i++) { if ($i ~ /^JobState=/) s = substr($i, 10); if ($i ~ /^ExitCode=/) e = substr($i, 10) } }
        END { print s, e }'
}

# A merged store: its naviscan.db alone is whole (checked first: opening it with sqlite3 folds a WAL),
# and it holds the single scan's track rows.
check_store() {
    [[ -f $out/naviscan.db ]] || fail "$out/naviscan.db does not exist after the merge"
    local copy=$work/copy-$submissions
    mkdir "$copy"
    cp "$out/naviscan.db" "$copy/"
    local n
    n=$(sqlite3 "$copy/naviscan.db" "select count(*) from track") || fail "the copy of naviscan.db alone cannot be read"
    [[ $n == 8 ]] || fail "naviscan.db copied alone holds $n tracks, not 8: the WAL was not folded in"
    rows "$out/naviscan.db" > "$work/merged.rows"
    diff -u "$work/single.rows" "$work/merged.rows" || fail "the merged store's tracks differ from the single scan's (diff above)"
    "$naviscan" status "$library" --out "$out" --json > "$work/status.json" || fail "naviscan status exited $?"
    [[ $(jq .analysed "$work/status.json") == 8 && $(jq .failed "$work/status.json") == 0 ]] \
        || fail "naviscan status says analysed=$(jq .analysed "$work/status.json") failed=$(jq .failed "$work/status.json")"
}

check_merge_ok() {
    local log=$shards_dir/logs/merge-$merge_job.log
    [[ -f $log ]] || fail "no merge log $log"
    sed 's/^/   merge log | /' "$log"
    [[ $(job_state "$merge_job") == "COMPLETED 0:0" ]] || fail "the merge job ended $(job_state "$merge_job"), not COMPLETED 0:0"
    ! grep -Eiq 'fail|error|did not complete' "$log" || fail "the merge log reports a failure (above)"
    grep -q 'It holds the whole library' "$log" || fail "the merge log does not say the store holds the whole library"
    for k in 0 1 2 3; do [[ -f $shards_dir/shard-$k.complete ]] || fail "shard-$k.complete is missing"; done
}

step "submit.sh: 4 shards"
t0=$SECONDS
submit
grep -q '^scan: job array [0-9]*, shards 0,1,2,3 of 4 ' "$submit_log" || fail "submit.sh did not submit shards 0,1,2,3"
wait_queue
for k in 0 1 2 3; do
    [[ $(job_state "$scan_job" $k) == "COMPLETED 0:0" ]] || fail "scan task $k ended $(job_state "$scan_job" $k)"
done
check_merge_ok
check_store
# The failure path below breaks shard 2: it must hold tracks for the re-run to mean something.
counts=()
for k in 0 1 2 3; do counts+=("$(sqlite3 "$shards_dir/shard-$k/naviscan.db" "select count(*) from track")"); done
(( counts[0] + counts[1] + counts[2] + counts[3] == 8 && counts[2] > 0 )) \
    || fail "the shard stores hold ${counts[*]} tracks: not 8 in all, or none in shard 2"
note "shards hold ${counts[*]} tracks"
note "4 shards + merge in $((SECONDS - t0))s (queue empty after ${waited}s): merge COMPLETED 0:0, store = single scan, naviscan.db alone holds 8 tracks"

# ---------------------------------------------------------------------------------------------------
# 5. A shard that fails: a file where shard 2's folder goes (its scan cannot start: exit 2)
step "submit.sh RESCAN=1 with shard 2 broken"
t0=$SECONDS
rm -rf "$shards_dir/shard-2"
echo "not a folder" > "$shards_dir/shard-2"
submit RESCAN=1
grep -q '^scan: job array [0-9]*, shards 0,1,2,3 of 4 ' "$submit_log" || fail "RESCAN=1 did not submit every shard"
wait_queue
[[ -z $(squeue -h) ]] || fail "jobs left in the queue"
task2=$(job_state "$scan_job" 2)
sed 's/^/   scan-2 log | /' "$shards_dir/logs/scan-${scan_job}_2.log"
[[ $task2 == FAILED* && $task2 != *" 0:0" ]] || fail "scan task 2 ended '$task2', not FAILED"
for k in 0 1 3; do
    [[ $(job_state "$scan_job" $k) == "COMPLETED 0:0" ]] || fail "scan task $k ended $(job_state "$scan_job" $k)"
done
[[ ! -e $shards_dir/shard-2.complete ]] || fail "shard-2.complete exists although shard 2 failed"
merge_log=$shards_dir/logs/merge-$merge_job.log
sed 's/^/   merge log | /' "$merge_log"
[[ $(job_state "$merge_job") == "FAILED 1:0" ]] || fail "the merge ended '$(job_state "$merge_job")', not FAILED 1:0"
grep -q 'shards 2 of 4 did not complete' "$merge_log" || fail "the merge log does not name shard 2"
note "shard 2 broken: task 2 $task2, tasks 0,1,3 COMPLETED, merge FAILED 1:0 naming shard 2, queue empty after ${waited}s, no shard-2.complete"

step "submit.sh again after the fix (same command, no RESCAN)"
t0=$SECONDS
rm -f "$shards_dir/shard-2"
submit
grep -q '^scan: job array [0-9]*, shards 2 of 4 ' "$submit_log" || fail "submit.sh did not submit shard 2 alone"
wait_queue
[[ $(job_state "$scan_job" 2) == "COMPLETED 0:0" ]] || fail "scan task 2 ended $(job_state "$scan_job" 2)"
check_merge_ok
check_store
note "re-run submitted shard 2 alone; shard + merge in $((SECONDS - t0))s: merge COMPLETED 0:0, store = single scan again"

step "submit.sh once more: every shard complete, the merge alone"
t0=$SECONDS
submit
grep -q '^scan: every shard is complete; merging' "$submit_log" || fail "submit.sh submitted scans although every shard is complete"
[[ -z $scan_job ]] || fail "submit.sh submitted scan job $scan_job although every shard is complete"
wait_queue
check_merge_ok
check_store
note "a run with every shard complete submitted the merge alone (no dependency); it succeeded in $((SECONDS - t0))s"

# ---------------------------------------------------------------------------------------------------
echo
recipe="dist/slurm as committed"
if ! git -C "$repo" diff --quiet HEAD -- dist/slurm 2>/dev/null; then
    recipe="dist/slurm as in the working tree (it differs from git's HEAD, or git cannot tell)"
fi
echo "== summary: $recipe ran on a one-node Slurm ($(slurmctld -V)), $((SECONDS - started))s in all"
for line in "${summary[@]}"; do echo " - $line"; done
echo "PASS"
