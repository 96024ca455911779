#!/usr/bin/env bash
# profile_corpus.sh SRC_DIR OUT_DIR -- runs `naviscan analyze --dj` on every WAV and MP3 directly in
# SRC_DIR (a ../shared/modtempo build, or a make_tempo_corpus.py wav/ or mp3/ folder), writing
# OUT_DIR/profiles/NAME.EXT.json and the tempo stage's band levels to OUT_DIR/bands/NAME.EXT.f32
# (for fit_tempo_model.py). JOBS (default 2) tracks at a time; NAVISCAN names the binary.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 SRC_DIR OUT_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")/../../.." && pwd)
bin=${NAVISCAN:-$here/.build/release/naviscan}
[[ -x $bin ]] || { echo "no $bin: run 'swift build -c release --product naviscan' first" >&2; exit 1; }
mkdir -p "$2/profiles" "$2/bands"
out=$(cd "$2" && pwd)
find "$1" -maxdepth 1 -type f \( -name '*.wav' -o -name '*.mp3' \) -print0 |
  xargs -0 -P "${JOBS:-2}" -I{} sh -c 'f="$1"; n=$(basename "$f")
    "$0" analyze "$f" --dj --dump-onset-bands "$2/bands/$n.f32" 2>/dev/null > "$2/profiles/$n.json" || echo "failed: $f" >&2' \
    "$bin" {} "$out"
