#!/bin/bash
# build.sh [OUTDIR] -- the labelled dev set for sonic similarity (issue 29); see README.md here.
#
# 1. styles:   ../shared/tempo/make_tempo_corpus.py --seed 1 and --seed 2 (COUNT clips each,
#              default 40; --prefix seed1 / seed2) into OUTDIR/work/styles/seedN/.
#              label = the clip's style (truth.json), source = seedN.
# 2. packages: ../shared/modtempo/build.sh OUTDIR/work/modtempo (the Debian 12 game packages named in
#              its modules.tsv, never any other: other packages with modules are reserved for
#              independent evaluation). label = source = the Debian package.
# 3. assemble.py: hard links (copies across file systems) the WAVs into
#              OUTDIR/library/<group>/<source>/<file>, skips files that are silent (sample peak below
#              -60 dBFS; beatless ambient clips are kept), removes stale library files and writes
#              OUTDIR/labels.json = {"tracks": {"library/...": {"label", "group", "source"}}, "meta": ...}.
# OUTDIR defaults to $HOME/.cache/naviscan-similarity. Idempotent: finished renders, downloads and
# links are reused (delete OUTDIR/work/styles/seedN to re-render a seed). Every heavy step runs under
# nice -n 19. Run as root on Debian 12: installs fluidsynth fluid-soundfont-gm lame sox (apt) when
# missing and mido soundfile numpy librosa into the venv $VENV (default
# $HOME/.cache/naviscan-similarity-venv). SHARED overrides the shared/ folder (default: the repo's
# sibling ../shared, else /work/shared). Times of each step go to OUTDIR/build-times.txt.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
OUT="${1:-$HOME/.cache/naviscan-similarity}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
case "$OUT/" in "$REPO"/*) echo "OUTDIR must be outside the repository" >&2; exit 2;; esac
if [ -n "${SHARED:-}" ]; then :
elif [ -d "$REPO/../shared/tempo" ]; then SHARED="$(cd "$REPO/../shared" && pwd)"
else SHARED=/work/shared; fi
[ -f "$SHARED/tempo/make_tempo_corpus.py" ] && [ -f "$SHARED/modtempo/build.sh" ] \
    || { echo "no shared/tempo or shared/modtempo under $SHARED (set SHARED)" >&2; exit 2; }
VENV="${VENV:-$HOME/.cache/naviscan-similarity-venv}"
COUNT="${COUNT:-40}"
SEEDS="${SEEDS:-1 2}"
N="nice -n 19"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
unset MODULES   # modtempo/build.sh must use its own modules.tsv
W="$OUT/work"
mkdir -p "$W/styles"
TIMES="$OUT/build-times.txt"
: > "$TIMES"
T0=$(date +%s)
step() { local now; now=$(date +%s); echo "$1: $((now - T))s" | tee -a "$TIMES" >&2; T=$now; }
T=$T0

# 0. tools
missing=()
command -v fluidsynth >/dev/null 2>&1 || missing+=(fluidsynth)
command -v lame >/dev/null 2>&1 || missing+=(lame)
command -v sox >/dev/null 2>&1 || missing+=(sox)
[ -f /usr/share/sounds/sf2/FluidR3_GM.sf2 ] || missing+=(fluid-soundfont-gm)
if [ ${#missing[@]} -gt 0 ]; then
    $N apt-get update -qq
    $N apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -c 'import mido, numpy, soundfile, librosa' 2>/dev/null \
    || $N "$PY" -m pip install -q mido soundfile numpy librosa
step "tools"

# 1. rendered grooves, one folder per seed (rendered into a temporary folder, renamed when complete)
for s in $SEEDS; do
    d="$W/styles/seed$s"
    if "$PY" - "$d/truth.json" "$s" "$COUNT" <<'PY' 2>/dev/null; then
import json, sys
t = json.load(open(sys.argv[1]))
ok = t['seed'] == int(sys.argv[2]) and t['count'] == int(sys.argv[3]) and len(t['clips']) == int(sys.argv[3])
sys.exit(0 if ok else 1)
PY
        echo "styles seed$s: reused $d" >&2
        continue
    fi
    echo "styles seed$s: rendering $COUNT clips" >&2
    rm -rf "$d" "$d.tmp"
    $N "$PY" "$SHARED/tempo/make_tempo_corpus.py" --seed "$s" --count "$COUNT" --prefix "seed$s" \
        --jobs 2 --out "$d.tmp" >&2
    mv "$d.tmp" "$d"
done
step "styles (make_tempo_corpus.py, seeds $SEEDS)"

# 2. tracker songs from the Debian packages of modtempo/modules.tsv (idempotent by itself)
$N bash "$SHARED/modtempo/build.sh" "$W/modtempo"
step "packages (modtempo/build.sh)"

# 3. library and labels
$N "$PY" "$HERE/assemble.py" "$OUT" $(for s in $SEEDS; do echo "seed$s=$W/styles/seed$s/truth.json"; done) \
    --modtempo "$W/modtempo/truth.json"
step "assemble (silence check, links, labels.json)"
echo "total: $(( $(date +%s) - T0 ))s" | tee -a "$TIMES" >&2
echo "done: $OUT/labels.json, library $OUT/library" >&2
