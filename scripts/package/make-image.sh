#!/usr/bin/env bash
# make image: a container image of naviscan without any registry: a clean Debian root (mmdebstrap
# --variant=minbase of the host's release, without documentation, man pages and locales) with the .deb
# installed by apt-get, turned into an image by `buildah from scratch` + `buildah add` of the root's tar.
#  - user naviscan, uid and gid 990 (created before the .deb, whose postinst keeps it);
#  - volumes /music (the library, mount it read-only) and /data (the store; owned by 990);
#  - entry point naviscan, command serve; NAVISCAN_LIBRARY=/music NAVISCAN_OUT=/data
#    NAVISCAN_SERVE_HOST=0.0.0.0 NAVISCAN_SERVE_PORT=8000 as environment defaults (a flag or -e overrides);
#  - HEALTHCHECK naviscan-healthcheck (GET /health over bash's /dev/tcp).
# Writes OUTDIR/naviscan-VERSION-ARCH.docker.tar (docker-archive: keeps the HEALTHCHECK, which the OCI
# image format has no field for) and OUTDIR/naviscan-VERSION-ARCH.oci.tar (oci-archive, without it);
# `podman load -i` / `docker load -i` either. The image stays in local storage as localhost/naviscan:VERSION.
# Needs root. Usage: scripts/package/make-image.sh naviscan_VERSION_ARCH.deb [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: $0 naviscan_VERSION_ARCH.deb [OUTDIR] (FAIL: no such .deb: ${1:-})" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "FAIL: make image needs root (mmdebstrap --mode=root, buildah)" >&2; exit 1; }
deb=$(readlink -f "$1")
outdir=${2:-dist-out}
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
uid=990
image=localhost/naviscan:$version
started=$(date +%s)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/naviscan-image.XXXXXX")
ctr=
cleanup() {
    [ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1
    rm -rf --one-file-system "$scratch"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

. scripts/package/host-release.sh

echo "== root: mmdebstrap --variant=minbase $suite + apt-get install $(basename "$deb")"
cp "$deb" "$scratch/naviscan.deb"
mmdebstrap --quiet --variant=minbase --include=curl --mode=root --format=tar \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook="chroot \"\$1\" groupadd --system --gid $uid naviscan" \
    --customize-hook="chroot \"\$1\" useradd --system --uid $uid --gid $uid --home-dir /var/lib/naviscan --no-create-home --shell /usr/sbin/nologin --comment 'naviscan music analysis' naviscan" \
    --customize-hook="upload $scratch/naviscan.deb /tmp/naviscan.deb" \
    --customize-hook='chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/naviscan.deb' \
    --customize-hook='rm -f "$1/tmp/naviscan.deb"; chroot "$1" apt-get clean' \
    --customize-hook="upload scripts/package/naviscan-healthcheck /usr/local/bin/naviscan-healthcheck" \
    --customize-hook="chmod 755 \"\$1/usr/local/bin/naviscan-healthcheck\"; mkdir -p \"\$1/music\" \"\$1/data\"; chown $uid:$uid \"\$1/data\"" \
    --customize-hook='chroot "$1" naviscan --version > "$1/tmp/version"' \
    --customize-hook="download /tmp/version $scratch/version" \
    --customize-hook='rm -f "$1/tmp/version"' \
    "$suite" "$scratch/root.tar" \
    "${mirrors[@]}" \
    > "$scratch/mmdebstrap.log" 2>&1 || { tail -40 "$scratch/mmdebstrap.log"; fail "mmdebstrap with the .deb installed"; }
[ "$(cat "$scratch/version")" = "$version" ] || fail "naviscan --version in the root does not print $version"
echo "   root.tar $(( $(stat -c %s "$scratch/root.tar") / 1048576 )) MiB in $(( $(date +%s) - started )) s"

echo "== buildah from scratch"
ctr=$(buildah from scratch)
buildah add --quiet "$ctr" "$scratch/root.tar" / >/dev/null
buildah config \
    --user "$uid:$uid" --workingdir /data \
    --env NAVISCAN_LIBRARY=/music --env NAVISCAN_OUT=/data \
    --env NAVISCAN_SERVE_HOST=0.0.0.0 --env NAVISCAN_SERVE_PORT=8000 \
    --entrypoint '["/usr/bin/naviscan"]' --cmd serve \
    --volume /music --volume /data --port 8000/tcp --stop-signal SIGTERM \
    --healthcheck 'CMD /usr/local/bin/naviscan-healthcheck' --healthcheck-interval 30s \
    --healthcheck-timeout 10s --healthcheck-start-period 2m --healthcheck-retries 3 \
    --label org.opencontainers.image.title=naviscan --label "org.opencontainers.image.version=$version" \
    --label org.opencontainers.image.licenses=GPL-3.0-or-later \
    --label "org.opencontainers.image.description=naviscan serve: audio analysis and a companion API for music libraries" \
    --created-by "scripts/package/make-image.sh" "$ctr"
buildah commit --quiet --format docker --rm "$ctr" "$image" >/dev/null
ctr=

mkdir -p "$outdir"
base="$outdir/naviscan-$version-$arch"
rm -f "$base.docker.tar" "$base.oci.tar"
buildah push --quiet "$image" "docker-archive:$base.docker.tar:naviscan:$version"
buildah push --quiet "$image" "oci-archive:$base.oci.tar:naviscan:$version"
echo "   $image; $base.docker.tar $(( $(stat -c %s "$base.docker.tar") / 1048576 )) MiB, $base.oci.tar $(( $(stat -c %s "$base.oci.tar") / 1048576 )) MiB; $(( $(date +%s) - started )) s" >&2
echo "$base.docker.tar"
