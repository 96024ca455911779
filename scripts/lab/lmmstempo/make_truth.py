#!/usr/bin/env python3
"""make_truth.py -- the LMMS tempo dev set: the demo songs of Debian's lmms-common, rendered by lmms.

Subcommands (build.sh runs them in this order; render skips the songs already rendered):
  scan   OUTDIR   read every project (*.mmp, *.mmpz) under OUTDIR/pkgs/lmms-common/usr/share/lmms/projects/
                  (demos and shorties; the tutorials are not songs): its XML (`lmms dump` for .mmpz), the
                  tempo and time signature of its <head>, whether the tempo is automated, and the song's
                  length from its tracks; apply the skip rules and write OUTDIR/index.json
  render OUTDIR   `lmms render` every kept project to OUTDIR/audio/<stem>.wav (44.1 kHz, 16 bit, stereo),
                  one project at a time (lmms uses several threads); a render that crashes after writing
                  the whole song (lmms 1.2.2 segfaults on exit for some projects) is kept when its length
                  is at least the song's length
  truth  OUTDIR   write OUTDIR/truth.json (rows as the MIDI set's, so scripts/lab/miditempo/score.py scores
                  profiles against it: relative_path, package, bpm, bpm_felt = bpm, steady, format,
                  soundfont "lmms", duration_s, beats_s)

Truth rules (docs/tempo-dev-set.md):
  * bpm: the project's tempo (<head bpm>), in quarter notes per minute; LMMS has one tempo per project
    unless the tempo is automated, and no project here automates it (a project that does is skipped).
  * meter: timesig_numerator/timesig_denominator as stated (4/4 for all but one 8/4 and one 1/1 project;
    every one has the quarter note as its beat, so bpm is the felt beat as the MIDI set defines it).
  * beats_s: the quarter-note grid k * 60 / bpm from t = 0 (lmms renders from tick 0 at one tempo),
    from half a beat before the first audible sample (the first 10 ms window within 50 dB of the
    file's loudest window) to the end of the song's last pattern. Beat k is where the grid is, not
    where a note sounds: swing and note offsets in the projects stay the music's.
  * skipped: a song shorter than 20 s (the MIDI set's rule), a project whose tempo is automated, a
    render that fails or is shorter than the song.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np

TICKS_PER_QUARTER = 48          # LMMS: 192 ticks per 4/4 bar
MIN_SONG_S = 20.0
PACKAGE = 'lmms-common'


def lmms(*args):
    cmd = ['lmms'] + (['--allowroot'] if os.geteuid() == 0 else []) + list(args)
    return subprocess.run(cmd, env=dict(os.environ, QT_QPA_PLATFORM='offscreen'),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def write_json(path, obj):
    with open(path + '.tmp', 'w') as fh:
        json.dump(obj, fh, indent=1)
    os.replace(path + '.tmp', path)


def project_xml(path):
    if path.endswith('.mmpz'):
        r = lmms('dump', path)
        if r.returncode != 0:
            raise RuntimeError(f'lmms dump failed on {path}')
        return ET.fromstring(r.stdout)
    return ET.parse(path).getroot()


def song_length_s(root, bpm):
    """End of the last unmuted pattern of the song editor, in seconds."""
    end = 0
    song = root.find('.//song/trackcontainer')
    for tr in song.findall('track'):
        if tr.get('muted') == '1': continue
        for p in tr:
            if p.tag in ('pattern', 'sampletco', 'bbtco') and p.get('muted') != '1':
                end = max(end, int(p.get('pos')) + int(p.get('len') or 0))
    return end / TICKS_PER_QUARTER * 60.0 / bpm


def scan(out):
    base = os.path.join(out, 'pkgs', PACKAGE, 'usr', 'share', 'lmms', 'projects')
    rows = []
    for path in sorted(glob.glob(os.path.join(base, '**', '*.mmp*'), recursive=True)):
        rel = os.path.relpath(path, base)
        if rel.split(os.sep)[0] not in ('demos', 'shorties'): continue
        stem = os.path.splitext(os.path.basename(path))[0]
        root = project_xml(path)
        head = root.find('.//head')
        bpm = float(head.get('bpm') or head.find('bpm').get('value'))
        automated = head.find('bpm') is not None          # an automatable tempo is a child with an id
        length = song_length_s(root, bpm)
        row = dict(name=stem, project=rel, package=PACKAGE, bpm=bpm,
                   meter=f"{head.get('timesig_numerator')}/{head.get('timesig_denominator')}",
                   song_s=round(length, 3), relative_path=stem + '.wav', format='wav')
        if automated: row['skipped'] = 'tempo automated'
        elif length < MIN_SONG_S: row['skipped'] = f'song shorter than {MIN_SONG_S:.0f} s'
        rows.append(row)
    write_json(os.path.join(out, 'index.json'), dict(package=PACKAGE, tracks=rows))
    kept = sum('skipped' not in r for r in rows)
    print(f'{len(rows)} projects, {kept} kept', file=sys.stderr)


def wav_seconds(path):
    import soundfile
    i = soundfile.info(path)
    return i.frames / i.samplerate


def render(out):
    idx = json.load(open(os.path.join(out, 'index.json')))
    base = os.path.join(out, 'pkgs', PACKAGE, 'usr', 'share', 'lmms', 'projects')
    os.makedirs(os.path.join(out, 'audio'), exist_ok=True)
    for r in idx['tracks']:
        if 'skipped' in r: continue
        dst = os.path.join(out, 'audio', r['relative_path'])
        if os.path.exists(dst): continue
        tmp = dst + '.tmp.wav'
        p = lmms('render', os.path.join(base, r['project']), '-f', 'wav', '-o', tmp)
        ok = os.path.exists(tmp) and wav_seconds(tmp) >= r['song_s']
        if ok:
            os.replace(tmp, dst)
        elif os.path.exists(tmp):
            os.remove(tmp)
        print(f"render {r['name']}: rc {p.returncode}, {'kept' if ok else 'FAILED'}", file=sys.stderr)


def audible_start_s(path):
    import soundfile
    x, sr = soundfile.read(path, dtype='float32', always_2d=True)
    w = int(sr * 0.01)
    n = len(x) // w
    if n == 0: return 0.0
    rms = np.sqrt((x[:n * w].reshape(n, w, -1) ** 2).mean(axis=(1, 2)))
    on = np.flatnonzero(rms >= rms.max() * 10 ** (-50 / 20))
    return on[0] * w / sr


def beat_grid(bpm, start_s, end_s):
    period = 60.0 / bpm
    k0 = max(0, int(np.ceil((start_s - period / 2) / period)))
    return [round(k * period, 6) for k in range(k0, int(end_s / period) + 1)]


def truth(out):
    idx = json.load(open(os.path.join(out, 'index.json')))
    tracks, skipped = [], []
    for r in idx['tracks']:
        wav = os.path.join(out, 'audio', r['relative_path'])
        if 'skipped' not in r and not os.path.exists(wav):
            r = dict(r, skipped='render failed or short')
        if 'skipped' in r:
            skipped.append(r); continue
        # steady, bpm_felt and soundfont make the rows readable by scripts/lab/miditempo/score.py
        tracks.append(dict(r, duration_s=round(wav_seconds(wav), 3), steady=True, bpm_felt=r['bpm'], soundfont='lmms',
                           beats_s=beat_grid(r['bpm'], audible_start_s(wav), r['song_s'])))
    write_json(os.path.join(out, 'truth.json'), dict(version=1, package=PACKAGE, tracks=tracks, skipped=skipped))
    print(f'{len(tracks)} songs, {len(skipped)} skipped', file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('cmd', choices=('scan', 'render', 'truth'))
    ap.add_argument('out')
    a = ap.parse_args()
    dict(scan=scan, render=render, truth=truth)[a.cmd](os.path.abspath(a.out))


if __name__ == '__main__':
    main()
