#!/usr/bin/env bash
# Writes the hostile audio fixtures of Fixtures/hostile (committed, so tests need no ffmpeg). Each one
# once crashed or stalled the analyser:
#   float-VALUE.{wv,mka,caf}  40 ms (1,764 frames) of a -12 dBFS 440 Hz sine, 44.1 kHz stereo, 32-bit
#                             float (WavPack float, Matroska pcm_f32le, CAF pcm_f32le), with frame 1000
#                             of the left channel (interleaved sample 2000) set to 1e17, 1e30, NaN or
#                             +Inf. 40 ms, not longer, keeps the uncompressed ones under 16 kB.
#   rate-N.{wav,flac,mka,caf} 2,000 samples of 16-bit mono sine whose header states 0, 1 or 2 Hz; the
#                             FLAC frames say "rate from STREAMINFO" (code 0000) so decoders see the lie
#   rate-1-empty.flac         STREAMINFO states 1 Hz and 0 (unknown) total samples
# All output is bit-for-bit reproducible (ffmpeg -bitexact, no metadata).
#
#   scripts/ci/fuzz/make-hostile-audio.sh [--verify] [OUT_DIR]     (OUT_DIR defaults to Fixtures/hostile)
#
# --verify then prints ffprobe's rate/channels/format for every file, checks each is under 16 kB, and
# decodes each float file back to f32le with ffmpeg to check the hostile value sits at sample 2000 and
# every other sample is an ordinary one. Needs ffmpeg (with ffprobe) and python3.
set -euo pipefail

verify=0
if [[ ${1:-} == --verify ]]; then verify=1; shift; fi
OUT=${1:-"$(cd "$(dirname "$0")/../../.." && pwd)/Fixtures/hostile"}
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# ffmpeg with no version strings, dates or random UIDs in the output: the same bytes on every run.
ff() { ffmpeg -nostdin -v error -y "$@"; }
exact=(-fflags +bitexact -flags:a +bitexact -map_metadata -1)

# --- Raw samples ------------------------------------------------------------------------------------
python3 - "$work" <<'PY'
import math, struct, sys
work = sys.argv[1]
amp = 10 ** (-12 / 20)
base = []
for n in range(1764):
    x = amp * math.sin(2 * math.pi * 440 * n / 44100)
    base += [x, x]                                       # left, right
for name, value in [("1e17", 1e17), ("1e30", 1e30), ("nan", float("nan")), ("inf", float("inf"))]:
    samples = list(base)
    samples[2 * 1000] = value                            # frame 1000, left channel
    with open(f"{work}/float-{name}.f32", "wb") as f:
        f.write(struct.pack(f"<{len(samples)}f", *samples))
# 16-bit mono for the rate lies: 2,000 samples of a 440 Hz sine as if at 8 kHz.
with open(f"{work}/pcm.s16", "wb") as f:
    f.write(struct.pack("<2000h", *[round(8000 * math.sin(2 * math.pi * 440 * n / 8000)) for n in range(2000)]))
PY

# --- Float samples --------------------------------------------------------------------------------
# ffmpeg's WavPack encoder keeps 32-bit float losslessly, NaN and Inf included (wvunpack and ffmpeg both
# decode every file here back to the exact input bytes).
for value in 1e17 1e30 nan inf; do
    raw=(-f f32le -ar 44100 -ac 2 -i "$work/float-$value.f32")
    ff "${raw[@]}" -c:a wavpack -sample_fmt fltp "${exact[@]}" "$OUT/float-$value.wv"
    ff "${raw[@]}" -c:a pcm_f32le "${exact[@]}" "$OUT/float-$value.mka"
    ff "${raw[@]}" -c:a pcm_f32le "${exact[@]}" "$OUT/float-$value.caf"
done

# --- Rate lies: real 8 kHz files, then their headers' rate fields rewritten ------------------------
pcm=(-f s16le -ar 8000 -ac 1 -i "$work/pcm.s16")
ff "${pcm[@]}" -c:a flac -metadata_header_padding 0 "${exact[@]}" "$work/base.flac"
ff "${pcm[@]}" -c:a pcm_s16le "${exact[@]}" "$work/base.mka"
ff "${pcm[@]}" -c:a pcm_s16le "${exact[@]}" "$work/base.caf"
python3 - "$work" "$OUT" <<'PY'
import struct, sys
work, out = sys.argv[1], sys.argv[2]
pcm = open(f"{work}/pcm.s16", "rb").read()

def wav(rate):
    # Written field by field: RIFF, a 16-byte fmt chunk (PCM, 1 channel, 16 bits) and the data.
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(pcm)) + pcm
    open(f"{out}/rate-{rate}.wav", "wb").write(b"RIFF" + struct.pack("<I", len(body)) + body)

def crc8(data):
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = ((crc << 1) ^ 0x07) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc

def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x8005) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc

def flac_header_bytes(data, p):
    """Bytes of the frame header at p before its CRC-8, or None if no frame header can start there."""
    if p + 6 > len(data) or data[p] != 0xFF or data[p + 1] & 0xFE != 0xF8:
        return None
    size_code, rate_code = data[p + 2] >> 4, data[p + 2] & 0x0F
    ones = 8 - (~data[p + 4] & 0xFF).bit_length()         # UTF-8-coded frame number: its length
    if size_code == 0 or rate_code == 0x0F or ones == 1 or ones > 7:
        return None
    return 4 + max(ones, 1) + {6: 1, 7: 2}.get(size_code, 0) + {12: 1, 13: 2, 14: 2}.get(rate_code, 0)

def is_flac_frame_header(data, p):
    n = flac_header_bytes(data, p)
    return n is not None and p + n < len(data) and crc8(data[p:p + n]) == data[p + n]

def flac(rate, name, empty=False):
    data = bytearray(open(f"{work}/base.flac", "rb").read())
    assert data[:4] == b"fLaC" and data[4] & 0x7F == 0, "STREAMINFO must come first"
    si = 8                                                   # STREAMINFO's body
    # Its bytes 10..17: rate (20 bits), channels-1 (3), bits-1 (5), total samples (36).
    packed = int.from_bytes(data[si + 10:si + 18], "big")
    total = 0 if empty else packed & ((1 << 36) - 1)
    packed = (rate << 44) | (((packed >> 36) & 0xFF) << 36) | total
    data[si + 10:si + 18] = packed.to_bytes(8, "big")
    # Skip the metadata blocks to the first frame.
    p = 4
    while True:
        last, length = data[p] & 0x80, int.from_bytes(data[p + 1:p + 4], "big")
        p += 4 + length
        if last:
            break
    starts = [q for q in range(p, len(data) - 1) if is_flac_frame_header(data, q)]
    assert starts and starts[0] == p, "no FLAC frame where the metadata ends"
    # Frames end where the next begins; keep only those whose CRC-16 holds (no false sync codes).
    frames, q = [], p
    for s in starts[1:] + [len(data)]:
        if crc16(data[q:s - 2]) == int.from_bytes(data[s - 2:s], "big"):
            frames.append((q, s))
            q = s
    assert q == len(data), "could not split the FLAC stream into frames"
    # Every frame header's rate code becomes 0000, "see STREAMINFO", so the decoder gets the lie.
    for start, end in frames:
        assert data[start + 2] & 0x0F == 0x4, "expected the 8 kHz rate code"   # 8 kHz: no extra bytes
        data[start + 2] &= 0xF0
        h = flac_header_bytes(data, start)
        data[start + h] = crc8(data[start:start + h])
        data[end - 2:end] = crc16(data[start:end - 2]).to_bytes(2, "big")
    open(f"{out}/{name}", "wb").write(data)

def mka(rate):
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

def caf(rate):
    # 'caff' file header (8 bytes), then the 'desc' chunk: type, 64-bit size, mSampleRate (float64 BE).
    data = bytearray(open(f"{work}/base.caf", "rb").read())
    assert data[8:12] == b"desc" and struct.unpack_from(">d", data, 20)[0] == 8000.0
    struct.pack_into(">d", data, 20, float(rate))
    open(f"{out}/rate-{rate}.caf", "wb").write(data)

for rate in (0, 1, 2):
    wav(rate)
    flac(rate, f"rate-{rate}.flac")
    mka(rate)
    caf(rate)
flac(1, "rate-1-empty.flac", empty=True)
PY

[[ $verify == 1 ]] || { ls -l "$OUT"; exit 0; }

# --- Verification -----------------------------------------------------------------------------------
status=0
printf '%-20s %6s  %s\n' file bytes "ffprobe (codec, sample_fmt, sample_rate, channels) / check"
for f in "$OUT"/float-* "$OUT"/rate-*; do
    name=$(basename "$f")
    size=$(wc -c < "$f")
    probe=$(ffprobe -v error -select_streams a:0 -show_entries stream=codec_name,sample_fmt,sample_rate,channels \
        -of csv=p=0 "$f" 2>&1 | sed 's/ @ 0x[0-9a-f]*//' | awk '!seen[$0]++' | paste -sd ' ') || true
    printf '%-20s %6d  %s\n' "$name" "$size" "${probe:-(no audio stream)}"
    if (( size >= 16384 )); then echo "  FAIL: 16 kB or more"; status=1; fi
    case $name in float-*)
        value=${name#float-}; value=${value%.*}
        ff -i "$f" -f f32le -c:a pcm_f32le "$work/decoded.f32"
        python3 - "$work/decoded.f32" "$value" <<'PY' || status=1
import math, struct, sys
raw, name = open(sys.argv[1], "rb").read(), sys.argv[2]
s = struct.unpack(f"<{len(raw) // 4}f", raw)
want = {"1e17": struct.unpack("<f", struct.pack("<f", 1e17))[0],
        "1e30": struct.unpack("<f", struct.pack("<f", 1e30))[0], "inf": math.inf}.get(name)
got = s[2000] if len(s) > 2000 else None
ok = got is not None and (math.isnan(got) if name == "nan" else got == want)
others = all(math.isfinite(x) and abs(x) < 1 for i, x in enumerate(s) if i != 2000)
print(f"  decoded {len(s)} samples, sample 2000 = {got}: {'ok' if ok and others else 'FAIL'}"
      + ("" if others else " (other samples are not ordinary)"))
sys.exit(0 if ok and others else 1)
PY
    esac
done
exit $status
