#!/usr/bin/env python3
"""librosa_baseline.py TRUTH.json OUT_DIR [-j N] -- librosa's default tempo and beats on the MIDI dev set.

For every file in TRUTH.json (WAV and MP3 under the truth's directory/audio/) writes
OUT_DIR/<relative_path>.json = {"relative_path", "bpm", "beats", "beat_track_bpm"} where
  bpm             librosa.feature.tempo, default settings (22.05 kHz mono, as ../shared/modtempo/
                  check_tempo.py loads it)
  beats           librosa.beat.beat_track default settings, in seconds
Then score it like a naviscan scan:  score.py TRUTH.json OUT_DIR
Existing outputs are kept (delete OUT_DIR to redo). Needs: pip install librosa."""
import argparse
import json
from concurrent.futures import ProcessPoolExecutor
import os
import sys


def one(job):
    src, dst, rel = job
    if os.path.exists(dst):
        return 0
    import numpy as np
    import librosa
    y, sr = librosa.load(src, sr=22050, mono=True)
    env = librosa.onset.onset_strength(y=y, sr=sr)
    bpm = float(np.atleast_1d(librosa.feature.tempo(onset_envelope=env, sr=sr))[0])
    bt_bpm, beats = librosa.beat.beat_track(onset_envelope=env, sr=sr, units='time')
    rec = {'relative_path': rel, 'bpm': round(bpm, 3), 'beat_track_bpm': round(float(np.atleast_1d(bt_bpm)[0]), 3),
           'beats': [round(float(b), 4) for b in beats], 'librosa': librosa.__version__}
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(dst + '.tmp', 'w') as fh:
        json.dump(rec, fh)
    os.replace(dst + '.tmp', dst)
    return 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('truth')
    ap.add_argument('out')
    ap.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--format', choices=('wav', 'mp3', 'all'), default='all')
    a = ap.parse_args()
    root = os.path.join(os.path.dirname(os.path.abspath(a.truth)), 'audio')
    tracks = json.load(open(a.truth))['tracks']
    jobs = [(os.path.join(root, t['relative_path']), os.path.join(a.out, t['relative_path'] + '.json'),
             t['relative_path']) for t in tracks if a.format == 'all' or t['format'] == a.format]
    # a crashed worker (e.g. a numba cache left half-written by a killed run: delete librosa's
    # __pycache__/*.nbi, *.nbc) raises BrokenProcessPool here instead of hanging
    with ProcessPoolExecutor(a.jobs) as pool:
        done = sum(pool.map(one, jobs))
    print(f'librosa: {done} new, {len(jobs)} files', file=sys.stderr)


if __name__ == '__main__':
    main()
