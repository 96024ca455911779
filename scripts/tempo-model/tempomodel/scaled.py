"""Tempo-scaled renders of the MIDI dev set: training data whose tempo its timbre cannot predict.

  python3 -m tempomodel.scaled MIDI_DIR OUT_DIR [-j N]

For every song of MIDI_DIR/truth.json (the MIDI dev set, `build-midi.sh`), four copies at other tempi:
the range 60-200 BPM is cut into five log-equal bins and each copy's felt tempo is drawn log-uniformly
in one bin the song's own tempo is not in (four of the five; all five minus one, drawn, when the song
lies outside the range). The tempo map is scaled (every set_tempo divided by the factor, so the notes,
bars and tempo changes keep their places in the score), the first EXCERPT_S seconds of the scaled song
are rendered, and the truth (bpm, bpm_felt, beats, downbeats) is scaled with it. Each copy goes through
one of the four soundfonts in turn (FluidR3, TimGM6mb, MuseScore General Lite, the OPL-3 FM font), so
every font sees every tempo bin. The draws depend only on the song's MIDI bytes (md5): a rerun makes
the same set. Writes OUT_DIR/audio/<font>/<package>/<stem>@<bpm>.wav and OUT_DIR/truth.json in the
MIDI dev set's format (plus `factor` and `original`), so a copy's package is its song's: its fold.
"""
import argparse
import hashlib
import json
import math
import multiprocessing
import os
import random
import sys

import mido

from . import miditruth

FONTS = {
    'fluidr3': '/usr/share/sounds/sf2/FluidR3_GM.sf2',
    'timgm6mb': '/usr/share/sounds/sf2/TimGM6mb.sf2',
    'musescore': '/usr/share/sounds/sf3/MuseScore_General_Lite.sf3',
    'opl3': '/usr/share/sounds/sf2/OPL-3_FM_128M.sf2',
}
RANGE = (60.0, 200.0)
BINS = 5
EXCERPT_S = 75.0
VERSION = 1


def bin_edges():
    lo, hi = map(math.log, RANGE)
    return [math.exp(lo + (hi - lo) * k / BINS) for k in range(BINS + 1)]


def targets(bpm, seed):
    """The felt tempi of a song's copies: one per bin its own tempo is not in."""
    rng = random.Random(seed)
    edges = bin_edges()
    own = [k for k in range(BINS) if edges[k] <= bpm < edges[k + 1]]
    bins = [k for k in range(BINS) if k not in own]
    if not own:
        bins.remove(rng.choice(bins))
    return [round(math.exp(rng.uniform(math.log(edges[k]), math.log(edges[k + 1]))), 2) for k in bins]


def scaled_midi(src, dst, factor):
    """The song with every tempo divided by `factor`, cut after EXCERPT_S seconds (all notes off there)."""
    mid = mido.MidiFile(src)
    out = mido.MidiFile(type=mid.type if mid.type in (0, 1) else 1, ticks_per_beat=mid.ticks_per_beat)
    # seconds at each tick from the merged tempo map, scaled: where to cut
    tempo_changes = sorted((t, m.tempo) for t, m in merged_ticks(mid) if m.type == 'set_tempo')
    cut_tick = tick_at(tempo_changes, mid.ticks_per_beat, EXCERPT_S * factor)
    for track in mid.tracks:
        new = mido.MidiTrack()
        tick = last = 0
        for msg in track:
            tick += msg.time
            if tick > cut_tick:
                break
            if msg.type == 'set_tempo':
                msg = msg.copy(tempo=max(1, min(16777215, round(msg.tempo / factor))))
            if msg.type == 'end_of_track':
                continue
            new.append(msg.copy(time=tick - last))
            last = tick
        for ch in range(16):
            new.append(mido.Message('control_change', channel=ch, control=123, value=0, time=max(0, cut_tick - last) if ch == 0 else 0))
            last = max(last, cut_tick)
        new.append(mido.MetaMessage('end_of_track', time=0))
        out.tracks.append(new)
    out.save(dst)


def merged_ticks(mid):
    for track in mid.tracks:
        tick = 0
        for msg in track:
            tick += msg.time
            yield tick, msg


def tick_at(tempo_changes, tpb, seconds):
    """The tick at `seconds` of the unscaled song (120 BPM before the first set_tempo)."""
    t = 0.0
    tick = 0
    tempo = 500000
    for change_tick, change_tempo in tempo_changes:
        span = (change_tick - tick) * tempo / tpb / 1e6
        if t + span >= seconds:
            break
        t += span
        tick = change_tick
        tempo = change_tempo
    return tick + int((seconds - t) * 1e6 * tpb / tempo)


def scale_times(values, factor, end):
    return None if values is None else [round(v / factor, 4) for v in values if v / factor <= end]


def render(job):
    midi_src, font, wav, factor = job
    if os.path.exists(wav):
        return wav
    os.makedirs(os.path.dirname(wav), exist_ok=True)
    mid = wav[:-4] + '.mid'
    scaled_midi(midi_src, mid, factor)
    miditruth.render_one((mid, FONTS[font], wav, None))
    os.remove(mid)
    return wav


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('midi_dir')
    ap.add_argument('out_dir')
    ap.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--truth-only', action='store_true', help='render nothing: the truth of the copies rendered so far')
    a = ap.parse_args()
    for font, path in FONTS.items():
        if not os.path.exists(path):
            sys.exit(f'scaled: the soundfont {path} ({font}) is missing; install fluid-soundfont-gm, timgm6mb-soundfont, '
                     'musescore-general-soundfont-small and opl3-soundfont')
    truth = json.load(open(os.path.join(a.midi_dir, 'truth.json')))
    songs = [t for t in truth['tracks'] if t['format'] == 'wav' and t['soundfont'] == 'fluidr3']
    tracks, jobs = [], []
    fonts = sorted(FONTS)
    for i, t in enumerate(sorted(songs, key=lambda t: t['relative_path'])):
        package, stem = t['relative_path'].split('/')[1], os.path.splitext(os.path.basename(t['relative_path']))[0]
        midi_src = os.path.join(a.midi_dir, 'midi', package, stem + '.mid')
        seed = int(hashlib.md5(open(midi_src, 'rb').read()).hexdigest()[:12], 16)
        for k, target in enumerate(targets(t['bpm_felt'], seed)):
            factor = target / t['bpm_felt']
            font = fonts[(i + k) % len(fonts)]
            rel = f'{font}/{package}/{stem}@{target:.0f}.wav'
            wav = os.path.join(a.out_dir, 'audio', rel)
            jobs.append((midi_src, font, wav, factor))
            end = EXCERPT_S
            copy = dict(t, relative_path=rel, soundfont=font, original=t['relative_path'], factor=round(factor, 6),
                        bpm=round(t['bpm'] * factor, 4), bpm_felt=round(t['bpm_felt'] * factor, 4),
                        beats_s=scale_times(t['beats_s'], factor, end), downbeats_s=scale_times(t['downbeats_s'], factor, end),
                        beats_felt_s=scale_times(t.get('beats_felt_s'), factor, end),
                        beat_origin_s=round(t['beat_origin_s'] / factor, 4), duration_s=None,
                        music_start_s=round(t['music_start_s'] / factor, 4),
                        tempo_segments=[dict(s, start_s=round(s['start_s'] / factor, 4), end_s=round(s['end_s'] / factor, 4),
                                             bpm=round(s['bpm'] * factor, 4)) for s in t['tempo_segments']])
            tracks.append(copy)
    print(f'# {len(jobs)} copies of {len(songs)} songs ({a.jobs} jobs)', file=sys.stderr)
    if a.truth_only:
        jobs = []
    with multiprocessing.Pool(a.jobs) as pool:
        for n, _ in enumerate(pool.imap_unordered(render, jobs), 1):
            if n % 25 == 0:
                print(f'# {n}/{len(jobs)}', file=sys.stderr, flush=True)
    # a copy whose render is missing (an interrupted run) is left out of the truth
    tracks = [t for t in tracks if os.path.exists(os.path.join(a.out_dir, 'audio', t['relative_path']))]
    doc = dict(meta=dict(generator='tempomodel.scaled', version=VERSION, range_bpm=RANGE, bins=BINS, excerpt_s=EXCERPT_S,
                         fonts=FONTS, source=os.path.abspath(a.midi_dir)), tracks=tracks)
    with open(os.path.join(a.out_dir, 'truth.json.tmp'), 'w') as f:
        json.dump(doc, f, indent=1)
    os.replace(os.path.join(a.out_dir, 'truth.json.tmp'), os.path.join(a.out_dir, 'truth.json'))


if __name__ == '__main__':
    main()
