#!/usr/bin/env bash
# Scores naviscan's DJ profiles with ../shared/tempo (see its README):
#   scripts/tools/eval-dj.sh [CORPUS_DIR] [EBU_DIR]
# Renders the dev corpus (--seed 1 --count 60) and the EBU signals if missing, analyses every WAV and
# MP3 with `naviscan analyze --dj`, and prints eval_tempo.py's scores (by style) for each.
# Needs: fluidsynth fluid-soundfont-gm lame sox (apt), mido soundfile numpy scipy (pip).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
shared=${SHARED:-$here/../shared}
corpus=${1:-/tmp/tempo-dev}
ebu=${2:-/tmp/naviscan-ebu}
bin=$here/.build/release/naviscan
jobs=${JOBS:-2}
[[ -x $bin ]] || (cd "$here" && swift build -c release --product naviscan)
[[ -f $corpus/truth.json ]] || python3 "$shared/tempo/make_tempo_corpus.py" --seed 1 --count 60 --out "$corpus"
[[ -f $ebu/expected.json ]] || python3 "$shared/tempo/make_ebu_signals.py" --out "$ebu"

profile_dir() {  # SRC_DIR OUT_DIR
  rm -rf "$2"; mkdir -p "$2"
  find "$1" -maxdepth 1 -type f \( -name '*.wav' -o -name '*.mp3' \) -print0 |
    xargs -0 -P "$jobs" -I{} sh -c 'f="{}"; "$0" analyze "$f" --dj 2>/dev/null > "$1/$(basename "$f").json" || echo "failed: $f" >&2' "$bin" "$2"
}
out=$(mktemp -d)
profile_dir "$corpus/wav" "$out/wav"
profile_dir "$corpus/mp3" "$out/mp3"
profile_dir "$ebu" "$out/ebu"
for set in wav mp3; do
  echo "=== $set (silence truth: exact) ==="
  python3 "$shared/tempo/eval_tempo.py" --truth "$corpus/truth.json" "naviscan-$set=$out/$set" --by-style ${EVAL_ARGS:-}
  echo "=== $set (silence truth: m60) ==="
  python3 "$shared/tempo/eval_tempo.py" --truth "$corpus/truth.json" "naviscan-$set=$out/$set" --silence-truth m60 | grep -A12 -i silence || true
done
echo "=== EBU ==="
python3 "$shared/tempo/eval_tempo.py" --ebu "$ebu/expected.json" "naviscan=$out/ebu"
echo "profiles: $out"
