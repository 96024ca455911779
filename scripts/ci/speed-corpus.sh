#!/usr/bin/env bash
# Makes the speed bar's per-format, per-rate copies of ../shared/corpus's real music (never committed):
#   scripts/ci/speed-corpus.sh [MUSIC_DIR] [OUT_DIR]
# MUSIC_DIR defaults to $NAVISCAN_CORPUS/music (or ~/.cache/naviscan-corpus/music), OUT_DIR to
# $NAVISCAN_SPEED_CORPUS (or ~/.cache/naviscan-speed). From music/flac (27 tracks, 72 minutes, three
# of them 32 kHz) it writes flac-32000, flac-44100, flac-48000 (16-bit) and flac-96000 (24-bit) with
# sox's rate converter, and aac (AAC-LC 256 kbit/s .m4a) and alac (.m4a) at the source rate with
# ffmpeg. Files already there are kept, so a second run costs nothing.
# Needs: sox flac ffmpeg (apt).
set -euo pipefail
music=${1:-${NAVISCAN_CORPUS:-$HOME/.cache/naviscan-corpus}/music}
out=${2:-${NAVISCAN_SPEED_CORPUS:-$HOME/.cache/naviscan-speed}}
for tool in sox ffmpeg; do
  command -v "$tool" >/dev/null || { echo "speed-corpus: needs $tool (apt-get install sox ffmpeg)" >&2; exit 2; }
done
[[ -d $music/flac ]] || { echo "speed-corpus: no $music/flac: run ../shared/corpus/build.sh first" >&2; exit 2; }
# Each file is written under a temporary name and renamed, so an interrupted run leaves no half file.
partial() { echo "${1%.*}.partial.${1##*.}"; }
for rate in 32000 44100 48000 96000; do
  bits=16; [[ $rate == 96000 ]] && bits=24
  mkdir -p "$out/flac-$rate"
  for f in "$music"/flac/*.flac; do
    target=$out/flac-$rate/$(basename "$f")
    [[ -s $target ]] || { sox -V1 "$f" -b "$bits" "$(partial "$target")" rate "$rate" && mv "$(partial "$target")" "$target"; }
  done
done
mkdir -p "$out/aac" "$out/alac"
for f in "$music"/flac/*.flac; do
  name=$(basename "$f" .flac)
  for codec in aac alac; do
    target=$out/$codec/$name.m4a
    options=(-c:a "$codec"); [[ $codec == aac ]] && options+=(-b:a 256k)
    [[ -s $target ]] || { ffmpeg -v error -nostdin -i "$f" -vn "${options[@]}" -f mp4 "$(partial "$target")" &&
      mv "$(partial "$target")" "$target"; }
  done
done
echo "speed-corpus: $out ($(du -sh "$out" | cut -f1))"
