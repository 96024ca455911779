#!/bin/bash
# build.sh [OUTDIR] -- the LMMS tempo dev set (docs/tempo-dev-set.md): the demo songs of Debian 12's
# lmms-common, rendered by lmms itself (its own synthesizers and samples, no General MIDI font).
#
# Downloads lmms-common with apt-get download (not installed), extracts it with dpkg-deb into
# OUTDIR/pkgs/, reads each project's tempo, meter and length (make_truth.py scan), renders each kept
# song with `lmms render` to 44.1 kHz 16-bit WAV (render) and writes OUTDIR/truth.json (truth).
# OUTDIR defaults to $HOME/.cache/naviscan-lmmstempo. Idempotent. Run on Debian 12; installs lmms
# (apt, without recommends) and soundfile (pip) when missing. lmms-common ships no MIDI file.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HOME/.cache/naviscan-lmmstempo}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$OUT/" in "$(cd "$HERE/../../.." && pwd)"/*) echo "OUTDIR must be outside the repository" >&2; exit 2;; esac
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
T0=$(date +%s)
if ! command -v lmms >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends lmms >/dev/null
fi
python3 -c 'import soundfile' 2>/dev/null || python3 -m pip install -q soundfile
mkdir -p "$OUT/debs" "$OUT/pkgs"
cd "$OUT/debs"
if ! ls lmms-common_*.deb >/dev/null 2>&1; then
    apt-get download -qq lmms-common 2>&1 | grep -v 'Download is performed unsandboxed' >&2 || true
    ls lmms-common_*.deb >/dev/null 2>&1 || { echo "ERROR: could not download lmms-common" >&2; exit 1; }
fi
if [ ! -e "$OUT/pkgs/lmms-common/.extracted" ]; then
    rm -rf "$OUT/pkgs/lmms-common"; mkdir -p "$OUT/pkgs/lmms-common"
    dpkg-deb -x "$(ls -v lmms-common_*.deb | tail -1)" "$OUT/pkgs/lmms-common"
    ls -v lmms-common_*.deb | tail -1 > "$OUT/pkgs/lmms-common/.extracted"
fi
cd "$HERE"
python3 "$HERE/make_truth.py" scan "$OUT"
python3 "$HERE/make_truth.py" render "$OUT"
python3 "$HERE/make_truth.py" truth "$OUT"
echo "done: $OUT/truth.json ($(( $(date +%s) - T0 )) s)" >&2
