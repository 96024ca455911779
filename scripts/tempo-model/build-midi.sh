#!/bin/bash
# build-midi.sh [OUTDIR] -- the MIDI dev set of the tempo and key models (docs/tempo-model.md).
#
# Downloads the Debian 12 packages simutrans-data, freedink-data and pianobooster with apt-get download
# (not installed), extracts them with dpkg-deb into OUTDIR/pkgs/, finds every Standard MIDI File in
# them, reads tempo maps and time signatures (tempomodel/miditruth.py scan), checks fluidsynth's onset lag with a
# click file (check), renders each kept song with FluidR3_GM and TimGM6mb to 44.1 kHz 16-bit WAV,
# plus a lame -V2 MP3 of the FluidR3 render (render), and writes OUTDIR/truth.json (truth).
# OUTDIR defaults to $HOME/.cache/naviscan-miditempo. Idempotent: downloads, extractions and renders
# that exist are reused. Run as root on Debian 12; installs fluidsynth, fluid-soundfont-gm,
# timgm6mb-soundfont, lame (apt) and mido, numpy, soundfile (pip) when missing.
# Other Debian packages with MIDI music are reserved for independent evaluation: do not add them.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HOME/.cache/naviscan-miditempo}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$OUT/" in "$(cd "$HERE/../.." && pwd)"/*) echo "OUTDIR must be outside the repository" >&2; exit 2;; esac
PKGS="simutrans-data freedink-data pianobooster"
JOBS="${JOBS:-$(nproc)}"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
T0=$(date +%s)

# 1. tools
missing=()
command -v fluidsynth >/dev/null 2>&1 || missing+=(fluidsynth)
command -v lame >/dev/null 2>&1 || missing+=(lame)
[ -f /usr/share/sounds/sf2/FluidR3_GM.sf2 ] || missing+=(fluid-soundfont-gm)
[ -f /usr/share/sounds/sf2/TimGM6mb.sf2 ] || missing+=(timgm6mb-soundfont)
if [ ${#missing[@]} -gt 0 ] || ! apt-cache show simutrans-data >/dev/null 2>&1; then
    apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
python3 -c 'import mido, numpy, soundfile' 2>/dev/null || python3 -m pip install -q mido numpy soundfile

# 2. download and extract (not install) the three packages
mkdir -p "$OUT/debs" "$OUT/pkgs"
cd "$OUT/debs"
for p in $PKGS; do
    if ! ls "${p}"_*.deb >/dev/null 2>&1; then
        echo "download $p" >&2
        apt-get download -qq "$p" 2>&1 | grep -v 'Download is performed unsandboxed' >&2 || true
        ls "${p}"_*.deb >/dev/null 2>&1 || { echo "ERROR: could not download $p" >&2; exit 1; }
    fi
    if [ ! -e "$OUT/pkgs/$p/.extracted" ]; then
        rm -rf "$OUT/pkgs/$p"
        mkdir -p "$OUT/pkgs/$p"
        dpkg-deb -x "$(ls -v "${p}"_*.deb | tail -1)" "$OUT/pkgs/$p"
        ls -v "${p}"_*.deb | tail -1 > "$OUT/pkgs/$p/.extracted"
    fi
done
cd "$HERE"
export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"

# 3. tempo maps, time signatures, skip rules
echo "scan MIDI files" >&2
python3 -m tempomodel.miditruth scan "$OUT"
# 4. fluidsynth's onset lag (fails above 10 ms)
python3 -m tempomodel.miditruth check "$OUT"
# 5. render (2 soundfonts; MP3 of the FluidR3 render)
echo "render ($JOBS jobs)" >&2
T1=$(date +%s)
python3 -m tempomodel.miditruth render "$OUT" -j "$JOBS"
T2=$(date +%s)
# 6. truth
python3 -m tempomodel.miditruth truth "$OUT"
echo "done: $OUT/truth.json (render $((T2 - T1)) s, total $(( $(date +%s) - T0 )) s)" >&2
