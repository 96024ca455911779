#!/usr/bin/env bash
# Builds naviscan_<version>_<arch>.deb from `make install DESTDIR=... PREFIX=/usr` (the static-stdlib
# release build in BUILD_DIR, default .build-release), with Debian's own tools:
#  - the binary stripped (strip, as dh_strip does), the man page gzipped, a copyright file and a changelog;
#  - Depends from dpkg-shlibdeps on the binary, which must name exactly the Makefile's RUNTIME_PACKAGES
#    plus libc6, libgcc-s1 and libstdc++6 (else FAIL: the list `make install` prints is stale), and adduser;
#  - /etc/naviscan/config.json (a conffile) from dist/config.example.json;
#  - postinst creates the naviscan system user and group (home /var/lib/naviscan) and enables nothing;
#    postrm purge removes /etc/naviscan and keeps /var/lib/naviscan (the analysis) and the user.
# Usage: scripts/package/make-deb.sh [OUTDIR]   (default dist-out). Prints the .deb's path last.
# DEB_COMPRESSION: dpkg-deb's -Z (default xz).
set -euo pipefail
cd "$(dirname "$0")/../.."
outdir=${1:-dist-out}
build_dir=${BUILD_DIR:-.build-release}
maintainer=${DEB_MAINTAINER:-$(git log -1 --format='%an <%ae>' 2>/dev/null || echo 'naviscan maintainers <naviscan@localhost>')}

for tool in dpkg-deb dpkg-shlibdeps strip; do
    command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (apt-get install dpkg-dev binutils)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/naviscan-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps wants the binary under debian/<package>/ beside a debian/control.
stage="$work/debian/naviscan"
mkdir -p "$stage"
touch "$work/debian/control"

make --no-print-directory install DESTDIR="$stage" PREFIX=/usr BUILD_DIR="$build_dir" > "$work/install.log" 2>&1 \
    || { tail -40 "$work/install.log"; echo "FAIL: make install DESTDIR=... PREFIX=/usr" >&2; exit 1; }

bin="$stage/usr/bin/naviscan"
version=$("$bin" --version)
arch=$(dpkg --print-architecture)
case "$version" in [0-9]*) ;; *) echo "FAIL: naviscan --version printed '$version', not a version" >&2; exit 1 ;; esac

# Debian's layout: stripped binary, gzipped man page, no .py caches; units in /usr/lib/systemd/system.
strip --remove-section=.comment --remove-section=.note "$bin"
gzip -9n "$stage/usr/share/man/man1/naviscan.1"
grep -q '^ExecStart=/usr/bin/naviscan ' "$stage/usr/lib/systemd/system/naviscan-serve.service" \
    || { echo "FAIL: naviscan-serve.service does not start /usr/bin/naviscan" >&2; exit 1; }

install -d "$stage/etc/naviscan"
install -m 644 dist/config.example.json "$stage/etc/naviscan/config.json"

doc="$stage/usr/share/doc/naviscan"
install -d "$doc"
cat > "$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: naviscan
Source: the naviscan git repository

Files: *
Copyright: the naviscan authors
License: GPL-3.0-or-later

License: GPL-3.0-or-later
 This program is free software: you can redistribute it and/or modify it under the terms of the GNU
 General Public License as published by the Free Software Foundation, either version 3 of the
 License, or (at your option) any later version.
 .
 This program is distributed in the hope that it will be useful, but WITHOUT ANY WARRANTY; without
 even the implied warranty of MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE. See the GNU
 General Public License for more details.
 .
 On Debian systems, the complete text of the GNU General Public License version 3 can be found in
 "/usr/share/common-licenses/GPL-3".
 .
 The binary links the Swift runtime and standard library, Foundation and the Swift packages named in
 Package.swift statically (Apache-2.0 with Runtime Library Exception, or MIT).
COPYRIGHT
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
date=$(date -R -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")
printf 'naviscan (%s) unstable; urgency=medium\n\n  * Built from git commit %s.\n\n -- %s  %s\n' \
    "$version" "$commit" "$maintainer" "$date" | gzip -9n > "$doc/changelog.Debian.gz"

# Depends: what the binary links, by dpkg-shlibdeps, checked against the Makefile's list.
shlibs=$(cd "$work" && dpkg-shlibdeps -O "debian/naviscan/usr/bin/naviscan" 2>"$work/shlibdeps.log") \
    || { cat "$work/shlibdeps.log" >&2; echo "FAIL: dpkg-shlibdeps" >&2; exit 1; }
depends=${shlibs#shlibs:Depends=}
found=$(echo "$depends" | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -v '^$' | sort -u)
expected=$( { make --no-print-directory -s runtime-packages | tr ' ' '\n'; printf 'libc6\nlibgcc-s1\nlibstdc++6\n'; } | grep -v '^$' | sort -u)
missing=$(comm -13 <(echo "$found") <(echo "$expected") | grep -v -e '^libgcc-s1$' -e '^libstdc++6$' || true)
extra=$(comm -23 <(echo "$found") <(echo "$expected") || true)
[ -z "$extra" ] || { echo "FAIL: the binary needs $(echo $extra), which RUNTIME_PACKAGES in the Makefile does not name" >&2; exit 1; }
[ -z "$missing" ] || { echo "FAIL: RUNTIME_PACKAGES names $(echo $missing), which the binary does not link (dpkg-shlibdeps: $depends)" >&2; exit 1; }
depends="$depends, adduser"

install -d -m 755 "$stage/DEBIAN"
installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: naviscan
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Section: sound
Priority: optional
Description: audio analysis for music libraries, with a companion HTTP API
 naviscan scans a music library incrementally and stores, per track, DJ
 profiles (tempo, loudness and ReplayGain, silence, waveform) and visualizer
 frames; naviscan serve answers players and a web page over HTTP.
 .
 The systemd units (naviscan-serve.service, naviscan-scan.timer) are
 installed disabled; settings live in /etc/naviscan/config.json.
CONTROL
echo /etc/naviscan/config.json > "$stage/DEBIAN/conffiles"

cat > "$stage/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
# Creates the naviscan system user and group (home /var/lib/naviscan, the store of the default config).
# Enables and starts nothing: `systemctl enable --now naviscan-serve.service naviscan-scan.timer`.
set -e
if [ "$1" = configure ]; then
    if ! getent passwd naviscan >/dev/null; then
        adduser --system --group --quiet --home /var/lib/naviscan --no-create-home \
            --shell /usr/sbin/nologin --gecos "naviscan music analysis" naviscan
    fi
    if [ ! -d /var/lib/naviscan ]; then
        install -d -o naviscan -g naviscan -m 755 /var/lib/naviscan
    fi
    if [ -d /run/systemd/system ]; then
        systemctl daemon-reload >/dev/null 2>&1 || true
    fi
fi
exit 0
POSTINST

cat > "$stage/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
# Stops the units (if a user enabled them) before the binary goes.
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
    systemctl stop naviscan-scan.timer naviscan-scan.service naviscan-serve.service >/dev/null 2>&1 || true
fi
exit 0
PRERM

cat > "$stage/DEBIAN/postrm" <<'POSTRM'
#!/bin/sh
# purge: dpkg removes the conffile; this removes what is left of /etc/naviscan. The analysis in
# /var/lib/naviscan (hours of scanning) and the naviscan user stay (Debian's convention for user data
# and system users): `rm -rf /var/lib/naviscan; deluser --system naviscan` removes them.
set -e
if [ "$1" = purge ]; then
    rm -rf /etc/naviscan
fi
if [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
POSTRM
chmod 755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm" "$stage/DEBIAN/postrm"

# Every directory 755 and file 644 unless executable, whatever the umask was.
find "$stage" -type d -exec chmod 755 {} +
find "$stage" -type f ! -perm -u+x -exec chmod 644 {} +

mkdir -p "$outdir"
deb="$outdir/naviscan_${version}_${arch}.deb"
# xz, as Debian's own packages (19 MB, 23 s on 2 cores); CI's test-deb takes zstd (29 MB, under 1 s):
# the same files, and dpkg reads both.
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" --build "$stage" "$deb" >/dev/null
echo "binary $(stat -c %s "$bin") bytes stripped; .deb $(stat -c %s "$deb") bytes; Depends: $depends" >&2
echo "$deb"
