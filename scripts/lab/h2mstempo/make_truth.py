#!/usr/bin/env python3
"""make_truth.py -- the Hydrogen + MuseScore tempo set (out-of-sample only): the demo songs of Debian 12's
hydrogen-data (rendered by h2cli with the package's own drum kits) and the demo scores of musescore3-common
(rendered by mscore3 with its default MuseScore_General.sf3 font). Nothing may be tuned on this set.

Subcommands (build.sh runs them in this order; render skips the songs already rendered):
  scan   OUTDIR   read every song of OUTDIR/pkgs/hydrogen-data/usr/share/hydrogen/data/demo_songs/*.h2song
                  (tempo, pattern sequence, note positions) and every score of
                  OUTDIR/pkgs/musescore3-common/usr/share/mscore3-3.2/demos/*.mscx|*.mscz (exported with
                  `mscore3 -o OUTDIR/midi/<stem>.mid`: repeats, jumps, fermatas and tempo texts applied as
                  MuseScore plays them; the tempo map and bars are read from that MIDI file with mido);
                  apply the skip rules and write OUTDIR/index.json
  render OUTDIR   h2cli / mscore3 every kept song to OUTDIR/wav/<stem>.wav (44.1 kHz, 16 bit, stereo), one
                  at a time; a render counts only when it is at least as long as the song (Hydrogen: or 1 s
                  past its last note onset; h2cli stops when the last sample has died out). h2cli renders
                  in about real time (4 minutes for tutorial_georgyporgy)
  check  OUTDIR   verify the truth against the audio: per 10 s window, the lag (-120..+120 ms) at which the
                  render's onset envelope best matches the truth's note onsets, and for the scores the lag
                  between the mscore3 render and fluidsynth's render of the exported MIDI (same font; in
                  OUTDIR/check/); writes OUTDIR/check.json
  truth  OUTDIR   write OUTDIR/truth.json (rows as the LMMS set's, so scripts/lab/miditempo/score.py scores
                  profiles against it)

Truth rules (docs/tempo-dev-set.md, the MIDI set's and the LMMS set's rules):
  * bpm: quarter notes per minute. Hydrogen: the song's <bpm> (one tempo; every song here has an empty
    <BPMTimeLine>, so none changes tempo). MuseScore: the set_tempo value of the exported MIDI that lasts
    longest between the first note-on and the last note-off (the MIDI set's main tempo).
  * steady: >= 90 % of that span within +-4 % of bpm (the MIDI set's rule); `max_dev` gives the largest
    deviation of any tempo from bpm, and `changes_over_4pct` whether any tempo is more than 4 % off.
  * meter: the signature heard longest (Hydrogen: pattern size / (192 / denominator) over denominator;
    all patterns here are 192 ticks = one 4/4 bar). MuseScore writes an irregular (pickup) bar as its
    own time signature, e.g. 3/8 before a 4/4 piece.
  * beat: the quarter note (MIDI set: 1/4 unless 6/8, 9/8, 12/8, then bpm_felt = 2/3 bpm; none here).
    2/2 (Brassed_Up) keeps the quarter as the beat: bpm 178, the half note is 89.
  * beats_s: the quarter-note grid through the tempo map, restarted at every bar line; a first bar shorter
    than the next signature's bar (a pickup) has its beats counted back from its end. Listed from half a
    beat before the first note onset to the last note-off (MuseScore; MIDI rule) or to the last note
    onset (Hydrogen plays each drum sample to its end; a hit's note-off is taken as its onset). Beat k is
    where the grid is, not where a note sounds: Hydrogen's swing and humanize stay the music's.
  * t = 0 of the audio is tick 0 (h2cli and mscore3 render from tick 0; `check` measures it).
  * skipped: a song shorter than 20 s (Hydrogen: the pattern sequence; MuseScore: first note-on to last
    note-off), a render that fails or is shorter than the song.
"""
import argparse
import collections
import glob
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from fractions import Fraction

import numpy as np

H2_TICKS_PER_QUARTER = 48       # Hydrogen: 192 ticks per 4/4 bar
MIN_SONG_S = 20.0
STEADY_TOL, STEADY_SHARE = 0.04, 0.90
H2 = 'hydrogen-data'
MS = 'musescore3-common'
H2_DIR = ('usr', 'share', 'hydrogen', 'data', 'demo_songs')
MS_DIR = ('usr', 'share', 'mscore3-3.2', 'demos')
SF3 = '/usr/share/sounds/sf3/MuseScore_General.sf3'   # musescore-general-soundfont-small, mscore3's default
ENV = dict(os.environ, QT_QPA_PLATFORM='offscreen', LC_ALL='C')


def write_json(path, obj):
    with open(path + '.tmp', 'w') as fh:
        json.dump(obj, fh, indent=1)
    os.replace(path + '.tmp', path)


def run(cmd, timeout=1200):
    return subprocess.run(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)


# the MIDI set's tempo map (miditempo/make_truth.py; loaded by path, both scripts are make_truth.py)
_spec = importlib.util.spec_from_file_location(
    'miditempo_make_truth', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'miditempo', 'make_truth.py'))
_miditempo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_miditempo)
TempoMap = _miditempo.TempoMap


def beat_truth(tpb, tempos, sigs, on_ticks, last_tick, end_tick_song=None):
    """The MIDI set's analysis (main tempo, steadiness, meter, beats), for a tick timeline."""
    tm = TempoMap(tpb, tempos)
    first_tick = min(on_ticks)
    t_first, t_last = tm.seconds(first_tick), tm.seconds(last_tick)
    changes = [(0, 4, 4)]
    for tick, num, den in sorted(sigs, key=lambda s: s[0]):
        if tick == changes[-1][0]:
            changes[-1] = (tick, num, den)
        elif (num, den) != changes[-1][1:]:
            changes.append((tick, num, den))
    ch2 = [changes[0]]
    for c in changes[1:]:
        if c[1:] != ch2[-1][1:]:
            ch2.append(c)
    changes = ch2
    beats, downbeats, sig_time, sig_spans = [], [], collections.Counter(), []
    for i, (tick, num, den) in enumerate(changes):
        end = changes[i + 1][0] if i + 1 < len(changes) else last_tick + 1
        if tick > last_tick: break
        bar_len = Fraction(num * 4 * tpb, den)
        sig_spans.append({'start_s': round(tm.seconds(tick), 6), 'time_signature': f'{num}/{den}'})
        pickup = (i == 0 and len(changes) > 1 and end - tick == bar_len
                  and bar_len < Fraction(changes[1][1] * 4 * tpb, changes[1][2]))
        bar = Fraction(tick)
        while bar < end:
            downbeats.append(bar)
            bar_end = min(bar + bar_len, Fraction(end))
            if pickup:   # an anacrusis: its beats lie a whole number of beats before the first full bar
                b = bar_end - tpb
                while b >= bar:
                    beats.append(b); b -= tpb
            else:
                b = bar
                while b < bar_end:
                    beats.append(b); b += tpb
            s0, s1 = max(tm.seconds(float(bar)), t_first), min(tm.seconds(float(bar_end)), t_last)
            if s1 > s0:
                sig_time[f'{num}/{den}'] += s1 - s0
            bar = bar_end
    beats.sort()
    meter = sig_time.most_common(1)[0][0] if sig_time else '4/4'
    segs = tm.segments(t_first, t_last)
    main_bpm, within = _miditempo.main_tempo(segs)
    span = t_last - t_first
    max_dev = max(abs(bpm - main_bpm) / main_bpm for _, _, bpm in segs)
    num, den = map(int, meter.split('/'))
    compound = den == 8 and num in (6, 9, 12)
    lead = 0.5 * 60.0 / main_bpm
    beats_s = [t for t in (tm.seconds(float(b)) for b in beats) if t_first - lead - 1e-9 <= t <= t_last + 1e-9]
    down_s = [t for t in (tm.seconds(float(b)) for b in downbeats) if t_first - lead - 1e-9 <= t <= t_last + 1e-9]
    return dict(bpm=round(main_bpm, 4), meter=meter, beat_unit='3/8' if compound else '1/4',
                bpm_felt=round(main_bpm * 2 / 3 if compound else main_bpm, 4),
                time_signatures=sig_spans,
                tempo_segments=[{'start_s': round(s, 6), 'end_s': round(e, 6), 'bpm': round(b, 4)} for s, e, b in segs],
                steady_share=round(within / span, 4) if span > 0 else 1.0,
                steady=bool(within >= STEADY_SHARE * span), max_dev=round(max_dev, 4),
                changes_over_4pct=bool(max_dev > STEADY_TOL),
                music_start_s=round(t_first, 6), music_end_s=round(t_last, 6),
                song_s=round(tm.seconds(end_tick_song) if end_tick_song is not None else t_last, 3),
                beats_s=[round(t, 6) for t in beats_s], downbeats_s=[round(t, 6) for t in down_s],
                onsets_s=sorted(round(tm.seconds(t), 6) for t in on_ticks))


def scan_h2(path):
    root = ET.parse(path).getroot()
    bpm = float(root.findtext('bpm'))
    tl = root.find('BPMTimeLine')
    if tl is not None and len(tl):
        raise RuntimeError(f'{path}: a BPM timeline is not implemented')
    if root.find('virtualPatternList') is not None and len(root.find('virtualPatternList')):
        raise RuntimeError(f'{path}: virtual patterns are not implemented')
    pats = {}
    for p in root.find('patternList'):
        notes = p.find('noteList')
        pats[p.findtext('name')] = dict(
            size=int(p.findtext('size')), den=int(p.findtext('denominator') or 4),
            notes=[(int(n.findtext('position')), float(n.findtext('leadlag') or 0), float(n.findtext('probability') or 1))
                   for n in (notes if notes is not None else [])])
    tick, ons, sigs, odd = 0, [], [], 0
    for g in root.find('patternSequence').findall('group'):
        col = [pats[pid.text] for pid in g.findall('patternID')]
        size = max((p['size'] for p in col), default=192)
        den = col[0]['den'] if col else 4
        num = Fraction(size * den, 4 * H2_TICKS_PER_QUARTER)
        sigs.append((tick, int(num) if num.denominator == 1 else float(num), den))
        for p in col:
            for pos, ll, prob in p['notes']:
                if pos < size:
                    ons.append(tick + pos)
                    odd += (ll != 0) + (prob != 1)
        tick += size
    tpq = H2_TICKS_PER_QUARTER
    tr = beat_truth(tpq, [(0, round(60e6 / bpm))], sigs, ons, max(ons), end_tick_song=tick)
    tr['bpm'] = bpm
    tr['bpm_felt'] = bpm if tr['beat_unit'] == '1/4' else bpm * 2 / 3
    tr['notes_leadlag_or_probability'] = odd
    tr['humanize_time'] = float(root.findtext('humanize_time') or 0)
    tr['swing_factor'] = float(root.findtext('swing_factor') or 0)
    kits = sorted({i.findtext('drumkit') for i in root.find('instrumentList')})
    tr['soundfont'] = 'hydrogen:' + '+'.join(k for k in kits if k)
    return tr


def scan_ms(path, mid):
    import mido
    if not os.path.exists(mid):
        r = run(['mscore3', '-o', mid + '.tmp.mid', path])
        if r.returncode != 0 or not os.path.exists(mid + '.tmp.mid'):
            raise RuntimeError(f'mscore3 MIDI export failed on {path}: {r.stderr[-500:]}')
        os.replace(mid + '.tmp.mid', mid)
    m = mido.MidiFile(mid)
    tempos, sigs, ons, offs = [], [], [], []
    for trk in m.tracks:
        t = 0
        for msg in trk:
            t += msg.time
            if msg.type == 'set_tempo': tempos.append((t, msg.tempo))
            elif msg.type == 'time_signature': sigs.append((t, msg.numerator, msg.denominator))
            elif msg.type == 'note_on' and msg.velocity > 0: ons.append(t)
            elif msg.type in ('note_off', 'note_on'): offs.append(t)
    tr = beat_truth(m.ticks_per_beat, tempos, sigs, ons, max(ons + offs))
    tr['soundfont'] = 'mscore3:MuseScore_General.sf3'
    # the tempo text as the score states it (quarter notes per second in MuseScore's <tempo>)
    xml = (zipfile.ZipFile(path).read(next(n for n in zipfile.ZipFile(path).namelist() if n.endswith('.mscx')))
           if path.endswith('.mscz') else open(path, 'rb').read())
    root = ET.fromstring(xml)
    tr['score_tempi_bpm'] = sorted({round(float(e.text) * 60, 3) for e in root.iter('tempo')})
    # MIDI stores whole microseconds per quarter (178 BPM -> 337079 us = 178.0003): state the score's value
    near = [b for b in tr['score_tempi_bpm'] + [120.0] if abs(b - tr['bpm']) < 0.05]
    if near:
        scale = near[0] / tr['bpm']
        tr['bpm'], tr['bpm_felt'] = near[0], round(tr['bpm_felt'] * scale, 4)
    return tr


def scan(out):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, 'pkgs', H2, *H2_DIR, '*.h2song'))):
        stem = os.path.splitext(os.path.basename(path))[0]
        tr = scan_h2(path)
        rows.append(dict(name=stem, project=os.path.join(*H2_DIR[3:], os.path.basename(path)), package=H2, **tr))
    os.makedirs(os.path.join(out, 'midi'), exist_ok=True)
    for path in sorted(glob.glob(os.path.join(out, 'pkgs', MS, *MS_DIR, '*.msc[xz]'))):
        stem = os.path.splitext(os.path.basename(path))[0]
        tr = scan_ms(path, os.path.join(out, 'midi', stem + '.mid'))
        rows.append(dict(name=stem, project=os.path.join(*MS_DIR[2:], os.path.basename(path)), package=MS, **tr))
    for r in rows:
        r['relative_path'], r['format'] = r['name'] + '.wav', 'wav'
        length = r['song_s'] if r['package'] == H2 else r['music_end_s'] - r['music_start_s']
        if length < MIN_SONG_S:
            r['skipped'] = f'song shorter than {MIN_SONG_S:.0f} s ({length:.1f} s)'
    write_json(os.path.join(out, 'index.json'), dict(packages=[H2, MS], tracks=rows))
    for r in rows:
        print(f"  {r['package']:18s} {r['name']:24s} {r['bpm']:7.2f} {r['meter']:4s} steady={r['steady']} "
              f"song {r['song_s']:7.2f} s {r.get('skipped', '')}", file=sys.stderr)


def wav_seconds(path):
    import soundfile
    i = soundfile.info(path)
    return i.frames / i.samplerate


def render(out):
    idx = json.load(open(os.path.join(out, 'index.json')))
    os.makedirs(os.path.join(out, 'wav'), exist_ok=True)
    for r in idx['tracks']:
        if 'skipped' in r: continue
        dst = os.path.join(out, 'wav', r['relative_path'])
        if os.path.exists(dst): continue
        tmp = dst[:-4] + '.tmp.wav'
        src = os.path.join(out, 'pkgs', r['package'], *(H2_DIR if r['package'] == H2 else MS_DIR),
                           os.path.basename(r['project']))
        if r['package'] == H2:
            p = run(['h2cli', '-s', src, '-o', tmp, '-r', '44100', '-b', '16'])
        else:
            p = run(['mscore3', '-o', tmp, src])
        # h2cli stops once the last sample has died out, which can be before the end of the last pattern
        # (GM_kit_demo2's closing bar holds one crash at its start): a render counts when it reaches the
        # end of the pattern sequence or 1 s past the last note onset
        need = min(r['song_s'], r['music_end_s'] + 1.0) if r['package'] == H2 else r['song_s']
        ok = os.path.exists(tmp) and wav_seconds(tmp) >= need - 1e-3
        if ok:
            os.replace(tmp, dst)
        elif os.path.exists(tmp):
            os.remove(tmp)
        print(f"  render {r['name']}: rc {p.returncode}, {'kept' if ok else 'FAILED'}", file=sys.stderr)


def onset_env(path, hop=128):
    import soundfile
    x, sr = soundfile.read(path, dtype='float32', always_2d=True)
    x = x.mean(1)
    n = 1024
    frames = np.lib.stride_tricks.sliding_window_view(np.pad(x, (n // 2, n)), n)[::hop][:len(x) // hop]
    spec = np.log1p(100 * np.abs(np.fft.rfft(frames * np.hanning(n), axis=1)))
    flux = np.maximum(np.diff(spec, axis=0, prepend=spec[:1]), 0).sum(1)
    return flux / (flux.std() + 1e-9), sr / hop


def check(out):
    """Best lag of the truth's note onsets against the render's spectral flux, per 10 s window."""
    idx = json.load(open(os.path.join(out, 'index.json')))
    res = {}
    for r in idx['tracks']:
        wav = os.path.join(out, 'wav', r['relative_path'])
        if 'skipped' in r or not os.path.exists(wav): continue
        env, fps = onset_env(wav)
        ons = np.array(r['onsets_s'])
        lags = np.arange(-120, 121, 2) / 1000.0
        rows = []
        for w0 in np.arange(0, r['music_end_s'], 10.0):
            o = ons[(ons >= w0) & (ons < w0 + 10)]
            if len(o) < 4: continue
            sc = []
            for L in lags:
                i = np.round((o + L) * fps).astype(int)
                i = i[(i >= 0) & (i < len(env))]
                sc.append(env[i].mean() if len(i) else 0)
            sc = np.array(sc)
            rows.append(dict(t0=float(w0), n=int(len(o)), lag_ms=round(float(lags[sc.argmax()]) * 1000),
                             contrast=round(float(sc.max() / (np.median(sc) + 1e-9)), 2)))
        lag = [x['lag_ms'] for x in rows]
        res[r['name']] = dict(windows=rows, lag_ms_median=float(np.median(lag)), lag_ms_min=min(lag), lag_ms_max=max(lag),
                              wav_s=round(wav_seconds(wav), 3), song_s=r['song_s'])
        msg = ''
        if r['package'] == MS and shutil.which('fluidsynth') and os.path.exists(SF3):
            # legato strings give the onset check little to hold on to: compare the mscore3 render with
            # fluidsynth's render of the exported MIDI file (same font), window by window
            ref = os.path.join(out, 'check', r['name'] + '.fluidsynth.wav')
            if not os.path.exists(ref):
                os.makedirs(os.path.dirname(ref), exist_ok=True)
                run(['fluidsynth', '-ni', '-F', ref, '-r', '44100', SF3, os.path.join(out, 'midi', r['name'] + '.mid')])
            b, _ = onset_env(ref)
            w, xl = int(10 * fps), []
            for s0 in range(0, min(len(env), len(b)) - w, w):
                x = env[s0:s0 + w] - env[s0:s0 + w].mean()
                cc = [np.dot(x, b[s0 + L:s0 + L + w] - b[s0 + L:s0 + L + w].mean())
                      if 0 <= s0 + L and s0 + L + w <= len(b) else -np.inf for L in range(-60, 61)]
                xl.append(round((int(np.argmax(cc)) - 60) / fps * 1000))
            res[r['name']]['fluidsynth_midi_lag_ms'] = xl
            msg = f'; fluidsynth(MIDI) vs render per 10 s: {xl} ms'
        print(f"  check {r['name']:24s} lag median {np.median(lag):5.0f} ms, range {min(lag)}..{max(lag)} ms over "
              f"{len(rows)} windows; wav {wav_seconds(wav):.2f} s, song {r['song_s']:.2f} s{msg}", file=sys.stderr)
    write_json(os.path.join(out, 'check.json'), res)


def truth(out):
    idx = json.load(open(os.path.join(out, 'index.json')))
    tracks, skipped = [], []
    keep = ('name', 'project', 'package', 'bpm', 'meter', 'song_s', 'relative_path', 'format')
    extra = ('beat_unit', 'time_signatures', 'tempo_segments', 'steady_share', 'max_dev', 'changes_over_4pct',
             'music_start_s', 'music_end_s', 'downbeats_s', 'score_tempi_bpm', 'humanize_time', 'swing_factor',
             'notes_leadlag_or_probability')
    for r in idx['tracks']:
        wav = os.path.join(out, 'wav', r['relative_path'])
        if 'skipped' not in r and not os.path.exists(wav):
            r = dict(r, skipped='render failed or short')
        if 'skipped' in r:
            skipped.append({k: r[k] for k in keep + ('skipped',)}); continue
        t = {k: r[k] for k in keep}
        t.update(duration_s=round(wav_seconds(wav), 3), steady=r['steady'], bpm_felt=r['bpm_felt'],
                 soundfont=r['soundfont'], beats_s=r['beats_s'])
        t.update({k: r[k] for k in extra if k in r})
        tracks.append(t)
    write_json(os.path.join(out, 'truth.json'),
               dict(version=1, package=f'{H2} + {MS}', packages=[H2, MS], tracks=tracks, skipped=skipped))
    print(f'  {len(tracks)} songs, {len(skipped)} skipped', file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('cmd', choices=('scan', 'render', 'check', 'truth'))
    ap.add_argument('out')
    a = ap.parse_args()
    dict(scan=scan, render=render, check=check, truth=truth)[a.cmd](os.path.abspath(a.out))


if __name__ == '__main__':
    main()
