#!/usr/bin/env bash
# make test-image: the image archives make image wrote, as a user gets them.
#  1. the docker-archive's image config (read from the tar with python3, no podman): user 990:990,
#     volumes /music and /data, entry point naviscan, command serve, the environment defaults, the
#     HEALTHCHECK; the oci-archive's config the same but the health check;
#  2. podman load -i of each archive (the image removed from local storage first);
#  3. podman run (runtime runc, explicit --ulimit: crun and the default limits fail on this kind of
#     machine) with the demo library read-only at /music and a fresh folder at /data:
#     `naviscan scan` (the image's defaults) analyses 3 tracks as uid 990 and writes nothing into /music;
#  4. podman run -d of the image's own command (serve, 0.0.0.0:8000, port published on 127.0.0.1 only)
#     with NAVISCAN_SERVE_TOKEN: GET /health 200, GET /smart-dj/profile?relative_path=groove_120bpm.mp3
#     200 with the token, `podman healthcheck run` healthy, podman stop ends it cleanly;
#  5. dist/compose.yaml: its settings (image tag = this version, /music read-only in both services, the
#     named volume, port, health check), then `podman-compose up -d naviscan` as shipped (Navidrome's
#     image needs a registry): GET /health and a profile with NAVISCAN_SERVE_TOKEN on port 8000.
# Needs root and podman. Usage: scripts/ci/test-image.sh DOCKER_ARCHIVE OCI_ARCHIVE
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# = 2 ] && [ -f "$1" ] && [ -f "$2" ] || { echo "usage: $0 naviscan-V-A.docker.tar naviscan-V-A.oci.tar (FAIL: missing archive)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "FAIL: test-image needs root (podman with runc)" >&2; exit 1; }
docker_archive=$(readlink -f "$1")
oci_archive=$(readlink -f "$2")
started=$(date +%s)
fail() { echo "FAIL: $*" >&2; exit 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/naviscan-test-image.XXXXXX")
name=naviscan-test-image-$$
project=naviscan-test-compose-$$
cleanup() {
    podman --runtime runc rm -f -t 0 "$name" >/dev/null 2>&1 || true
    podman ps -a --filter "label=io.podman.compose.project=$project" --format '{{.ID}}' | xargs -r podman rm -f -t 0 >/dev/null 2>&1 || true
    podman volume rm -f "${project}_naviscan-data" "${project}_navidrome-data" >/dev/null 2>&1 || true
    podman network rm -f "${project}_default" >/dev/null 2>&1 || true
    rm -rf "$scratch"
}
trap cleanup EXIT

echo "== the archives' image config"
python3 - "$docker_archive" "$oci_archive" > "$scratch/version" <<'PY' || fail "the archives' image config (above)"
import json, sys, tarfile

def docker_config(path):
    with tarfile.open(path) as t:
        manifest = json.load(t.extractfile("manifest.json"))
        return json.load(t.extractfile(manifest[0]["Config"])), manifest[0]["RepoTags"]

def oci_config(path):
    with tarfile.open(path) as t:
        index = json.load(t.extractfile("index.json"))
        blob = lambda d: json.load(t.extractfile("blobs/" + d["digest"].replace(":", "/")))
        manifest = blob(index["manifests"][0])
        return blob(manifest["config"]), index["manifests"][0].get("annotations", {}).get("org.opencontainers.image.ref.name")

errors = []
def check(what, got, want):
    if got != want:
        errors.append(f"{what}: {got!r}, expected {want!r}")

docker, tags = docker_config(sys.argv[1])
oci, ref = oci_config(sys.argv[2])
version = docker["config"]["Labels"]["org.opencontainers.image.version"]
# docker load names it naviscan:VERSION (docker.io/library/ is Docker's spelling of a short name).
check("docker-archive has the tag naviscan:VERSION",
      bool({f"naviscan:{version}", f"docker.io/library/naviscan:{version}"} & set(tags or [])), True)
for label, config in (("docker-archive", docker["config"]), ("oci-archive", oci["config"])):
    check(f"{label} User", config.get("User"), "990:990")
    check(f"{label} Volumes", sorted(config.get("Volumes", {})), ["/data", "/music"])
    check(f"{label} Entrypoint", config.get("Entrypoint"), ["/usr/bin/naviscan"])
    check(f"{label} Cmd", config.get("Cmd"), ["serve"])
    check(f"{label} ExposedPorts", sorted(config.get("ExposedPorts", {})), ["8000/tcp"])
    env = dict(e.split("=", 1) for e in config.get("Env", []))
    for key, value in {"NAVISCAN_LIBRARY": "/music", "NAVISCAN_OUT": "/data", "NAVISCAN_SERVE_HOST": "0.0.0.0",
                       "NAVISCAN_SERVE_PORT": "8000"}.items():
        check(f"{label} Env {key}", env.get(key), value)
check("docker-archive Healthcheck", docker["config"].get("Healthcheck", {}).get("Test"),
      ["CMD", "/usr/local/bin/naviscan-healthcheck"])
check("oci-archive ref.name", ref, f"naviscan:{version}")
for e in errors:
    print("FAIL: " + e, file=sys.stderr)
print(version)
sys.exit(1 if errors else 0)
PY
version=$(cat "$scratch/version")
image=localhost/naviscan:$version
echo "   user 990:990, volumes /music /data, entry point naviscan serve, env defaults, HEALTHCHECK (docker-archive)"

echo "== podman load -i"
for archive in "$oci_archive" "$docker_archive"; do
    podman rmi -f "$image" >/dev/null 2>&1 || true
    podman load -q -i "$archive" > "$scratch/load.log" 2>&1 || { cat "$scratch/load.log"; fail "podman load -i $archive"; }
    podman image exists "$image" || { cat "$scratch/load.log"; fail "podman load -i $(basename "$archive") does not give $image"; }
done
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "   both archives load as $image ($(( size / 1048576 )) MiB)"

# Containers here run with runc and limits within the host's hard limits (crun and the defaults fail).
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] && nofile=65536; [ "$nofile" -gt 65536 ] && nofile=65536
run=(podman --runtime runc run --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096)
mkdir -p "$scratch/music" "$scratch/data"
cp -r Fixtures/demo/. "$scratch/music/"
chown 990:990 "$scratch/data"   # the image's user owns the store; a named volume gets this from the image
volumes=(-v "$scratch/music:/music:ro" -v "$scratch/data:/data")
music_before=$(find "$scratch/music" -printf "%p %s %T@\n")

echo "== podman run ... naviscan scan (the image's defaults: /music into /data)"
"${run[@]}" --rm "${volumes[@]}" "$image" scan --quiet --json > "$scratch/summary.json" 2> "$scratch/scan.log" \
    || { cat "$scratch/scan.log" "$scratch/summary.json"; fail "naviscan scan in the container"; }
grep -q '"analysed" : 3' "$scratch/summary.json" || { cat "$scratch/summary.json"; fail "the scan in the container did not analyse 3 tracks"; }
[ "$(stat -c %u "$scratch/data/naviscan.db")" = 990 ] || fail "the store is not owned by uid 990"
[ "$(find "$scratch/music" -printf "%p %s %T@\n")" = "$music_before" ] || fail "the scan wrote into /music"
echo "   3 tracks analysed as uid 990; nothing written into /music"

echo "== podman run -d (the image's command: naviscan serve on 0.0.0.0:8000)"
token=test-token-$$-$RANDOM
"${run[@]}" -d --name "$name" "${volumes[@]}" -p 127.0.0.1::8000 -e "NAVISCAN_SERVE_TOKEN=$token" "$image" > /dev/null 2> "$scratch/run.log" \
    || { cat "$scratch/run.log"; fail "podman run -d $image"; }
port=$(podman port "$name" 8000/tcp | sed -n 's/.*:\([0-9]*\)$/\1/p' | head -1)
[ -n "$port" ] || fail "no published port for 8000/tcp"
http_get() {  # PATH [HEADER]: the whole answer, empty when nothing answers
    { exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n%s\r\n' "$1" "${2:+$2$'\r\n'}" >&3 && cat <&3; } 2>/dev/null || true
}
health=
for _ in $(seq 300); do
    health=$(http_get /health)
    case "$health" in "HTTP/1.1 200"*) break ;; esac
    [ "$(podman inspect --format '{{.State.Running}}' "$name")" = true ] || break
    sleep 0.2
done
case "$health" in "HTTP/1.1 200"*) ;; *) podman logs "$name" 2>&1 | tail -20; fail "GET /health did not answer 200 (last: ${health%%$'\r'*})" ;; esac
profile=$(http_get '/smart-dj/profile?relative_path=groove_120bpm.mp3' "Authorization: Bearer $token")
case "$profile" in "HTTP/1.1 200"*) ;; *) podman logs "$name" 2>&1 | tail -20; echo "$profile" | head -20; fail "GET /smart-dj/profile?relative_path=groove_120bpm.mp3 did not answer 200" ;; esac
[ "$(podman exec "$name" id -u)" = 990 ] || fail "serve does not run as uid 990"
podman healthcheck run "$name" > "$scratch/health.log" 2>&1 || { cat "$scratch/health.log"; fail "podman healthcheck run (the image's HEALTHCHECK)"; }
podman stop -t 20 "$name" > /dev/null 2> "$scratch/stop.log"
code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
[ "$code" = 0 ] || { podman logs "$name" 2>&1 | tail -20; fail "naviscan serve exited $code on podman stop"; }
echo "   GET /health 200, GET /smart-dj/profile 200, HEALTHCHECK healthy, uid 990, podman stop exits 0"

echo "== dist/compose.yaml: podman-compose up -d naviscan (Navidrome's image would need a registry)"
python3 - "$version" <<'PY' || fail "dist/compose.yaml (above)"
import sys, yaml
version = sys.argv[1]
compose = yaml.safe_load(open("dist/compose.yaml"))
errors = []
def check(what, got, want):
    if got != want:
        errors.append(f"dist/compose.yaml {what}: {got!r}, expected {want!r}")
naviscan, navidrome = compose["services"]["naviscan"], compose["services"]["navidrome"]
check("naviscan image", naviscan.get("image"), f"naviscan:{version}")
check("naviscan pull_policy", naviscan.get("pull_policy"), "never")
check("naviscan volumes", naviscan.get("volumes"), ["${MUSIC:-./music}:/music:ro", "naviscan-data:/data"])
check("navidrome music volume", "${MUSIC:-./music}:/music:ro" in navidrome.get("volumes", []), True)
check("naviscan ports", naviscan.get("ports"), ["8000:8000"])
check("naviscan healthcheck", naviscan.get("healthcheck", {}).get("test"), ["CMD", "/usr/local/bin/naviscan-healthcheck"])
check("restart", {naviscan.get("restart"), navidrome.get("restart")}, {"unless-stopped"})
check("named volumes", sorted(compose.get("volumes", {})), ["navidrome-data", "naviscan-data"])
for e in errors:
    print("FAIL: " + e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
command -v podman-compose >/dev/null || fail "podman-compose is missing (make image-deps installs it)"
if (exec 3<>/dev/tcp/127.0.0.1/8000) 2>/dev/null; then fail "port 8000 is in use: the compose file publishes 8000"; fi
export MUSIC="$scratch/music" NAVISCAN_SERVE_TOKEN="$token"
compose=(podman-compose -p "$project" -f dist/compose.yaml --podman-args="--runtime runc"
         --podman-run-args="--ulimit nofile=$nofile:$nofile --ulimit nproc=4096:4096")
# The store first, in the compose project's volume: serve of a never-scanned library refuses today
# (a serve that scans by itself makes this step a no-op).
"${run[@]}" --rm -v "$scratch/music:/music:ro" -v "${project}_naviscan-data:/data" "$image" scan --quiet > "$scratch/compose-scan.log" 2>&1 \
    || { cat "$scratch/compose-scan.log"; fail "naviscan scan into the compose volume ${project}_naviscan-data"; }
"${compose[@]}" up -d naviscan > "$scratch/compose.log" 2>&1 || { cat "$scratch/compose.log"; fail "podman-compose up -d naviscan"; }
port=8000
health=
for _ in $(seq 300); do
    health=$(http_get /health)
    case "$health" in "HTTP/1.1 200"*) break ;; esac
    sleep 0.2
done
case "$health" in "HTTP/1.1 200"*) ;; *) "${compose[@]}" logs naviscan 2>&1 | tail -20; fail "compose: GET /health did not answer 200" ;; esac
profile=$(http_get '/smart-dj/profile?relative_path=groove_120bpm.mp3' "Authorization: Bearer $token")
case "$profile" in "HTTP/1.1 200"*) ;; *) "${compose[@]}" logs naviscan 2>&1 | tail -20; fail "compose: GET /smart-dj/profile did not answer 200" ;; esac
"${compose[@]}" down > "$scratch/compose-down.log" 2>&1 || { cat "$scratch/compose-down.log"; fail "podman-compose down"; }
echo "   the compose file as shipped: GET /health 200 and a profile with NAVISCAN_SERVE_TOKEN on port 8000"

echo "test-image: ok ($image, $(( size / 1048576 )) MiB, $(( $(date +%s) - started )) s)"
