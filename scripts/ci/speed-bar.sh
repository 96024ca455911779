#!/usr/bin/env bash
# The speed bar: naviscan's full --vis --dj analysis against the plain-C floor, per format and source rate.
#   scripts/ci/speed-bar.sh [MUSIC_DIR] [SPEED_DIR]
# MUSIC_DIR: ../shared/corpus/build.sh's music ($NAVISCAN_CORPUS/music or ~/.cache/naviscan-corpus/music),
# for its mp3/ and ogg/; SPEED_DIR: scripts/ci/speed-corpus.sh's copies of its FLAC at 32, 44.1, 48 and
# 96 kHz and as AAC and ALAC (~/.cache/naviscan-speed, made here when missing).
# The floor (scripts/ci/c-floor/floor.c: the same decoders + libebur128 integrated loudness + a 1024-point
# FFT at 30 frames/s, nothing else) is compiled and timed in this run. Per folder and repetition
# (REPEAT, default 3) it runs the floor over every file and `naviscan bench DIR --jobs 1 --mode full`
# as a pair, alternating which goes first. The primary figure is CPU time (user + system): this VM is
# shared with other builds, and CPU time counts only our own work; the wall-clock ratio is printed
# beside it. Prints the medians of the per-pair ratios. FILES=N times only each folder's first N files
# (path order) when the machine is too busy for all of them. Needs: gcc pkg-config sox ffmpeg bc (apt).
set -euo pipefail
export LC_ALL=C
here=$(cd "$(dirname "$0")/../.." && pwd)
music=${1:-${NAVISCAN_CORPUS:-$HOME/.cache/naviscan-corpus}/music}
speed=${2:-${NAVISCAN_SPEED_CORPUS:-$HOME/.cache/naviscan-speed}}
bin=${NAVISCAN_BIN:-$here/.build/release/naviscan}
[[ -x $bin ]] || (cd "$here" && swift build -c release --product naviscan)
[[ -d $music/mp3 && -d $music/ogg ]] || { echo "speed-bar: no $music/{mp3,ogg}: run ../shared/corpus/build.sh" >&2; exit 2; }
"$here/scripts/ci/speed-corpus.sh" "$music" "$speed" >/dev/null

floor=$(mktemp -d)/floor
trap 'rm -rf "$(dirname "$floor")"' EXIT
cc -O2 "$here/scripts/ci/c-floor/floor.c" -o "$floor" \
  $(pkg-config --cflags --libs libmpg123 sndfile libebur128 fftw3f libavformat libavcodec libavutil) -lm
repeat=${REPEAT:-3}
files=${FILES:-100000}
# The folder's first $files files, in the path order `naviscan bench --limit` takes them.
files_of() { local all=("$1"/*); printf '%s\0' "${all[@]:0:$files}"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# "cpu wall" seconds of the floor over a folder's files (bash's own timer: user + system of the child).
time_floor() {  # DIR
  local TIMEFORMAT='%U %S %R' out
  out=$( { time files_of "$1" | xargs -0 "$floor" > /dev/null 2>&1; } 2>&1 )
  awk '{ print $1 + $2, $3 }' <<< "$out"
}
# "hours cpu wall" of naviscan's full analysis over a folder, as `naviscan bench` measures it in-process
# (after its warm-up pass): the last row's hours, full x-realtime and full CPU seconds.
time_naviscan() {  # DIR
  "$bin" bench "$1" --jobs 1 --mode full --limit "$files" | awk '$1 != "format" && NF >= 11 { row = $3 " " $NF " " ($3 * 3600 / $7) } END { print row }'
}

printf '%-11s %6s %11s %10s %12s %12s   %s\n' source hours "floor cpu s" "full cpu s" "cpu / floor" "wall / floor" "per pair, cpu / floor"
row() {  # LABEL DIR
  local label=$1 dir=$2 ratios=() walls=() floors=() fulls=() hours fc fw nc nw i
  files_of "$dir" | xargs -0 cat > /dev/null
  for ((i = 0; i < repeat; i++)); do
    if ((i % 2 == 0)); then
      read -r fc fw <<< "$(time_floor "$dir")"; read -r hours nc nw <<< "$(time_naviscan "$dir")"
    else
      read -r hours nc nw <<< "$(time_naviscan "$dir")"; read -r fc fw <<< "$(time_floor "$dir")"
    fi
    floors+=("$fc") fulls+=("$nc")
    ratios+=("$(echo "$nc / $fc" | bc -l)") walls+=("$(echo "$nw / $fw" | bc -l)")
  done
  printf '%-11s %6.2f %11.2f %10.2f %11.2fx %11.2fx   %s\n' "$label" "$hours" \
    "$(printf '%s\n' "${floors[@]}" | median)" "$(printf '%s\n' "${fulls[@]}" | median)" \
    "$(printf '%s\n' "${ratios[@]}" | median)" "$(printf '%s\n' "${walls[@]}" | median)" \
    "$(printf '%.2f ' "${ratios[@]}")"
}
row mp3 "$music/mp3"
row ogg "$music/ogg"
row "flac 32k" "$speed/flac-32000"
row "flac 44.1k" "$speed/flac-44100"
row "flac 48k" "$speed/flac-48000"
row "flac 96k" "$speed/flac-96000"
row aac "$speed/aac"
row alac "$speed/alac"
