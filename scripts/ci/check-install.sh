#!/usr/bin/env bash
# Checks what `make install` gives a machine without the Swift toolchain:
#  1. installs into a scratch DESTDIR (the static-stdlib release build);
#  2. the binary links no Swift runtime library, only system ones;
#  3. copied to another directory, it scans the demo library with the toolchain hidden: a private
#     mount namespace with an empty tmpfs over the toolchain's directory, LD_LIBRARY_PATH empty;
#  4. the installed binary serves the web page from PREFIX/share/naviscan/web;
#  5. the systemd units verify (systemd-analyze verify, with the installed binary at its ExecStart path);
#  6. completions and the man page are installed, and `make uninstall` removes everything;
#  and first, that `sudo make install` finds the toolchain though sudo's PATH has none.
set -euo pipefail
cd "$(dirname "$0")/../.."

scratch=$(mktemp -d /tmp/naviscan-install.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
stage="$scratch/stage"

echo "== sudo's PATH (secure_path, no toolchain on it) still finds the toolchain"
swift_under_sudo=$(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root SUDO_USER="${USER:-root}" \
    make --no-print-directory -s swift-path)
[ -x "$swift_under_sudo" ] || { echo "FAIL: under sudo's PATH make uses '$swift_under_sudo', not a toolchain" >&2; exit 1; }
echo "   $swift_under_sudo"

make --no-print-directory install DESTDIR="$stage" PREFIX=/usr/local > "$scratch/install.log" 2>&1 \
    || { tail -40 "$scratch/install.log"; echo "FAIL: make install" >&2; exit 1; }
bin="$stage/usr/local/bin/naviscan"

echo "== linked libraries"
if ldd "$bin" | grep -i swift; then echo "FAIL: the binary needs the Swift runtime" >&2; exit 1; fi
ldd "$bin" | awk '{print "   " $1}'

echo "== every library the binary needs comes from a package make install names"
# RUNTIME_PACKAGES is what the install message tells a user to apt-get; libc6, libgcc-s1 and
# libstdc++6 are on every Debian system.
runtime=" $(make --no-print-directory -s runtime-packages) libc6 libgcc-s1 libstdc++6 "
for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(ldd "$bin" | awk -v l="$lib" '$1 == l && $3 ~ /^\// {print $3}')
    [ -z "$path" ] && [ "$lib" != "${lib#ld-linux}" ] && continue
    [ -n "$path" ] || { echo "FAIL: $lib is not found on this machine" >&2; exit 1; }
    # dpkg names a file by the path its package installed (/lib or /usr/lib on a merged-/usr system).
    real=$(readlink -f "$path")
    package=$( { dpkg -S "$path" || dpkg -S "$real" || dpkg -S "${real#/usr}"; } 2>/dev/null | head -1 | cut -d: -f1)
    case "$runtime" in
        *" $package "*) echo "   $lib <- $package" ;;
        *)
            # A library package behind a name the user installs (libtag1v5 depends on libtag1v5-vanilla).
            via=
            for named in $runtime; do
                dpkg-query -W -f='${Depends}\n' "$named" 2>/dev/null | tr ',|' '\n\n' | awk '{print $1}' | grep -qx "$package" && via=$named && break
            done
            [ -n "$via" ] || { echo "FAIL: $lib comes from $package, which RUNTIME_PACKAGES in the Makefile does not name" >&2; exit 1; }
            echo "   $lib <- $package (through $via)" ;;
    esac
done

echo "== scan with the toolchain hidden"
swift_bin=$(command -v swift || true)
toolchain=$(dirname "$(dirname "$(readlink -f "${swift_bin:-/opt/swift/usr/bin/swift}")")")
toolchain=${toolchain%/usr}
mkdir -p "$scratch/elsewhere"
cp "$bin" "$scratch/elsewhere/naviscan"
cp -r Fixtures/demo "$scratch/library"
unshare_flags=-m
[ "$(id -u)" = 0 ] || unshare_flags=-rm
unshare $unshare_flags --propagation private sh -euc '
    mount -t tmpfs none "$1"
    if [ -e "$1/usr/bin/swift" ]; then echo "FAIL: the toolchain is still visible" >&2; exit 1; fi
    env -i PATH=/usr/bin:/bin HOME="$2" LD_LIBRARY_PATH= "$2/elsewhere/naviscan" scan "$2/library" -o "$2/out" --quiet --json > "$2/summary.json"
' sh "$toolchain" "$scratch"
grep -q '"analysed" : 3' "$scratch/summary.json" || { cat "$scratch/summary.json"; echo "FAIL: the scan did not analyse the demo library" >&2; exit 1; }
echo "   3 tracks analysed with $toolchain hidden"

echo "== the installed binary serves the web page from share/naviscan/web"
"$bin" serve --out "$scratch/out" --port 0 --no-watch 2> "$scratch/serve.log" &
serve_pid=$!
port=
for _ in $(seq 100); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$scratch/serve.log")
    [ -n "$port" ] && break
    sleep 0.1
done
page=$( { exec 3<>"/dev/tcp/127.0.0.1/${port:-1}" && printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 && cat <&3; } 2>/dev/null || true)
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
case "$page" in
    *"200 OK"*"groove_120bpm.mp3"*) echo "   GET / lists the demo library" ;;
    *) cat "$scratch/serve.log"; echo "FAIL: the installed server does not serve its web page" >&2; exit 1 ;;
esac

echo "== systemd units"
units="$stage/usr/local/lib/systemd/system"
unshare $unshare_flags --propagation private sh -euc '
    mkdir -p /usr/local/bin
    mount --bind "$1" /usr/local/bin
    systemd-analyze verify --man=no "$2/naviscan-scan.timer" "$2/naviscan-scan.service" "$2/naviscan-serve.service"
' sh "$stage/usr/local/bin" "$units"
echo "   naviscan-scan.timer, naviscan-scan.service, naviscan-serve.service verify"

echo "== completions, man page, uninstall"
for f in share/man/man1/naviscan.1 share/bash-completion/completions/naviscan share/zsh/site-functions/_naviscan \
         share/fish/vendor_completions.d/naviscan.fish share/naviscan/config.example.json \
         share/naviscan/web/library.mustache share/naviscan/web/track.js share/naviscan/slurm/submit.sh \
         share/naviscan/slurm/naviscan-scan.sbatch share/naviscan/kubernetes/naviscan-scan.yaml; do
    [ -s "$stage/usr/local/$f" ] || { echo "FAIL: $f not installed" >&2; exit 1; }
done
grep -q "scan" "$stage/usr/local/share/bash-completion/completions/naviscan"
make --no-print-directory uninstall DESTDIR="$stage" PREFIX=/usr/local >/dev/null
left=$(find "$stage" -type f | wc -l)
[ "$left" = 0 ] || { find "$stage" -type f; echo "FAIL: uninstall left files" >&2; exit 1; }
echo "check-install: ok"
