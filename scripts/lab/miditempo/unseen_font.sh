#!/bin/bash
# unseen_font.sh [OUTDIR] [DEVDIR] -- the MIDI dev set's songs rendered with a soundfont the dev set never
# uses: MuseScore_General_Lite (Debian's musescore-general-soundfont-small). Same songs, same truth rules
# (make_truth.py --fonts musescore), so a held-out score on these renders tells whether the tempo model
# learned the songs' timbre. For measurement only: nothing is fitted on them
# (scripts/lab/tempo-model/unseen_font_cv.py scores them; docs/tempo-dev-set.md has the figures).
#
# DEVDIR is build.sh's output (default $HOME/.cache/naviscan-miditempo); OUTDIR (default
# $HOME/.cache/naviscan-midi-unseen) gets midi -> DEVDIR/midi, audio/musescore/<package>/<stem>.wav and
# truth.json. Idempotent. Run as root on Debian 12: installs musescore-general-soundfont-small when missing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HOME/.cache/naviscan-midi-unseen}"
DEV="${2:-$HOME/.cache/naviscan-miditempo}"
[ -f "$DEV/midi/index.json" ] || { echo "no MIDI dev set at $DEV: run scripts/lab/miditempo/build.sh first" >&2; exit 2; }
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"; DEV="$(cd "$DEV" && pwd)"
case "$OUT/" in "$(cd "$HERE/../../.." && pwd)"/*) echo "OUTDIR must be outside the repository" >&2; exit 2;; esac
[ "$OUT" != "$DEV" ] || { echo "OUTDIR must not be the dev set's directory" >&2; exit 2; }
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
if [ ! -f /usr/share/sounds/sf3/MuseScore_General_Lite.sf3 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends musescore-general-soundfont-small >/dev/null
fi
ln -sfn "$DEV/midi" "$OUT/midi"
python3 "$HERE/make_truth.py" check "$OUT" --fonts musescore
python3 "$HERE/make_truth.py" render "$OUT" --fonts musescore -j "${JOBS:-$(nproc)}"
python3 "$HERE/make_truth.py" truth "$OUT" --fonts musescore
echo "done: $OUT/truth.json" >&2
