#!/usr/bin/env bash
# build-data.sh [DATA] -- every training set of the tempo model (`make tempo-model` runs it first).
#
# Into DATA (default ~/.cache/naviscan-tempo-model), skipping what is there:
#   midi/        the MIDI dev set: simutrans-data, freedink-data, pianobooster songs (build-midi.sh)
#   midiscaled/  four tempo-scaled 75 s copies of each song, one per other tempo bin, through the four
#                soundfonts in turn (python3 -m tempomodel.scaled)
#   modtempo/    the tracker modules of ../shared/modtempo/modules.tsv (its build.sh)
#   modscaled/   four tempo-scaled 75 s renders of each module (python3 -m tempomodel.scaledmods)
#   styles/seed1..seed5     the groove generator's dev renders (make_tempo_corpus.py --count 40)
#   styles/seedsh101, 102   backbeat shuffles at 70-200 BPM, FluidR3 and TimGM6mb (tempomodel.shuffles)
#   styles/seedwide41..44   every style at every tempo, wide palettes, one soundfont each (tempomodel.widegrooves)
#   styles/seedambient51..58  20 beatless ambient clips each, wide palettes, the four soundfonts in turn (--ambient-only)
#   styles/seedambient59..62  10 long ones each (2-2.7 minutes: the steady-pulse rule reads up to 2 minutes; --long)
# Soundfonts: fluid-soundfont-gm, timgm6mb-soundfont, musescore-general-soundfont-small, opl3-soundfont
# (installed when missing). Reserved for judging and never used: TiMidity++, freepats, the csound
# soundfont, and the packages the issue reserves.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
SHARED="${NAVISCAN_SHARED:-$(dirname "$ROOT")/shared}"
DATA="${1:-${NAVISCAN_TEMPO_MODEL_DATA:-$HOME/.cache/naviscan-tempo-model}}"
JOBS="${JOBS:-$(nproc)}"
PY=/usr/bin/python3
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive NAVISCAN_SHARED="$SHARED"
mkdir -p "$DATA/styles"
step() { echo "==> [$(date +%T)] $*" >&2; }

PACKAGES="fluidsynth fluid-soundfont-gm timgm6mb-soundfont musescore-general-soundfont-small opl3-soundfont lame openmpt123 libopenmpt0 python3-numpy python3-scipy python3-mido python3-soundfile"
if ! command -v fluidsynth >/dev/null || ! command -v openmpt123 >/dev/null || ! command -v lame >/dev/null ||
   [ ! -f /usr/share/sounds/sf3/MuseScore_General_Lite.sf3 ] || [ ! -f /usr/share/sounds/sf2/OPL-3_FM_128M.sf2 ] ||
   [ ! -f /usr/share/sounds/sf2/TimGM6mb.sf2 ] || [ ! -f /usr/share/sounds/sf2/FluidR3_GM.sf2 ] ||
   ! "$PY" -c 'import numpy, scipy, mido, soundfile' 2>/dev/null; then
    step "installing $PACKAGES"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends $PACKAGES
fi

[ -f "$DATA/midi/truth.json" ] || { step "the MIDI dev set"; JOBS=$JOBS bash "$HERE/build-midi.sh" "$DATA/midi"; }
[ -f "$DATA/modtempo/truth.json" ] || { step "the tracker modules"; bash "$SHARED/modtempo/build.sh" "$DATA/modtempo"; }
cd "$HERE"
[ -f "$DATA/midiscaled/truth.json" ] || { step "tempo-scaled MIDI songs"; "$PY" -m tempomodel.scaled "$DATA/midi" "$DATA/midiscaled" -j "$JOBS"; }
[ -f "$DATA/modscaled/truth.json" ] || { step "tempo-scaled modules"; "$PY" -m tempomodel.scaledmods "$DATA/modtempo" "$DATA/modscaled"; }
fonts=(/usr/share/sounds/sf2/FluidR3_GM.sf2 /usr/share/sounds/sf2/TimGM6mb.sf2 /usr/share/sounds/sf3/MuseScore_General_Lite.sf3 /usr/share/sounds/sf2/OPL-3_FM_128M.sf2)
for k in 0 1 2 3; do
    seed=$((41 + k))
    [ -f "$DATA/styles/seedwide$seed/truth.json" ] || { step "every style at every tempo, seed $seed";
        "$PY" -m tempomodel.widegrooves --seed $seed --count 40 --jobs "$JOBS" --font "${fonts[$k]}" --out "$DATA/styles/seedwide$seed" >/dev/null; }
done
for k in 0 1 2 3 4 5 6 7; do
    seed=$((51 + k))
    [ -f "$DATA/styles/seedambient$seed/truth.json" ] || { step "beatless ambient clips, seed $seed";
        "$PY" -m tempomodel.widegrooves --ambient-only --seed $seed --count 20 --jobs "$JOBS" --font "${fonts[$((k % 4))]}" --out "$DATA/styles/seedambient$seed" >/dev/null; }
done
for k in 0 1 2 3; do
    seed=$((59 + k))
    [ -f "$DATA/styles/seedambient$seed/truth.json" ] || { step "long beatless ambient clips, seed $seed";
        "$PY" -m tempomodel.widegrooves --ambient-only --long --seed $seed --count 10 --jobs "$JOBS" --font "${fonts[$k]}" --out "$DATA/styles/seedambient$seed" >/dev/null; }
done
for seed in 1 2 3 4 5; do
    [ -f "$DATA/styles/seed$seed/truth.json" ] || { step "grooves, seed $seed";
        "$PY" "$SHARED/tempo/make_tempo_corpus.py" --seed $seed --count 40 --prefix seed$seed --jobs "$JOBS" --out "$DATA/styles/seed$seed" >/dev/null; }
done
[ -f "$DATA/styles/seedsh101/truth.json" ] || "$PY" -m tempomodel.shuffles --seed 101 --count 40 --jobs "$JOBS" --out "$DATA/styles/seedsh101" >/dev/null
[ -f "$DATA/styles/seedsh102/truth.json" ] || "$PY" -m tempomodel.shuffles --seed 102 --count 40 --jobs "$JOBS" \
    --font /usr/share/sounds/sf2/TimGM6mb.sf2 --out "$DATA/styles/seedsh102" >/dev/null
step "data ready in $DATA"
