#!/bin/bash
# naviscan on Kubernetes: starts the scan of a library as an Indexed Job (one pod per shard) and the
# merge Job that waits for it by itself, with the claims and the service account they need. Run it
# wherever kubectl reaches the cluster; every setting is a variable:
#
#   LIBRARY_CLAIM  an existing claim holding the library (ReadOnlyMany, or ReadWriteMany)  (naviscan-library)
#   LIBRARY_NFS    or: server:/export of the library; makes a PersistentVolume and the
#                  claim LIBRARY_CLAIM for it, read-only (needs the right to create PVs)
#   LIBRARY_SUBPATH  the library's folder inside that volume                       (its root)
#   STORAGE_CLASS  a storage class with ReadWriteMany volumes for the data claim    (required unless
#                  the claim exists: kubectl get storageclass)
#   DATA_CLAIM     the data claim: shard stores, marks, logs, merged store /data/store (naviscan-data;
#                  made with STORAGE_CLASS and DATA_SIZE when it does not exist)
#   DATA_SIZE      its size when made                                               (50Gi)
#   IMAGE          the naviscan image (make image; load it into the cluster's nodes or push it to a
#                  registry they pull from)      (localhost/naviscan:VERSION, VERSION of naviscan here)
#   IMAGE_PULL_POLICY  IfNotPresent, Always or Never                                (IfNotPresent)
#   NAMESPACE      where everything goes; it must exist    (the kubectl context's namespace, or default)
#   SHARDS         number of shards (pods of the Indexed Job)                       (8)
#   CPUS           CPUs per scan pod; each scans with that many threads             (2)
#   MEMORY         memory per scan pod (request and limit)                          (4Gi)
#   MERGE_MEMORY   memory limit of the merge                                        (2Gi)
#   DEADLINE       seconds the whole scan may take; then it is stopped and merged   (86400)
#   MERGE_TIME     seconds the merge may take once the scan is over                 (7200)
#   TTL            seconds a finished Job and its pods' logs are kept               (604800, 7 days)
#   RUN            names this run's Jobs (naviscan-scan-RUN, naviscan-merge-RUN)   (the UTC time)
#   RESCAN=1       scan every shard again (picks up changes in the library); without it, the pods of
#                  shards already complete exit at once, so a run re-scans only the shards that have not
#                  completed, then merges
#   WAIT=1         wait for the merge and exit with its status (0 merged, 1 not)
#   DRY_RUN=1      print the YAML it would apply and stop; needs no cluster
#   KUBECTL        the kubectl command, with options if need be                   (kubectl)
#
# Running it again with the same variables after a failure re-runs the shards that did not complete
# (the scan is incremental: what a pod finished is kept) and merges. See docs/scale-out.md.
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true
here=$(cd "$(dirname "$0")" && pwd)
die() { echo "submit.sh: $*" >&2; exit 2; }
say() { echo "$*" >&2; }

read -ra kubectl <<< "${KUBECTL:-kubectl}"
(( ${#kubectl[@]} > 0 )) || die "KUBECTL is empty"
k() { "${kubectl[@]}" --request-timeout=30s "$@"; }
dry_run=${DRY_RUN:-0}

# The image: the one `make image` tags for the naviscan found here, else this recipe's version.
recipe_version=0.6.0
if [[ -z ${IMAGE:-} ]]; then
    version=$(naviscan --version 2>/dev/null || true)
    [[ $version =~ ^[0-9A-Za-z.+~-]+$ ]] || version=$recipe_version
    IMAGE=localhost/naviscan:$version
fi
IMAGE_PULL_POLICY=${IMAGE_PULL_POLICY:-IfNotPresent}
SHARDS=${SHARDS:-8}
CPUS=${CPUS:-2}
MEMORY=${MEMORY:-4Gi}
MERGE_MEMORY=${MERGE_MEMORY:-2Gi}
DEADLINE=${DEADLINE:-86400}
MERGE_TIME=${MERGE_TIME:-7200}
TTL=${TTL:-604800}
RUN=${RUN:-$(date -u +%Y%m%d-%H%M%S)}
RESCAN=${RESCAN:-0}
DATA_CLAIM=${DATA_CLAIM:-naviscan-data}
DATA_SIZE=${DATA_SIZE:-50Gi}
STORAGE_CLASS=${STORAGE_CLASS:-}
LIBRARY_CLAIM=${LIBRARY_CLAIM:-naviscan-library}
LIBRARY_NFS=${LIBRARY_NFS:-}
LIBRARY_SUBPATH=${LIBRARY_SUBPATH:-}
if [[ -z ${NAMESPACE:-} && $dry_run != 1 ]]; then
    NAMESPACE=$(k config view --minify -o 'jsonpath={..namespace}' 2>/dev/null || true)
fi
NAMESPACE=${NAMESPACE:-default}

# Every value is checked before it goes into the YAML, so none can change its structure.
name='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
quantity='^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$'
whole() { [[ $2 =~ ^[0-9]+$ ]] && (( 10#$2 >= $3 && 10#$2 <= $4 )) || die "$1 must be a whole number from $3 to $4, not '$2'"; }
whole SHARDS "$SHARDS" 1 4096
whole CPUS "$CPUS" 1 1024
whole DEADLINE "$DEADLINE" 60 31536000
whole MERGE_TIME "$MERGE_TIME" 60 31536000
whole TTL "$TTL" 0 31536000
SHARDS=$((10#$SHARDS)) CPUS=$((10#$CPUS)) DEADLINE=$((10#$DEADLINE)) MERGE_TIME=$((10#$MERGE_TIME)) TTL=$((10#$TTL))
for var in MEMORY MERGE_MEMORY DATA_SIZE; do
    [[ ${!var} =~ $quantity ]] || die "$var must be a quantity such as 4Gi or 500Mi, not '${!var}'"
done
[[ $RUN =~ $name && ${#RUN} -le 32 ]] || die "RUN must be at most 32 lower-case letters, digits and '-' (it names the Jobs), not '$RUN'"
[[ $NAMESPACE =~ $name && ${#NAMESPACE} -le 63 ]] || die "NAMESPACE '$NAMESPACE' is not a namespace name"
for var in DATA_CLAIM LIBRARY_CLAIM; do
    [[ ${!var} =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ && ${#var} -le 253 ]] || die "$var '${!var}' is not a claim name"
done
[[ -z $STORAGE_CLASS || $STORAGE_CLASS =~ ^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$ ]] || die "STORAGE_CLASS '$STORAGE_CLASS' is not a storage class name"
[[ $IMAGE =~ ^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$ ]] || die "IMAGE '$IMAGE' is not an image reference"
[[ $IMAGE_PULL_POLICY =~ ^(IfNotPresent|Always|Never)$ ]] || die "IMAGE_PULL_POLICY must be IfNotPresent, Always or Never"
[[ $RESCAN =~ ^[01]$ ]] || die "RESCAN must be 0 or 1"
[[ $LIBRARY_SUBPATH =~ ^[^/\"\\$]([^\"\\$]*)?$ || -z $LIBRARY_SUBPATH ]] || die "LIBRARY_SUBPATH must be a relative path without quotes, backslashes or \$"
[[ /$LIBRARY_SUBPATH/ != */../* ]] || die "LIBRARY_SUBPATH must stay inside the volume (no ..)"
NFS_SERVER='' NFS_PATH=''
if [[ -n $LIBRARY_NFS ]]; then
    [[ $LIBRARY_NFS =~ ^([A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\]):(/[^\"\\$]*)$ ]] \
        || die "LIBRARY_NFS must be server:/export (such as nas.example.org:/export/music), not '$LIBRARY_NFS'"
    NFS_SERVER=${BASH_REMATCH[1]} NFS_PATH=${BASH_REMATCH[2]}
    NFS_SERVER=${NFS_SERVER#[} NFS_SERVER=${NFS_SERVER%]}
fi
WAIT_TIMEOUT=$((DEADLINE + 600))                # the scan's deadline, and time for its pods to stop
MERGE_DEADLINE=$((WAIT_TIMEOUT + MERGE_TIME))
SCAN_JOB=naviscan-scan-$RUN MERGE_JOB=naviscan-merge-$RUN

# The templates' ${NAME} for these names, and nothing else (the pods' own shell scripts use $NAME).
render() {
    local text var
    text=$(<"$here/$1")
    for var in RUN NAMESPACE IMAGE IMAGE_PULL_POLICY SHARDS CPUS MEMORY MERGE_MEMORY DEADLINE MERGE_DEADLINE \
               WAIT_TIMEOUT TTL RESCAN STORAGE_CLASS DATA_SIZE DATA_CLAIM LIBRARY_CLAIM LIBRARY_SUBPATH NFS_SERVER NFS_PATH; do
        text=${text//"\${$var}"/${!var}}
    done
    [[ ! $text =~ \$\{[A-Z_]+\} ]] || die "$1: ${BASH_REMATCH[0]} has no value (a template newer than this submit.sh?)"
    printf '%s\n---\n' "$text"
}

if [[ $dry_run == 1 ]]; then
    make_library=0 make_data=0
    [[ -n $LIBRARY_NFS ]] && make_library=1
    [[ -n $STORAGE_CLASS ]] && make_data=1
else
    # The cluster: reachable, new enough, and these objects allowed.
    command -v "${kubectl[0]}" >/dev/null || die "${kubectl[0]} is not on PATH (set KUBECTL)"
    server=$(k version -o json 2>&1) || die "kubectl does not reach the cluster (check the context: kubectl config current-context):
$(printf '%s\n' "$server" | grep -v '^[[:space:]{}]' | tail -n 3)"
    server=${server#*\"serverVersion\"}
    [[ $server =~ \"minor\":\ *\"([0-9]+) ]] || die "kubectl does not reach the cluster (no server version in kubectl version)"
    minor=${BASH_REMATCH[1]}
    [[ $server =~ \"major\":\ *\"([0-9]+) ]] && major=${BASH_REMATCH[1]} || major=1
    (( major > 1 || minor >= 29 )) || die "the cluster runs Kubernetes $major.$minor; the scan Job's backoffLimitPerIndex needs 1.29 or later"

    # exists KIND NAME [namespaced]: 0 it exists, 1 it does not, 2 kubectl may not tell (printed).
    exists() {
        local out
        if [[ ${3:-} == namespaced ]]; then out=$(k -n "$NAMESPACE" get "$1" "$2" --ignore-not-found -o name 2>&1) || { say "$out"; return 2; }
        else out=$(k get "$1" "$2" --ignore-not-found -o name 2>&1) || { say "$out"; return 2; }; fi
        [[ -n $out ]]
    }
    status=0; exists namespace "$NAMESPACE" || status=$?
    (( status != 1 )) || die "namespace $NAMESPACE does not exist: kubectl create namespace $NAMESPACE, or set NAMESPACE"
    (( status == 0 )) || say "submit.sh: cannot list namespaces; going on with NAMESPACE=$NAMESPACE"

    # A run's Jobs are new ones: apply cannot change a Job that exists.
    for job in "$SCAN_JOB" "$MERGE_JOB"; do
        status=0; exists job "$job" namespaced || status=$?
        (( status != 0 )) || die "job $job exists: RUN=$RUN was used already; leave RUN unset (or set another) for a new run"
        (( status == 1 )) || die "cannot read the jobs of namespace $NAMESPACE (above)"
    done

    # The library: an existing claim, or one made for an NFS export.
    status=0; exists pvc "$LIBRARY_CLAIM" namespaced || status=$?
    (( status != 2 )) || die "cannot read the claims of namespace $NAMESPACE (above)"
    make_library=0
    if (( status == 0 )); then
        modes=$(k -n "$NAMESPACE" get pvc "$LIBRARY_CLAIM" -o 'jsonpath={.spec.accessModes}' 2>/dev/null || true)
        [[ -n $LIBRARY_NFS ]] && say "submit.sh: claim $LIBRARY_CLAIM exists; LIBRARY_NFS is not used"
        [[ $modes == *ReadOnlyMany* || $modes == *ReadWriteMany* ]] \
            || say "submit.sh: warning: claim $LIBRARY_CLAIM is $modes: pods on other nodes cannot mount it (ReadOnlyMany wanted)"
    elif [[ -n $LIBRARY_NFS ]]; then
        make_library=1
        status=0; exists pv "naviscan-library-$NAMESPACE" || status=$?
        (( status != 0 )) || die "persistent volume naviscan-library-$NAMESPACE exists but claim $LIBRARY_CLAIM does not; delete the volume (kubectl delete pv naviscan-library-$NAMESPACE) or set LIBRARY_CLAIM"
    else
        die "no claim $LIBRARY_CLAIM in namespace $NAMESPACE: set LIBRARY_CLAIM to the claim of the library, or LIBRARY_NFS=server:/export to make one"
    fi

    # The data: an existing claim, or one made with STORAGE_CLASS.
    status=0; exists pvc "$DATA_CLAIM" namespaced || status=$?
    make_data=0
    if (( status == 0 )); then
        modes=$(k -n "$NAMESPACE" get pvc "$DATA_CLAIM" -o 'jsonpath={.spec.accessModes}' 2>/dev/null || true)
        [[ $modes == *ReadWriteMany* ]] || say "submit.sh: warning: claim $DATA_CLAIM is $modes: the scan pods on other nodes cannot mount it (ReadWriteMany wanted)"
    else
        [[ -n $STORAGE_CLASS ]] || die "no claim $DATA_CLAIM in namespace $NAMESPACE: set STORAGE_CLASS to a storage class with ReadWriteMany volumes (kubectl get storageclass) to make it, or DATA_CLAIM to an existing ReadWriteMany claim"
        make_data=1
        status=0; exists storageclass "$STORAGE_CLASS" || status=$?
        (( status != 1 )) || die "storage class $STORAGE_CLASS does not exist (kubectl get storageclass)"
    fi

    for what in jobs.batch serviceaccounts roles.rbac.authorization.k8s.io rolebindings.rbac.authorization.k8s.io \
                $( (( make_data || make_library )) && echo persistentvolumeclaims); do
        [[ $(k -n "$NAMESPACE" auth can-i create "$what" 2>/dev/null || true) == yes ]] \
            || die "you may not create $what in namespace $NAMESPACE (kubectl auth can-i create $what -n $NAMESPACE)"
    done
    if (( make_library )); then
        [[ $(k auth can-i create persistentvolumes 2>/dev/null || true) == yes ]] \
            || die "you may not create persistent volumes, which LIBRARY_NFS takes: ask for a claim of the library and set LIBRARY_CLAIM"
    fi
fi

manifest=$(
    (( make_library )) && render naviscan-library-nfs.yaml
    (( make_data )) && render naviscan-data.yaml
    render naviscan-rbac.yaml
    render naviscan-scan.yaml
    render naviscan-merge.yaml
)
if [[ $dry_run == 1 ]]; then
    printf '%s\n' "$manifest"
    exit 0
fi

printf '%s\n' "$manifest" | k -n "$NAMESPACE" apply -f - >&2 || die "kubectl apply failed (above); nothing of run $RUN runs if its Jobs are not listed"
(( make_library )) && say "library: claim $LIBRARY_CLAIM made for nfs $NFS_SERVER:$NFS_PATH (read-only)"
(( make_data )) && say "data: claim $DATA_CLAIM made ($DATA_SIZE, storage class $STORAGE_CLASS, ReadWriteMany)"
say "scan: job $SCAN_JOB, $SHARDS shards ($CPUS CPU$( (( CPUS > 1 )) && echo s), $MEMORY each), image $IMAGE$( [[ $RESCAN == 1 ]] && echo ", every shard scanned again")"
say "merge: job $MERGE_JOB waits for it, then merges into /data/store on claim $DATA_CLAIM"
say "watch: ${kubectl[*]} -n $NAMESPACE get jobs,pods -l app.kubernetes.io/instance=$RUN"
say "logs: ${kubectl[*]} -n $NAMESPACE logs -l job-name=$SCAN_JOB --prefix (one shard: add ,batch.kubernetes.io/job-completion-index=K);"
say "      ${kubectl[*]} -n $NAMESPACE logs job/$MERGE_JOB -c merge (-c wait: the wait); kept $TTL s after the end;"
say "      on claim $DATA_CLAIM for good: shards/logs/scan-$RUN-K.log, shards/logs/merge-$RUN.log"
say "if a shard fails, fix the cause its log names and run this again with the same variables (a new RUN)"

[[ ${WAIT:-0} == 1 ]] || exit 0
say "waiting for job $MERGE_JOB (at most $MERGE_DEADLINE s)"
give_up=$((SECONDS + MERGE_DEADLINE + 300))
result=1
while (( SECONDS < give_up )); do
    state=$(k -n "$NAMESPACE" get job "$MERGE_JOB" -o 'jsonpath={.status.conditions[?(@.status=="True")].type}' 2>/dev/null || true)
    case " $state " in
        *" Complete "*) result=0; break ;;
        *" Failed "*) result=1; break ;;
    esac
    sleep "${WAIT_POLL_SECONDS:-20}"
done
k -n "$NAMESPACE" logs "job/$MERGE_JOB" -c merge --tail=20 >&2 || true
say "merge: job $MERGE_JOB $( (( result == 0 )) && echo complete || echo failed)"
exit "$result"
