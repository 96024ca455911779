#!/bin/bash
# build.sh NAVISCAN [DATADIR] -- `make similarity-model`: builds the similarity dev sets, dumps what
# the model reads, chooses it in folds by source and writes the shipped constants
# (Sources/NaviscanCore/Similarity/SimilarityModel+Shipped.swift) and Fixtures/similarity/.
#
# Dev sets (DATADIR, default $NAVISCAN_SIMILARITY_DATA or ~/.cache/naviscan-simdev; outside the repo):
#  - styles:      grooves of ../shared/tempo/make_tempo_corpus.py, seeds 21-23 (FluidR3_GM) and 24-25
#                 (TimGM6mb), 60 each: the key model's renders ($NAVISCAN_KEY_DATA/seedNN) when present;
#  - styles-wide: render_wide_styles.py, seeds 31-32 (FluidR3_GM) and 33-34 (TimGM6mb), 60 each;
#  - modules:     ../shared/modtempo/build.sh (its modules.tsv only);
#  - games:       build_games.sh (13 Debian game soundtracks, none reserved);
#  - soundtracks: the half of hedgewars' and supertuxkart's music ../shared/corpus/build.sh takes.
# Nothing reserved for judging is downloaded, rendered or read (docs/similarity.md). The first run
# takes about 30 minutes on 2 cores (downloads 1.3 GB); the dumps and the fit about 3 minutes after.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
NAVISCAN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
DATA="${2:-${NAVISCAN_SIMILARITY_DATA:-$HOME/.cache/naviscan-simdev}}"
SHARED="${NAVISCAN_SHARED:-$ROOT/../shared}"
KEYDATA="${NAVISCAN_KEY_DATA:-$HOME/.cache/naviscan-key}"
CORPUS="${NAVISCAN_CORPUS:-$HOME/.cache/naviscan-corpus}"
mkdir -p "$DATA/styles"
DATA="$(cd "$DATA" && pwd)"
case "$DATA/" in "$ROOT"/*) echo "DATADIR must be outside the repository" >&2; exit 2;; esac
python3 -c 'import mido, numpy, scipy, soundfile' 2>/dev/null || python3 -m pip install -q mido numpy scipy soundfile
for s in 21 22 23 24 25; do
    d="$DATA/styles/seed$s"
    [ -f "$d/truth.json" ] && continue
    if [ -f "$KEYDATA/seed$s/truth.json" ]; then ln -sfn "$KEYDATA/seed$s" "$d"; continue; fi
    font=/usr/share/sounds/sf2/FluidR3_GM.sf2
    [ "$s" -ge 24 ] && font=/usr/share/sounds/sf2/TimGM6mb.sf2
    python3 - "$SHARED" "$s" "$font" "$d" <<'PY'
import importlib.util, sys
shared, seed, font, out = sys.argv[1:]
spec = importlib.util.spec_from_file_location("make_tempo_corpus", shared + "/tempo/make_tempo_corpus.py")
m = importlib.util.module_from_spec(spec); sys.modules["make_tempo_corpus"] = m; spec.loader.exec_module(m)
m.SF2 = font
sys.argv = ["make_tempo_corpus.py", "--seed", seed, "--count", "60", "--out", out]
m.main()
PY
done
for s in 31 32 33 34; do
    font=/usr/share/sounds/sf2/FluidR3_GM.sf2
    [ "$s" -ge 33 ] && font=/usr/share/sounds/sf2/TimGM6mb.sf2
    [ -f "$DATA/styles/wide$s/truth.json" ] || python3 "$HERE/render_wide_styles.py" --shared "$SHARED" --seed $s --font "$font" --out "$DATA/styles/wide$s"
done
[ -f "$DATA/modtempo/truth.json" ] || bash "$SHARED/modtempo/build.sh" "$DATA/modtempo"
bash "$HERE/build_games.sh" "$DATA/games"
[ -d "$CORPUS/music/ogg" ] || NAVISCAN_CORPUS="$CORPUS" bash "$SHARED/corpus/build.sh"
python3 "$HERE/dump_bands.py" --naviscan "$NAVISCAN" --out "$DATA/dumps" \
    --styles "$DATA"/styles/seed2? --wide-styles "$DATA"/styles/wide3? \
    --modules "$DATA/modtempo" --games "$DATA/games" --soundtracks "$CORPUS/music/ogg"
python3 "$HERE/fit_similarity.py" "$DATA/dumps" --json "$DATA/fit.json" --ship best --write
