#!/usr/bin/env bash
# Measures what the store costs a scan (issue: "durable writes, group commit"):
#   1. per-file overhead on many short files: `naviscan scan --jobs J` (outputs written, synced,
#      rows committed) against `naviscan bench` (the same analysis, nothing written), per file and job;
#   2. a re-scan with nothing changed, on a generated tree of COUNT files (default 100,000).
# Usage: scripts/tools/store-overhead.sh [SHORT_FILES] [COUNT]   (needs python3; writes under $TMPDIR)
set -euo pipefail
cd "$(dirname "$0")/../.."
SHORT=${1:-2000}
COUNT=${2:-100000}
JOBS=${JOBS:-2}
BIN=${BIN:-.build/release/naviscan}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/naviscan-overhead.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

make_tree() {  # make_tree DIR N SECONDS RATE: N mono 16-bit WAV files of a quiet tone, 100 per folder
    python3 - "$@" <<'PY'
import math, os, struct, sys, wave
root, n, seconds, rate = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
frames = int(seconds * rate)
tone = b"".join(struct.pack("<h", int(3000 * math.sin(2 * math.pi * 440 * i / rate))) for i in range(frames))
for i in range(n):
    folder = os.path.join(root, "a%03d" % (i // 100))
    os.makedirs(folder, exist_ok=True)
    with wave.open(os.path.join(folder, "t%06d.wav" % i), "wb") as w:
        w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate); w.writeframes(tone)
PY
}

seconds_of() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s.%N); echo "$e - $s" | bc -l; }

echo "== per-file overhead: $SHORT one-second files, --jobs $JOBS"
make_tree "$WORK/short" "$SHORT" 1 44100
for i in 1 2 3; do
    # bench's full mode is the same analysis with nothing written: no frame file, profile, row or sync.
    analysis=$("$BIN" bench "$WORK/short" --jobs "$JOBS" --mode full | awk '$1 == "wav" { printf "%.3f", $3 * 3600 / $7 }')
    # A new output folder each run, the old ones removed only at the end: ext4 spends far longer
    # creating files just after thousands were deleted (it checks recently freed inodes), which
    # would be a cost of this script, not of a scan.
    scan=$(seconds_of "$BIN" scan "$WORK/short" --out "$WORK/short-out-$i" --jobs "$JOBS" --quiet)
    echo "run $i: scan ${scan} s, analysis alone ${analysis} s: overhead" \
        "$(echo "($scan - $analysis) * 1000 * $JOBS / $SHORT" | bc -l | cut -c1-5) ms per file and job"
done

echo "== no-change re-scan of $COUNT files"
make_tree "$WORK/many" "$COUNT" 0.05 8000
first=$(seconds_of "$BIN" scan "$WORK/many" --out "$WORK/many-out" --jobs "$JOBS" --quiet)
echo "first scan: ${first} s ($(echo "$first * 1000 * $JOBS / $COUNT" | bc -l | cut -c1-5) ms per file and job, analysis included)"
for i in 1 2 3; do
    again=$(seconds_of "$BIN" scan "$WORK/many" --out "$WORK/many-out" --jobs "$JOBS" --quiet)
    echo "re-scan $i, nothing changed: ${again} s"
done
