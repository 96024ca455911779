#!/usr/bin/env bash
# make test-deb: the .deb as a user gets it, on a clean Debian root without any Swift toolchain.
#  1. mmdebstrap --variant=minbase of the host's release (its codename and Debian mirrors);
#  2. apt-get install --no-install-recommends ./naviscan_VERSION_ARCH.deb inside it (chroot with /proc,
#     /sys, /dev): apt pulls the Depends; counts the packages it adds (and would add with Recommends);
#  3. naviscan --version; ldd shows no Swift library and nothing missing; no swift command in the root;
#     the naviscan user (home /var/lib/naviscan), the conffile, the units installed and not enabled,
#     the man page, completions, web assets, slurm and kubernetes recipes;
#  4. as the naviscan user, `naviscan scan --config /etc/naviscan/config.json` of the demo library copied
#     to /srv/music (the shipped config) analyses 3 tracks; `naviscan serve` answers GET /health and GET /
#     (the web page from /usr/share/naviscan/web);
#  5. apt-get purge: the binary and /etc/naviscan go, /var/lib/naviscan and the user stay.
# Needs root (mmdebstrap, chroot, mounts). All mounts live in a private mount namespace; the root is
# removed on exit. Usage: scripts/ci/test-deb.sh path/to/naviscan_VERSION_ARCH.deb
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# = 1 ] && [ -f "$1" ] || { echo "usage: $0 naviscan_VERSION_ARCH.deb (FAIL: no such .deb: ${1:-})" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "FAIL: test-deb needs root (mmdebstrap, chroot, mounts)" >&2; exit 1; }
# Mounts made below vanish with this private mount namespace, whatever happens to the script.
if [ -z "${NAVISCAN_TEST_DEB_NS:-}" ]; then
    exec env NAVISCAN_TEST_DEB_NS=1 unshare -m --propagation private "$0" "$@"
fi
started=$(date +%s)
deb=$(readlink -f "$1")
debname=$(basename "$deb")
version=$(dpkg-deb -f "$deb" Version)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/naviscan-test-deb.XXXXXX")
root="$scratch/root"
serve_pid=
cleanup() {
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
    # Anything still running inside the root (started by this script) ends before the root goes.
    for proc in /proc/[0-9]*; do
        [ "$(readlink "$proc/root" 2>/dev/null)" = "$root" ] && kill -9 "${proc#/proc/}" 2>/dev/null
    done
    for m in dev/pts dev sys proc; do mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m"; done
    rm -rf --one-file-system "$scratch"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

# The host's release and Debian mirrors, so the root has the libraries the .deb was built against.
. scripts/package/host-release.sh

command -v mmdebstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq mmdebstrap >/dev/null; }
echo "== mmdebstrap --variant=minbase $suite ($mirror_name)"
t0=$(date +%s)
mmdebstrap --quiet --variant=minbase --mode=root --skip=cleanup/apt/lists "$suite" "$root" \
    "${mirrors[@]}" \
    > "$scratch/mmdebstrap.log" 2>&1 || { tail -30 "$scratch/mmdebstrap.log"; fail "mmdebstrap $suite"; }
base_packages=$(in_root dpkg-query -W | wc -l)
echo "   $base_packages packages in $(( $(date +%s) - t0 )) s"
[ ! -e "$root/opt/swift" ] && ! in_root sh -c 'command -v swift swiftc' >/dev/null || fail "the root has a Swift toolchain"

mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" 2>/dev/null || true
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/$debname"

echo "== apt-get install --no-install-recommends ./$debname"
# What a plain `apt-get install ./naviscan.deb` would add with the dependencies' Recommends (GPU drivers).
with_recommends=$(in_root sh -c "cd /tmp && apt-get install -s ./$debname" | grep -c '^Inst ' || true)
t0=$(date +%s)
in_root sh -c "cd /tmp && apt-get install -y --no-install-recommends ./$debname" \
    > "$scratch/apt.log" 2>&1 || { tail -30 "$scratch/apt.log"; fail "apt-get install ./$debname in a clean $suite root"; }
pulled=$(( $(in_root dpkg-query -W | wc -l) - base_packages ))
echo "   $pulled packages installed (naviscan included) in $(( $(date +%s) - t0 )) s; $with_recommends with Recommends"
rm -f "$root/tmp/$debname"

echo "== the installed package"
[ "$(in_root naviscan --version)" = "$version" ] || fail "naviscan --version does not print $version"
# A bare chroot without /proc: the static binary says what to mount (exit 2), it does not trap.
umount "$root/proc"
noproc_status=0
noproc=$(in_root naviscan --version 2>&1) || noproc_status=$?
mount -t proc proc "$root/proc"
[ "$noproc_status" = 2 ] && [[ $noproc == *"/proc is not mounted"* ]] \
    || fail "without /proc naviscan exited $noproc_status with: $noproc"
echo "   without /proc: exit 2, \"${noproc:0:60}…\""
in_root ldd /usr/bin/naviscan > "$scratch/ldd.txt" || fail "ldd /usr/bin/naviscan"
if grep -i swift "$scratch/ldd.txt"; then fail "the installed binary links a Swift library"; fi
if grep 'not found' "$scratch/ldd.txt"; then fail "a library the binary needs is not installed (Depends is short)"; fi
echo "   naviscan $version, $(wc -l < "$scratch/ldd.txt") libraries, none from Swift, none missing; no swift in the root"
passwd=$(in_root getent passwd naviscan) || fail "no naviscan user"
[ "$(echo "$passwd" | cut -d: -f6)" = /var/lib/naviscan ] || fail "the naviscan user's home is not /var/lib/naviscan: $passwd"
[ "$(in_root stat -c %U:%G /var/lib/naviscan)" = naviscan:naviscan ] || fail "/var/lib/naviscan is not owned by naviscan"
in_root dpkg-query -W -f='${Conffiles}\n' naviscan | grep -q '^ /etc/naviscan/config.json ' || fail "/etc/naviscan/config.json is not a conffile"
for unit in naviscan-serve.service naviscan-scan.service naviscan-scan.timer; do
    [ -s "$root/usr/lib/systemd/system/$unit" ] || fail "$unit not installed in /usr/lib/systemd/system"
done
grep -q '^ExecStart=/usr/bin/naviscan serve ' "$root/usr/lib/systemd/system/naviscan-serve.service" || fail "naviscan-serve.service does not start /usr/bin/naviscan"
grep -q '^ExecStart=/usr/bin/naviscan scan ' "$root/usr/lib/systemd/system/naviscan-scan.service" || fail "naviscan-scan.service does not start /usr/bin/naviscan"
enabled=$(find "$root/etc/systemd" -name 'naviscan*' 2>/dev/null || true)
[ -z "$enabled" ] || fail "the package enabled units: $enabled"
for f in usr/share/man/man1/naviscan.1.gz usr/share/bash-completion/completions/naviscan \
         usr/share/zsh/site-functions/_naviscan usr/share/fish/vendor_completions.d/naviscan.fish \
         usr/share/naviscan/web/library.mustache usr/share/naviscan/web/track.js usr/share/naviscan/slurm/submit.sh \
         usr/share/naviscan/kubernetes/naviscan-scan.yaml usr/share/doc/naviscan/copyright etc/naviscan/config.json; do
    [ -s "$root/$f" ] || fail "/$f not installed"
done
echo "   user naviscan (home /var/lib/naviscan), conffile /etc/naviscan/config.json, 3 units not enabled, man page, completions, web assets, recipes"

echo "== scan /srv/music as the naviscan user with the shipped config"
mkdir -p "$root/srv"
cp -r Fixtures/demo "$root/srv/music"
as_naviscan=(setpriv --reuid=naviscan --regid=naviscan --init-groups)
in_root "${as_naviscan[@]}" naviscan scan --config /etc/naviscan/config.json --quiet --json > "$scratch/summary.json" 2> "$scratch/scan.log" \
    || { cat "$scratch/scan.log" "$scratch/summary.json"; fail "naviscan scan --config /etc/naviscan/config.json"; }
grep -q '"analysed" : 3' "$scratch/summary.json" || { cat "$scratch/summary.json"; fail "the scan did not analyse the 3 demo tracks"; }
[ -s "$root/var/lib/naviscan/naviscan.db" ] || fail "no store in /var/lib/naviscan"
echo "   3 tracks analysed into /var/lib/naviscan"

echo "== naviscan serve"
http_get() {  # PORT PATH: the whole answer, empty when nothing answers
    { exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3 && cat <&3; } 2>/dev/null || true
}
# chroot itself in the background (not the in_root function's subshell), so $! is the server's pid.
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "${as_naviscan[@]}" \
    naviscan serve --config /etc/naviscan/config.json --port 0 --no-watch > /dev/null 2> "$scratch/serve.log" &
serve_pid=$!
port=
for _ in $(seq 150); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$scratch/serve.log")
    [ -n "$port" ] && break
    kill -0 "$serve_pid" 2>/dev/null || break
    sleep 0.1
done
[ -n "$port" ] || { cat "$scratch/serve.log"; fail "naviscan serve did not start"; }
health=$(http_get "$port" /health)
page=$(http_get "$port" /)
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=
case "$health" in "HTTP/1.1 200"*) ;; *) cat "$scratch/serve.log"; echo "$health"; fail "GET /health did not answer 200" ;; esac
case "$page" in *"200 OK"*"groove_120bpm.mp3"*) ;; *) cat "$scratch/serve.log"; fail "GET / did not list the library (web assets in /usr/share/naviscan/web)" ;; esac
echo "   GET /health 200, GET / lists the demo library"

echo "== apt-get purge naviscan"
in_root apt-get purge -y naviscan > "$scratch/purge.log" 2>&1 || { tail -20 "$scratch/purge.log"; fail "apt-get purge naviscan"; }
[ ! -e "$root/usr/bin/naviscan" ] || fail "purge left /usr/bin/naviscan"
[ ! -e "$root/etc/naviscan" ] || fail "purge left /etc/naviscan"
[ -s "$root/var/lib/naviscan/naviscan.db" ] || fail "purge removed the analysis in /var/lib/naviscan"
in_root getent passwd naviscan >/dev/null || fail "purge removed the naviscan user"
echo "   binary and /etc/naviscan removed; /var/lib/naviscan and the naviscan user kept"

echo "test-deb: ok ($debname on a clean $suite root, $pulled packages installed, $(( $(date +%s) - started )) s)"
