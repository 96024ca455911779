#!/bin/bash
# build.sh NAVISCAN [DATADIR] -- `make key-model`: renders the key dev set, dumps what the key
# decision reads, fits the model in folds by source and writes the shipped weights.
#
# Data (DATADIR, default $NAVISCAN_KEY_DATA or ~/.cache/naviscan-key; outside the repository):
#  - grooves of ../shared/tempo/make_tempo_corpus.py, 60 clips per seed: seeds 21-23 through
#    FluidR3_GM, seeds 24-25 through TimGM6mb (a copy of the generator with its soundfont changed);
#  - the MIDI dev songs (scripts/tempo-model/build-midi.sh: simutrans-data, freedink-data, pianobooster)
#    whose one key signature agrees with their notes (scripts/key-model/key_truth.py).
# Nothing reserved for judging is rendered or read (docs/key-model.md). Renders take about 40 minutes
# on 2 cores the first time; dumps and the fit about a minute after that.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NAVISCAN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
DATA="${2:-${NAVISCAN_KEY_DATA:-$HOME/.cache/naviscan-key}}"
SHARED="${NAVISCAN_SHARED:-$ROOT/../shared}"
mkdir -p "$DATA"
DATA="$(cd "$DATA" && pwd)"
case "$DATA/" in "$ROOT"/*) echo "DATADIR must be outside the repository" >&2; exit 2;; esac
python3 -c 'import mido, numpy, scipy, soundfile' 2>/dev/null || python3 -m pip install -q mido numpy scipy soundfile
for s in 21 22 23; do
    [ -f "$DATA/seed$s/truth.json" ] || python3 "$SHARED/tempo/make_tempo_corpus.py" --seed $s --count 60 --out "$DATA/seed$s"
done
sed "s#^SF2 = .*#SF2 = '/usr/share/sounds/sf2/TimGM6mb.sf2'#" "$SHARED/tempo/make_tempo_corpus.py" > "$DATA/make_corpus_timgm.py"
cp "$SHARED/tempo/bs1770_ref.py" "$DATA/"
for s in 24 25; do
    [ -f "$DATA/seed$s/truth.json" ] || python3 "$DATA/make_corpus_timgm.py" --seed $s --count 60 --out "$DATA/seed$s"
done
bash "$ROOT/scripts/tempo-model/build-midi.sh" "$DATA/midi"
python3 "$ROOT/scripts/key-model/key_truth.py" "$DATA/midi"
python3 "$HERE/dump_features.py" --naviscan "$NAVISCAN" --out "$DATA/dumps" \
    --grooves "$DATA"/seed21 "$DATA"/seed22 "$DATA"/seed23 "$DATA"/seed24 "$DATA"/seed25 --midi "$DATA/midi/key_truth.json"
python3 "$HERE/fit_key_model.py" --dumps "$DATA/dumps" --write
