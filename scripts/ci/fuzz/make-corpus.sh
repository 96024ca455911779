#!/usr/bin/env bash
# Builds the seed corpus of naviscan-fuzz: every target gets every seed of its kind (audio, vis,
# profile), each input being the target's id byte followed by the file. Seeds are small valid
# files written by `naviscan-fuzz --write-seeds` plus the committed MP3 fixtures (valid and broken).
#   scripts/ci/fuzz/make-corpus.sh [OUT_DIR]   (default .build/fuzz-corpus; FUZZ=path/to/naviscan-fuzz)
set -euo pipefail
cd "$(dirname "$0")/../../.."
FUZZ=${FUZZ:-.build/debug/naviscan-fuzz}
OUT=${1:-.build/fuzz-corpus}
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
"$FUZZ" --write-seeds "$seeds"
cp Fixtures/mp3/*.mp3 Fixtures/broken/truncated.mp3 Fixtures/broken/random_bytes.flac "$seeds/"
# One file of each libavformat container, and the hostile ones (float samples of 1e17/1e30/NaN/Inf,
# headers stating 0–2 Hz): every backend is reached from the first iteration on.
cp Fixtures/formats/wavpack.wv Fixtures/formats/opus.mka Fixtures/formats/aac_editlist.m4a Fixtures/hostile/*.* "$seeds/"
rm -f "$seeds"/*.md
rm -rf "$OUT"
mkdir -p "$OUT"
"$FUZZ" --list | while read -r id name kind; do
    case $kind in
        audio) extensions="wav flac aiff ogg opus mp3 wv mka m4a caf" ;;
        vis) extensions="vis" ;;
        profile) extensions="json" ;;
    esac
    for seed in "$seeds"/*; do
        extension=${seed##*.}
        [[ " $extensions " == *" $extension "* ]] || continue
        { printf "\\x$(printf %02x "$id")"; cat "$seed"; } > "$OUT/$name-$(basename "$seed")"
    done
done
echo "fuzz corpus: $(ls "$OUT" | wc -l) inputs in $OUT"
