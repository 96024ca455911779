#!/usr/bin/env bash
# Decode speed of the libavformat backend against the ffmpeg command line, on the same files:
#   scripts/tools/ffmpeg-speed.sh DIR...        (each DIR holds files of one container, e.g. AAC .m4a)
# Per DIR and repetition (REPEAT, default 5): `ffmpeg -v quiet -i FILE -f null -` over every file,
# one after another, then `naviscan bench DIR --jobs 1` back to back (this shared VM drifts over
# minutes, so ratios are taken per repetition). Prints the medians of: ffmpeg's time, naviscan's
# decode-only time and the full --vis --dj time, decode-only / ffmpeg and full / ffmpeg.
# Make the files from real music, e.g. ../shared/corpus's FLAC: ffmpeg -i X.flac -c:a aac -b:a 256k X.m4a
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${NAVISCAN_BIN:-$here/.build/release/naviscan}
[[ -x $bin ]] || (cd "$here" && swift build -c release --product naviscan)
command -v ffmpeg >/dev/null || { echo "ffmpeg-speed: needs ffmpeg (apt-get install ffmpeg)" >&2; exit 2; }
repeat=${REPEAT:-5}
seconds() { local start end; start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "$end - $start" | bc; }
ffmpeg_all() { local f; for f in "$1"/*; do ffmpeg -v quiet -i "$f" -f null -; done; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '%-24s %6s %9s %9s %9s %11s %9s\n' folder hours "ffmpeg s" "decode s" "full s" "decode/ff" "full/ff"
for dir in "$@"; do
  refs=() decodes=() fulls=() dratios=() fratios=()
  for ((i = 0; i < repeat; i++)); do
    ref=$(seconds ffmpeg_all "$dir")
    # The last table row of `naviscan bench` ("all", or the one format's row): hours, decode
    # x-realtime, full x-realtime.
    read -r hours decode_x full_x <<< "$("$bin" bench "$dir" --jobs 1 | awk '$1 != "format" && NF >= 7 { gsub(/[()x]/, ""); row = $3 " " $4 " " $7 } END { print row }')"
    decode=$(echo "$hours * 3600 / $decode_x" | bc -l) full=$(echo "$hours * 3600 / $full_x" | bc -l)
    refs+=("$ref") decodes+=("$decode") fulls+=("$full")
    dratios+=("$(echo "$decode / $ref" | bc -l)") fratios+=("$(echo "$full / $ref" | bc -l)")
  done
  printf '%-24s %6.2f %9.2f %9.2f %9.2f %10.2fx %8.2fx\n' "$(basename "$dir")" "$hours" \
    "$(printf '%s\n' "${refs[@]}" | median)" "$(printf '%s\n' "${decodes[@]}" | median)" \
    "$(printf '%s\n' "${fulls[@]}" | median)" "$(printf '%s\n' "${dratios[@]}" | median)" \
    "$(printf '%s\n' "${fratios[@]}" | median)"
  echo "      per run, full / ffmpeg: $(printf '%.2f ' "${fratios[@]}")"
done
