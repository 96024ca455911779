#!/usr/bin/env bash
# tempo-cv.sh [NAVISCAN] -- CI's check of the tempo model's package, its twin and the beat grid on a small
# fixed set (`make tempo-cv`).
#
# 1. Installs what is missing from Debian's archive (apt-get, as root or via sudo): fluidsynth and
#    fluid-soundfont-gm (the grooves), openmpt123 and libopenmpt0 (the modules), lame, and Debian's
#    python3 with numpy, scipy, mido and soundfile. The Python steps run /usr/bin/python3.
# 2. Renders the small set (tempomodel.data.SMALL) under $NAVISCAN_TEMPO_DATA (default
#    ~/.cache/naviscan-ci-tempo), skipping what is there already:
#    - modtempo/: the 4 tracker modules, by ../shared/modtempo/build.sh with a manifest of only their
#      lines of modules.tsv (4 Debian packages downloaded, not installed);
#    - styles/seed1, styles/seed2: 8 grooves of each seed (6 with a tempo, a very quiet ballad, 1 beatless) as
#      `../shared/tempo/make_tempo_corpus.py --seed N --count 40 --prefix seedN` renders them
#      (tempomodel.render_grooves renders only the named clips, the same files).
# 3. The package's unit tests (scripts/tempo-model/tests).
# 4. tempomodel.cv --subset small with NAVISCAN (the binary under test: $1, else $NAVISCAN): dumps of the
#    20 tracks, every variant fitted leave-one-source-out over 6 sources; fails unless every track was
#    dumped and scored. Then the twin against the binary: the tempo the twin reads with the model file
#    against the `bpm` of the binary's own profile of each track (at least 19 of 20 must agree).
# 5. Profiles the 16 grooves (`naviscan analyze FILE.wav --dj`) and scores their beat grids against the
#    generator's truth (tempomodel.score_beats: F-measure at ±70 ms, first 5 s ignored).
# Dumps and profiles are made again on every run (they belong to the binary), in $DATA/run.
# Prints the reports. It fails when a step fails, when a beatless clip gets beats, or when fewer than
# three quarters of the grooves' grids reach F >= 0.9 (floors below today's 14 of 14: a broken tracker or
# phase step, not drift).
# Env: NAVISCAN_TEMPO_DATA, NAVISCAN_SHARED (default ../shared beside the repository), JOBS (2).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAVISCAN="${1:-${NAVISCAN:-}}"
[ -n "$NAVISCAN" ] || { echo "usage: $0 NAVISCAN_BINARY (or NAVISCAN=...)" >&2; exit 2; }
[ -x "$NAVISCAN" ] || { echo "ERROR: $NAVISCAN is not an executable" >&2; exit 1; }
NAVISCAN="$(cd "$(dirname "$NAVISCAN")" && pwd)/$(basename "$NAVISCAN")"
SHARED="${NAVISCAN_SHARED:-$(dirname "$ROOT")/shared}"
[ -f "$SHARED/tempo/make_tempo_corpus.py" ] && [ -f "$SHARED/modtempo/build.sh" ] ||
    { echo "ERROR: no ../shared beside the repository ($SHARED); set NAVISCAN_SHARED" >&2; exit 1; }
export NAVISCAN_SHARED="$SHARED"
DATA="${NAVISCAN_TEMPO_DATA:-$HOME/.cache/naviscan-ci-tempo}"
JOBS="${JOBS:-2}"
PY=/usr/bin/python3
PKG="$ROOT/scripts/tempo-model"
export PYTHONPATH="$PKG${PYTHONPATH:+:$PYTHONPATH}"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
start=$SECONDS
step() { echo "==> [$((SECONDS - start)) s] $*"; }

# 1. packages
PACKAGES="fluidsynth fluid-soundfont-gm lame openmpt123 libopenmpt0 python3 python3-numpy python3-mido python3-soundfile python3-scipy"
if ! command -v fluidsynth >/dev/null 2>&1 || [ ! -f /usr/share/sounds/sf2/FluidR3_GM.sf2 ] ||
   ! command -v lame >/dev/null 2>&1 || ! command -v openmpt123 >/dev/null 2>&1 ||
   ! ldconfig -p 2>/dev/null | grep -q 'libopenmpt\.so\.0' ||
   ! "$PY" -c 'import numpy, scipy.signal, mido, soundfile' >/dev/null 2>&1; then
    step "installing $PACKAGES"
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends $PACKAGES
fi

# 2. data: the names come from tempomodel.data.SMALL
mkdir -p "$DATA"
DATA="$(cd "$DATA" && pwd)"
small() { "$PY" -c 'import sys; from tempomodel import data; print(" ".join(data.SMALL[sys.argv[1]]))' "$1"; }
MODULES=$(small modtempo)
SEED1=$(small grooves:seed1)
SEED2=$(small grooves:seed2)

have_modules() {
    [ -f "$DATA/modtempo/truth.json" ] || return 1
    for m in $MODULES; do [ -s "$DATA/modtempo/$m.wav" ] || return 1; done
    "$PY" -c 'import json, sys; t = json.load(open(sys.argv[1]))["tracks"]; sys.exit(any(m + ".wav" not in t for m in sys.argv[2:]))' \
        "$DATA/modtempo/truth.json" $MODULES
}
if ! have_modules; then
    step "rendering the modules: $MODULES"
    manifest="$DATA/modules-small.tsv"
    grep '^#' "$SHARED/modtempo/modules.tsv" > "$manifest.tmp"
    for m in $MODULES; do
        grep -P "^\Q$m\E\t" "$SHARED/modtempo/modules.tsv" >> "$manifest.tmp" ||
            { echo "ERROR: $m is not in $SHARED/modtempo/modules.tsv" >&2; exit 1; }
    done
    mv "$manifest.tmp" "$manifest"
    MODULES="$manifest" bash "$SHARED/modtempo/build.sh" "$DATA/modtempo"
    have_modules || { echo "ERROR: build.sh did not make every module of the small set" >&2; exit 1; }
fi

# The seed's grooves from the 40-clip schedule of the training grooves (docs/tempo-model.md).
for seed in 1 2; do
    names=$([ $seed = 1 ] && echo "$SEED1" || echo "$SEED2")
    step "grooves of seed $seed: $names"
    "$PY" -m tempomodel.render_grooves --seed $seed --count 40 --prefix seed$seed --jobs "$JOBS" \
        --out "$DATA/styles/seed$seed" $names
done

# 3. the package's tests
step "the tempo model package's unit tests"
"$PY" -W ignore -m unittest discover -s "$PKG/tests"

# 4. cross-validation (fresh dumps: they are the binary's) and the twin against the binary
RUN="$DATA/run"
rm -rf "$RUN"
mkdir -p "$RUN/profiles"
step "tempomodel.cv --subset small with $NAVISCAN"
"$PY" -m tempomodel.cv --subset small --no-nested --data "$DATA" --cache "$RUN/cv-cache" --naviscan "$NAVISCAN" \
    --jobs "$JOBS" --json "$RUN/cv.json" | tee "$RUN/cv.txt"
n_small=$(echo $MODULES $SEED1 $SEED2 | wc -w)
"$PY" - "$RUN/cv.json" "$n_small" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); want = int(sys.argv[2])
got = len(r['predictions'])
if got != want:
    sys.exit(f'ERROR: tempomodel.cv scored {got} of the small set\'s {want} tracks (a render or a dump is missing)')
print(f'# tempomodel.cv: {got}/{want} tracks scored in {len(r["folds"])} folds')
PY
step "the twin against the binary (the model file in the tree)"
"$PY" - "$RUN/cv.json" "$n_small" <<'PY'
import json, sys
from tempomodel import data
r = json.load(open(sys.argv[1])); want = int(sys.argv[2])
agree, lines = 0, []
for wav, twin in r['twin'].items():
    stem = r['stems'][wav]
    swift = json.load(open(stem + '.json')).get('bpm')
    same = (swift is None and twin is None) or (swift is not None and twin is not None and data.close(twin, swift))
    agree += same
    if not same: lines.append(f'  {wav}: binary {swift}, twin {twin}')
print(f'# twin and binary agree on {agree}/{len(r["twin"])} tracks' + ''.join('\n' + l for l in lines))
if len(r['twin']) != want or agree < want - 1:
    sys.exit('ERROR: the Python twin and the Swift read different tempi (tempomodel/ and Sources/NaviscanCore/Tempo are out of step)')
PY

# 4. beat grids of the grooves (beat times in the generator's truth)
step "profiles of the grooves (naviscan analyze --dj) and their beat grids"
"$PY" - "$RUN/beats-truth.json" "$DATA/styles/seed1/truth.json" "$DATA/styles/seed2/truth.json" <<'PY'
import json, sys
clips = [c for p in sys.argv[2:] for c in json.load(open(p))['clips']]
json.dump({'clips': clips}, open(sys.argv[1], 'w'))
PY
for seed in 1 2; do
    names=$([ $seed = 1 ] && echo "$SEED1" || echo "$SEED2")
    for n in $names; do echo "$DATA/styles/seed$seed/wav/$n.wav"; done
done | xargs -P "$JOBS" -I{} sh -c 'f="$1"; out="$2/$(basename "$f" .wav).json"
    nice -n 19 "$3" analyze "$f" --dj > "$out.tmp" && mv "$out.tmp" "$out" ||
    { echo "ERROR: naviscan analyze $f failed" >&2; exit 1; }' _ {} "$RUN/profiles" "$NAVISCAN"
"$PY" -m tempomodel.score_beats "$RUN/beats-truth.json" "$RUN/profiles" --per-file | tee "$RUN/beats.txt"
n_beats=$("$PY" -c 'import json, sys; print(sum(bool(c["beats_s"]) for c in json.load(open(sys.argv[1]))["clips"]))' "$RUN/beats-truth.json")
grep -q "over $n_beats tracks" "$RUN/beats.txt" ||
    { echo "ERROR: score_beats.py did not score all $n_beats grooves with a tempo" >&2; exit 1; }
# Floors below what the grid does on this set (0.5.4: 13 of 14 grooves at F >= 0.9, downbeat F mean
# 0.672, the 4 reggae clips' downbeats missed since their one drop marks beat 3, and the waltz
# seed2_002 read at a third of its 176; 0.5.3 read 12 and 0.648, 0.5.2 14 and 0.714): a broken
# tracker or grid falls through them, and so does a lost phase step (the 4 reggae clips go to their
# off-beats without it) or bars without the spectral change (the 0.4.0 rule lost both house clips'
# and the latin one's bar lines: 0.21 less). The downbeat floor is about one groove below the mean.
"$PY" - "$RUN/beats.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
good, total = map(int, re.search(r'over (\d+) tracks; >= 0.9: (\d+)', text).groups()[::-1])
empty, beatless = map(int, re.search(r'beatless with an empty grid: (\d+)/(\d+)', text).groups())
if empty != beatless:
    sys.exit(f'ERROR: {beatless - empty} beatless clip(s) got beats')
if 4 * good < 3 * total:
    sys.exit(f'ERROR: only {good} of {total} grooves have a beat grid at F >= 0.9 (at least three quarters expected)')
downbeat = float(re.search(r'downbeat F-measure: mean ([0-9.]+)', text).group(1))
if downbeat < 0.6:
    sys.exit(f'ERROR: downbeat F-measure mean {downbeat:.3f} on the grooves (at least 0.6 expected)')
print(f'# beat grids: {good}/{total} grooves at F >= 0.9, {empty}/{beatless} beatless clips with an empty grid, '
      f'downbeat F mean {downbeat:.3f}')
PY
step "done: reports in $RUN (cv.txt, beats.txt)"
