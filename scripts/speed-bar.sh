#!/usr/bin/env bash
# The speed bar, measured as the benchmark issue states it, on ../shared/corpus/build.sh's music:
#   scripts/speed-bar.sh [MUSIC_DIR]      (default: $NAVISCAN_CORPUS/music or ~/.cache/naviscan-corpus/music)
# For music/mp3 and music/flac it times the reference decoders (`mpg123 -q -s FILE > /dev/null`,
# `flac -d -s -c FILE > /dev/null`, one file after another), then runs `naviscan bench --jobs 1` and
# `--jobs 2` on the same folder and prints the full --vis --dj time as a multiple of the reference
# decode, the --jobs 2 speed-up and the peak resident memory. Every measurement is the best of
# REPEAT runs (default 3): the machine's noise only ever slows a run down. Needs: mpg123 flac (apt).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
music=${1:-${NAVISCAN_CORPUS:-$HOME/.cache/naviscan-corpus}/music}
bin=$here/.build/release/naviscan
[[ -x $bin ]] || (cd "$here" && swift build -c release --product naviscan)
for tool in mpg123 flac; do
  command -v "$tool" >/dev/null || { echo "speed-bar: needs $tool (apt-get install mpg123 flac)" >&2; exit 2; }
done
[[ -d $music/mp3 && -d $music/flac ]] || { echo "speed-bar: no $music/{mp3,flac}: run ../shared/corpus/build.sh" >&2; exit 2; }

repeat=${REPEAT:-3}
seconds() { local start end; start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "$end - $start" | bc; }
reference_decode() {  # FORMAT
  local f
  for f in "$music/$1"/*."$1"; do
    if [[ $1 == mp3 ]]; then mpg123 -q -s "$f" > /dev/null; else flac -d -s -c "$f" > /dev/null; fi
  done
}
best_seconds() { local i; for ((i = 0; i < repeat; i++)); do seconds "$@"; done | sort -n | head -1; }
# Prints "hours decode_xrt loudness_xrt full_xrt" for the format's row (best of REPEAT runs each),
# then the largest peak RSS in MB.
bench_row() {  # FORMAT JOBS
  local i
  for ((i = 0; i < repeat; i++)); do "$bin" bench "$music/$1" --jobs "$2"; done | awk -v f="$1" '
    $1 == f { gsub(/[()x]/, ""); h = $3; for (c = 4; c <= 7; c++) if ($c > best[c]) best[c] = $c }
    /peak resident memory/ { if ($4 > rss) rss = $4 }
    END { print h, best[4], best[5], best[7]; print rss }'
}

printf '%-5s %8s %10s %12s %10s %14s %10s %9s\n' format hours "ref s" "full s j1" "vs ref" "vs own decode" "j2 speed" "RSS MB"
for fmt in mp3 flac; do
  ref=$(best_seconds reference_decode "$fmt")
  one=$(bench_row "$fmt" 1)
  read -r hours decode_x _ full_x <<< "$(head -1 <<< "$one")"
  rss=$(tail -1 <<< "$one")
  read -r _ _ _ full_x2 < <(bench_row "$fmt" 2 | head -1)
  full=$(echo "$hours * 3600 / $full_x" | bc -l)
  printf '%-5s %8.2f %10.2f %12.2f %9.2fx %13.2fx %9.2fx %9.1f\n' "$fmt" "$hours" "$ref" "$full" \
    "$(echo "$full / $ref" | bc -l)" "$(echo "$decode_x / $full_x" | bc -l)" "$(echo "$full_x2 / $full_x" | bc -l)" "$rss"
done
