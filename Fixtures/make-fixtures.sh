#!/usr/bin/env bash
# Regenerates the committed fixtures (needs sox and lame from Debian). The tests generate everything
# else themselves; these are the files the project cannot make through libsndfile: LAME MP3s with
# their gapless header, damaged files, and the small demo library.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
R=44100

# mp3/sine_440_660_2s.mp3 — 2.000 s = 88,200 frames at 44.1 kHz, 440 Hz left / 660 Hz right at -12 dBFS,
# LAME -V 4 (Info + LAME tag: encoder delay and padding, so gapless decoding gives exactly 88,200 frames).
sox -n -r $R -c 2 -b 16 "$tmp/src.wav" synth 2.0 sine 440 sine 660 vol 0.25
lame --quiet -V 4 "$tmp/src.wav" mp3/sine_440_660_2s.mp3

# broken/truncated.mp3 — the first 40 % of a 6 s LAME MP3 whose header announces all 6 s.
sox -n -r $R -c 2 -b 16 "$tmp/long.wav" synth 6.0 sine 440 sine 660 vol 0.25
lame --quiet -V 4 "$tmp/long.wav" "$tmp/long.mp3"
sz=$(stat -c %s "$tmp/long.mp3"); head -c $((sz * 40 / 100)) "$tmp/long.mp3" > broken/truncated.mp3
# broken/empty.mp3 — zero bytes.  broken/random_bytes.flac — 8 KiB of seeded random bytes.
: > broken/empty.mp3
python3 -c "import random,sys; r=random.Random(42); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(8192)))" > broken/random_bytes.flac

# demo/ — a tiny library for `make demo`.
sox -n -r $R -c 1 "$tmp/kick.wav" synth 0.5 sine 120:45 fade q 0 0.5 0.42 vol 0.9
sox -n -r $R -c 1 "$tmp/hat.wav" synth 0.25 whitenoise highpass 6000 fade q 0 0.25 0.22 vol 0.15
sox -n -r $R -c 1 "$tmp/snare.wav" synth 0.5 whitenoise lowpass 4000 fade q 0 0.5 0.45 vol 0.35
sox "$tmp/kick.wav" "$tmp/snare.wav" "$tmp/kick.wav" "$tmp/snare.wav" "$tmp/drums_bar.wav"
sox "$tmp"/hat.wav "$tmp"/hat.wav "$tmp"/hat.wav "$tmp"/hat.wav "$tmp"/hat.wav "$tmp"/hat.wav "$tmp"/hat.wav "$tmp"/hat.wav "$tmp/hats_bar.wav"
sox -m "$tmp/drums_bar.wav" "$tmp/hats_bar.wav" "$tmp/bar.wav"
sox "$tmp/bar.wav" "$tmp/drums.wav" repeat 7
sox -n -r $R -c 1 "$tmp/chords.wav" synth 4 sine 220 sine 277.18 sine 329.63 : synth 4 sine 196 sine 246.94 sine 293.66 \
    : synth 4 sine 174.61 sine 220 sine 261.63 : synth 4 sine 196 sine 246.94 sine 293.66 vol 0.15
# 120 BPM groove, 0.75 s silent lead-in, 1.5 s fade-out, 1.25 s silent tail (18.00 s in all).
sox -m "$tmp/drums.wav" "$tmp/chords.wav" -c 2 "$tmp/groove.wav" fade 0 16 1.5 pad 0.75 1.25
lame --quiet -V 6 "$tmp/groove.wav" demo/groove_120bpm.mp3
# Beatless pad, 48 kHz stereo Ogg Vorbis, 12 s.
sox -n -r 48000 -c 2 "$tmp/pad.wav" synth 12 sine 110 sine 164.8 sine 220.5 tremolo 0.2 40 fade 2 12 3 vol 0.3
sox "$tmp/pad.wav" -C 2 demo/ambient_pad.ogg
# Mono 22.05 kHz FLAC: 1 s silence, a 6 s sweep 60 Hz → 8 kHz, 1.5 s silence (8.5 s).
sox -n -r 22050 -c 1 -b 16 "$tmp/sweep.wav" synth 6 sine 60/8000 vol 0.5 pad 1 1.5
sox "$tmp/sweep.wav" demo/sweep_mono.flac
