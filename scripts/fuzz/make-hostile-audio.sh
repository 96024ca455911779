#!/usr/bin/env bash
# Writes the hostile audio fixtures of Fixtures/hostile (committed; tests need no ffmpeg):
#   float-VALUE.{wv,mka}       0.1 s of a -12 dBFS 440 Hz mono sine at 44.1 kHz, 32-bit float, with
#                             sample 1000 set to 1e17, 1e30, NaN or +Inf
#   rate-N.wav, rate-N.flac, rate-N.mka, rate-1-empty.flac
#                             headers that state a sample rate of 0, 1 or 2 Hz (the FLAC one with
#                             0 samples too)
# Needs ffmpeg and python3.   scripts/fuzz/make-hostile-audio.sh [OUT_DIR]  (default Fixtures/hostile)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-Fixtures/hostile}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import math, struct, sys
work = sys.argv[1]
base = [10 ** (-12 / 20) * math.sin(2 * math.pi * 440 * i / 44100) for i in range(4410)]
for name, value in [("1e17", 1e17), ("1e30", 1e30), ("nan", float("nan")), ("inf", float("inf"))]:
    samples = list(base)
    samples[1000] = value
    with open(f"{work}/float-{name}.f32", "wb") as f:
        f.write(struct.pack(f"<{len(samples)}f", *samples))
# 16-bit mono PCM for the rate lies: 2,000 samples of a sine.
with open(f"{work}/pcm.s16", "wb") as f:
    f.write(struct.pack("<2000h", *[int(8000 * math.sin(i * 0.1)) for i in range(2000)]))
PY

for value in 1e17 1e30 nan inf; do
    raw="$work/float-$value.f32"
    ffmpeg -v error -y -f f32le -ar 44100 -ac 1 -i "$raw" -c:a wavpack -sample_fmt fltp "$OUT/float-$value.wv"
    ffmpeg -v error -y -f f32le -ar 44100 -ac 1 -i "$raw" -c:a pcm_f32le "$OUT/float-$value.mka"
done

# Real files at 8 kHz, then their headers' rate fields rewritten.
ffmpeg -v error -y -f s16le -ar 8000 -ac 1 -i "$work/pcm.s16" -c:a pcm_s16le "$work/base.wav"
ffmpeg -v error -y -f s16le -ar 8000 -ac 1 -i "$work/pcm.s16" -c:a flac "$work/base.flac"
ffmpeg -v error -y -f s16le -ar 8000 -ac 1 -i "$work/pcm.s16" -c:a pcm_s16le "$work/base.mka"
python3 - "$work" "$OUT" <<'PY'
import struct, sys
work, out = sys.argv[1], sys.argv[2]

def patch_wav(rate):
    data = bytearray(open(f"{work}/base.wav", "rb").read())
    i = data.index(b"fmt ") + 8
    struct.pack_into("<I", data, i + 4, rate)            # sample rate
    struct.pack_into("<I", data, i + 8, rate * 2)        # byte rate
    open(f"{out}/rate-{rate}.wav", "wb").write(data)

def patch_flac(rate, name, empty=False):
    data = bytearray(open(f"{work}/base.flac", "rb").read())
    assert data[:4] == b"fLaC" and data[4] & 0x7F == 0      # STREAMINFO first
    si = 8                                                   # its body
    # bytes 10..17 of STREAMINFO: rate (20 bits), channels-1 (3), bits-1 (5), total samples (36)
    packed = int.from_bytes(data[si + 10:si + 18], "big")
    channels_bits = (packed >> 36) & 0xFF
    total = 0 if empty else packed & ((1 << 36) - 1)
    packed = (rate << 44) | (channels_bits << 36) | total
    data[si + 10:si + 18] = packed.to_bytes(8, "big")
    # The frames keep their own 8 kHz code: a decoder reports STREAMINFO's rate when it opens the file.
    open(f"{out}/{name}", "wb").write(data)

def patch_mka(rate):
    # Matroska's SamplingFrequency element (ID 0xB5), written by ffmpeg as a 4- or 8-byte float.
    data = bytearray(open(f"{work}/base.mka", "rb").read())
    for size, fmt in ((0x88, ">d"), (0x84, ">f")):
        i = data.find(bytes([0xB5, size]) + struct.pack(fmt, 8000.0))
        if i >= 0:
            struct.pack_into(fmt, data, i + 2, float(rate))
            break
    else:
        raise SystemExit("no SamplingFrequency element in the Matroska file")
    open(f"{out}/rate-{rate}.mka", "wb").write(data)

for rate in (0, 1, 2):
    patch_wav(rate)
    patch_flac(rate, f"rate-{rate}.flac")
    patch_mka(rate)
patch_flac(1, "rate-1-empty.flac", empty=True)
PY
ls -l "$OUT"
