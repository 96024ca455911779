#!/usr/bin/env bash
# The speed bar, measured as the benchmark issue states it, on ../shared/corpus/build.sh's music:
#   scripts/speed-bar.sh [MUSIC_DIR]      (default: $NAVISCAN_CORPUS/music or ~/.cache/naviscan-corpus/music)
# For music/mp3 and music/flac it times the reference decoders (`mpg123 -q -s FILE > /dev/null`,
# `flac -d -s -c FILE > /dev/null`, one file after another), then runs `naviscan bench --jobs 1` and
# `--jobs 2` on the same folder and prints the full --vis --dj time as a multiple of the reference
# decode, the --jobs 2 speed-up and the peak resident memory, next to the plain-C floor
# (scripts/c-floor/floor.c: decode + libebur128 integrated + a 30 fps FFT) timed the same way: the
# median of REPEAT paired runs (default 3). Needs: mpg123 flac gcc (apt).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
music=${1:-${NAVISCAN_CORPUS:-$HOME/.cache/naviscan-corpus}/music}
bin=$here/.build/release/naviscan
[[ -x $bin ]] || (cd "$here" && swift build -c release --product naviscan)
for tool in mpg123 flac; do
  command -v "$tool" >/dev/null || { echo "speed-bar: needs $tool (apt-get install mpg123 flac)" >&2; exit 2; }
done
[[ -d $music/mp3 && -d $music/flac ]] || { echo "speed-bar: no $music/{mp3,flac}: run ../shared/corpus/build.sh" >&2; exit 2; }

floor=$(mktemp -d)/floor
trap 'rm -rf "$(dirname "$floor")"' EXIT
cc -O2 "$here/scripts/c-floor/floor.c" -o "$floor" $(pkg-config --cflags --libs libmpg123 sndfile libebur128 fftw3f) -lm
repeat=${REPEAT:-3}
seconds() { local start end; start=$(date +%s.%N); "$@"; end=$(date +%s.%N); echo "$end - $start" | bc; }
reference_decode() {  # FORMAT
  local f
  for f in "$music/$1"/*."$1"; do
    if [[ $1 == mp3 ]]; then mpg123 -q -s "$f" > /dev/null; else flac -d -s -c "$f" > /dev/null; fi
  done
}
# One `naviscan bench` run: "hours decode_xrt full_xrt peak_rss_mb" for the format's row.
bench_row() {  # FORMAT JOBS
  "$bin" bench "$music/$1" --jobs "$2" | awk -v f="$1" '
    $1 == f { gsub(/[()x]/, ""); h = $3; d = $4; full = $7 }
    /peak resident memory/ { rss = $4 }
    END { print h, d, full, rss }'
}
run_floor() { "$floor" "$@" > /dev/null 2>&1; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# The machine's speed drifts (a shared VM): each repetition times the reference decoders and then
# naviscan back to back, and the ratios are taken per repetition; the table shows their median.
printf '%-5s %6s %8s %10s %9s %14s %9s %7s %13s\n' format hours "ref s" "full s" "vs ref" "vs own decode" "j2 speed" "RSS MB" "C floor/ref"
for fmt in mp3 flac; do
  ratios=() owns=() speedups=() refs=() fulls=() floors=() rss=0
  for ((i = 0; i < repeat; i++)); do
    ref=$(seconds reference_decode "$fmt")
    floors+=("$(echo "$(seconds run_floor "$music/$fmt"/*."$fmt") / $ref" | bc -l)")
    read -r hours decode_x full_x mb <<< "$(bench_row "$fmt" 1)"
    read -r _ _ full_x2 mb2 <<< "$(bench_row "$fmt" 2)"
    full=$(echo "$hours * 3600 / $full_x" | bc -l)
    refs+=("$ref") fulls+=("$full")
    ratios+=("$(echo "$full / $ref" | bc -l)") owns+=("$(echo "$decode_x / $full_x" | bc -l)")
    speedups+=("$(echo "$full_x2 / $full_x" | bc -l)")
    rss=$(echo "$rss $mb $mb2" | tr ' ' '\n' | sort -n | tail -1)
  done
  printf '%-5s %6.2f %8.2f %10.2f %8.2fx %13.2fx %8.2fx %7.1f %12.2fx\n' "$fmt" "$hours" \
    "$(printf '%s\n' "${refs[@]}" | median)" "$(printf '%s\n' "${fulls[@]}" | median)" \
    "$(printf '%s\n' "${ratios[@]}" | median)" "$(printf '%s\n' "${owns[@]}" | median)" \
    "$(printf '%s\n' "${speedups[@]}" | median)" "$rss" "$(printf '%s\n' "${floors[@]}" | median)"
  echo "      per run, full / reference decode: $(printf '%.2f ' "${ratios[@]}")"
done
