#!/bin/bash
# build.sh [OUTDIR] -- the Hydrogen + MuseScore tempo set, for OUT-OF-SAMPLE evaluation only: the demo
# songs of Debian 12's hydrogen-data, rendered by h2cli with the package's own drum kits, and the demo
# scores of musescore3-common, rendered by mscore3 (MuseScore_General.sf3, its default font).
#
# Downloads both packages with apt-get download (into OUTDIR/debs; .debs already there are reused),
# extracts them with dpkg-deb into OUTDIR/pkgs/, reads each song's tempo map, meter and length
# (make_truth.py scan; the scores via mscore3's MIDI export in OUTDIR/midi/), renders each kept song to
# OUTDIR/wav/<stem>.wav, 44.1 kHz 16-bit stereo (render), checks the truth's note onsets against the
# renders (check -> OUTDIR/check.json) and writes OUTDIR/truth.json (truth).
# OUTDIR defaults to $HOME/.cache/naviscan-h2mstempo. Idempotent. Run on Debian 12 as root; installs
# hydrogen and musescore3 (apt, without recommends; hydrogen pulls hydrogen-data's drum kits, which
# h2cli loads by name) and mido, soundfile (pip) when missing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HOME/.cache/naviscan-h2mstempo}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$OUT/" in "$(cd "$HERE/../../.." && pwd)"/*) echo "OUTDIR must be outside the repository" >&2; exit 2;; esac
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
T0=$(date +%s)
if ! command -v h2cli >/dev/null 2>&1 || ! command -v mscore3 >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends hydrogen musescore3 >/dev/null
fi
python3 -c 'import soundfile, mido, numpy' 2>/dev/null || python3 -m pip install -q soundfile mido numpy
mkdir -p "$OUT/debs" "$OUT/pkgs"
for pkg in hydrogen-data musescore3-common; do
    cd "$OUT/debs"
    if ! ls ${pkg}_*.deb >/dev/null 2>&1; then
        apt-get download -qq "$pkg" 2>&1 | grep -v 'Download is performed unsandboxed' >&2 || true
        ls ${pkg}_*.deb >/dev/null 2>&1 || { echo "ERROR: could not download $pkg" >&2; exit 1; }
    fi
    deb="$(ls -v ${pkg}_*.deb | tail -1)"
    if [ "$(cat "$OUT/pkgs/$pkg/.extracted" 2>/dev/null)" != "$deb" ]; then
        rm -rf "$OUT/pkgs/$pkg"; mkdir -p "$OUT/pkgs/$pkg"
        dpkg-deb -x "$deb" "$OUT/pkgs/$pkg"
        echo "$deb" > "$OUT/pkgs/$pkg/.extracted"
    fi
done
cd "$HERE"
python3 "$HERE/make_truth.py" scan "$OUT"
python3 "$HERE/make_truth.py" render "$OUT"
python3 "$HERE/make_truth.py" check "$OUT"
python3 "$HERE/make_truth.py" truth "$OUT"
echo "done: $OUT/truth.json ($(( $(date +%s) - T0 )) s)" >&2
