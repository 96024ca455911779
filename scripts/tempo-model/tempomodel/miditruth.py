#!/usr/bin/env python3
"""python3 -m tempomodel.miditruth -- the MIDI dev set: find, analyse, render and describe.

Subcommands (build-midi.sh runs them in this order; every step skips what already exists):
  scan   OUTDIR          find every Standard MIDI File under OUTDIR/pkgs/<package>/ (name *.mid*,
                         any case, optionally gzipped; the bytes must start with "MThd"), copy it to
                         OUTDIR/midi/<package>/<stem>.mid, read its tempo map and time signatures,
                         apply the skip rules and write OUTDIR/midi/index.json
  check  OUTDIR          render a click MIDI with each soundfont and measure fluidsynth's onset lag
                         (OUTDIR/render_check.json; fails above 10 ms)
  render OUTDIR [-j N]   render every kept file with each soundfont to OUTDIR/audio/<font>/<package>/
                         <stem>.wav (44.1 kHz, 16 bit, stereo) and, for FluidR3, <stem>.mp3 (lame -V2)
  truth  OUTDIR          write OUTDIR/truth.json from the index and the rendered files
check, render and truth take --fonts NAMES (default fluidr3,timgm6mb, the dev set's two; musescore is
another font (tempomodel.scaled renders the tempo-scaled copies through it).

Truth rules (docs/tempo-model.md):
  * time: t = 0 in the audio is MIDI tick 0 (the render is not trimmed at the start); seconds come
    from the file's tempo map (set_tempo in any track; 120 BPM until the first one, as the MIDI spec
    says).
  * beats_s: the quarter-note grid, restarted at every bar line. Bars come from the time signatures
    (4/4 until the first one; a signature that restates the current one is ignored, a different one
    starts a bar where it stands). Within a bar a beat falls every quarter note from the bar line.
    Only beats from half a beat before the first note onset to the last note-off are listed.
  * bpm: the main tempo in quarter notes per minute = the tempo (set_tempo value) that lasts longest
    in seconds between the first note onset and the last note-off. tempo_segments lists them all.
  * steady: at least 90 % of that span plays within +-4 % of the main tempo.
  * beat_unit: the felt beat as a fraction of a whole note: 3/8 (dotted quarter) for 6/8, 9/8, 12/8,
    else 1/4. bpm_felt = bpm * (1/4) / beat_unit. irregular_meter: a bar that is not a whole number
    of quarters (7/16, 5/8, 7/8 ...).
  * skipped (with the reason, in index.json and truth.json): not a Standard MIDI File; type 2;
    no notes; the same notes (channel, key, tick) as a file kept before it (sorted path order);
    music span (first onset to last note-off) < 20 s; a render shorter than half the score; grid lock < 0.75: fewer than 75 % of note
    onsets lie in the 12 most used of 48 equal phase bins of the quarter note (quantised music
    puts nearly all onsets on a few phases; a free performance recorded against a nominal tempo map
    spreads them evenly, 25 %), i.e. the tempo map does not describe the music's pulse.
"""
import argparse
import collections
import gzip
import hashlib
import io
import json
import math
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from fractions import Fraction

import mido
import mido.midifiles.meta as _meta

SR = 44100
FONT_TABLE = {  # name: (path, mp3 too)
    'fluidr3': ('/usr/share/sounds/sf2/FluidR3_GM.sf2', True),
    'timgm6mb': ('/usr/share/sounds/sf2/TimGM6mb.sf2', False),
    'musescore': ('/usr/share/sounds/sf3/MuseScore_General_Lite.sf3', False),
}
DEV_FONTS = 'fluidr3,timgm6mb'


def font_list(names):
    """[(name, path, mp3 too)] for a comma list of FONT_TABLE names"""
    return [(f, *FONT_TABLE[f]) for f in names.split(',')]


FONTS = font_list(DEV_FONTS)  # --fonts replaces it
MIN_SPAN_S = 20.0
MIN_GRID_LOCK = 0.75
STEADY_TOL = 0.04
STEADY_SHARE = 0.90
PEAK_DBFS = -1.0
TAIL_DBFS = -60.0

# some files carry key signatures mido cannot name (e.g. 1 flat, mode 255); they do not matter here
_kdecode = _meta.MetaSpec_key_signature.decode


def _kdecode_safe(self, msg, data):
    try:
        _kdecode(self, msg, data)
    except Exception:
        msg.key = 'C'


_meta.MetaSpec_key_signature.decode = _kdecode_safe


# ----------------------------------------------------------------------------- MIDI analysis

def read_bytes(path):
    data = open(path, 'rb').read()
    if data[:2] == b'\x1f\x8b':
        data = gzip.decompress(data)
    return data


def stem_for(pkg_root, path):
    rel = os.path.relpath(path, pkg_root)
    parent = os.path.basename(os.path.dirname(rel))
    base = os.path.basename(rel)
    for suf in ('.gz', '.GZ'):
        if base.endswith(suf):
            base = base[:-len(suf)]
    base = os.path.splitext(base)[0]
    return f'{parent}__{base}'.replace(' ', '_')


class TempoMap:
    """tick -> seconds through the set_tempo events (120 BPM before the first)."""

    def __init__(self, tpb, tempo_events):
        self.tpb = tpb
        ev = {}
        for tick, us in sorted(tempo_events, key=lambda e: e[0]):
            ev[tick] = us  # the last event at a tick wins, as in a player
        if 0 not in ev:
            ev[0] = 500000
        self.ticks = sorted(ev)
        self.us = [ev[t] for t in self.ticks]
        self.secs = [0.0]
        for i in range(1, len(self.ticks)):
            self.secs.append(self.secs[-1] + (self.ticks[i] - self.ticks[i - 1]) * self.us[i - 1] / 1e6 / tpb)

    def seconds(self, tick):
        lo, hi = 0, len(self.ticks) - 1
        while lo < hi:  # last index with ticks[i] <= tick
            mid = (lo + hi + 1) // 2
            if self.ticks[mid] <= tick:
                lo = mid
            else:
                hi = mid - 1
        return self.secs[lo] + float(tick - self.ticks[lo]) * self.us[lo] / 1e6 / self.tpb

    def segments(self, t0, t1):
        """[(start_s, end_s, bpm)] covering [t0, t1] seconds, equal neighbours merged."""
        out = []
        for i, us in enumerate(self.us):
            s = self.secs[i]
            e = self.secs[i + 1] if i + 1 < len(self.us) else math.inf
            s, e = max(s, t0), min(e, t1)
            if e <= s:
                continue
            bpm = 60e6 / us
            if out and abs(out[-1][2] - bpm) < 1e-9 and abs(out[-1][1] - s) < 1e-9:
                out[-1][1] = e
            else:
                out.append([s, e, bpm])
        return out


def main_tempo(segs):
    """(the tempo held longest, seconds within STEADY_TOL of it) over [(start_s, end_s, bpm)]."""
    dur_by_bpm = collections.Counter()
    for s, e, bpm in segs:
        dur_by_bpm[round(bpm, 4)] += e - s
    main_bpm = max(dur_by_bpm.items(), key=lambda kv: (kv[1], kv[0]))[0]
    return main_bpm, sum(e - s for s, e, bpm in segs if abs(bpm - main_bpm) <= STEADY_TOL * main_bpm)


def analyse(data):
    m = mido.MidiFile(file=io.BytesIO(data))
    if m.type == 2:
        return {'skip': 'type 2 MIDI (independent sequences)'}
    tpb = m.ticks_per_beat
    tempos, sigs, ons, offs, keyset = [], [], [], [], []
    drums = 0
    active = collections.defaultdict(list)
    for tr in m.tracks:
        t = 0
        for msg in tr:
            t += msg.time
            if msg.type == 'set_tempo':
                tempos.append((t, msg.tempo))
            elif msg.type == 'time_signature':
                sigs.append((t, msg.numerator, msg.denominator))
            elif msg.type == 'note_on' and msg.velocity > 0:
                ons.append(t)
                keyset.append((t, msg.channel, msg.note))
                active[(msg.channel, msg.note)].append(t)
                drums += msg.channel == 9
            elif msg.type in ('note_off', 'note_on'):
                if active[(msg.channel, msg.note)]:
                    active[(msg.channel, msg.note)].pop()
                offs.append(t)
    if not ons:
        return {'skip': 'no notes'}
    tm = TempoMap(tpb, tempos)
    first_tick = min(ons)
    last_tick = max(ons + offs)
    t_first, t_last = tm.seconds(first_tick), tm.seconds(last_tick)
    notes_md5 = hashlib.md5(repr(sorted(keyset)).encode()).hexdigest()

    # grid lock: share of onsets in the 12 most used of 48 phase bins of the quarter note
    bins = collections.Counter(int((o % tpb) * 48 // tpb) for o in ons)
    grid_lock = sum(c for _, c in bins.most_common(12)) / len(ons)

    # bars and beats
    sigs.sort(key=lambda s: s[0])
    changes = [(0, 4, 4)]  # (tick, num, den) where a new signature starts a bar
    for tick, num, den in sigs:
        if tick == changes[-1][0]:
            changes[-1] = (tick, num, den)  # several at one tick: the last wins
        elif (num, den) != changes[-1][1:]:
            changes.append((tick, num, den))  # a restatement of the current signature is ignored
    ch2 = [changes[0]]
    for c in changes[1:]:
        if c[1:] != ch2[-1][1:]:
            ch2.append(c)
    changes = ch2
    beats, downbeats, sig_time = [], [], collections.Counter()
    sig_spans = []
    for i, (tick, num, den) in enumerate(changes):
        end = changes[i + 1][0] if i + 1 < len(changes) else last_tick + 1
        if tick > last_tick:
            break
        bar_len = Fraction(num * 4 * tpb, den)
        sig_spans.append({'start_s': round(tm.seconds(tick), 6), 'time_signature': f'{num}/{den}'})
        bar = Fraction(tick)
        while bar < end:
            downbeats.append(bar)
            bar_end = min(bar + bar_len, Fraction(end))
            b = bar
            while b < bar_end:
                beats.append(b)
                b += tpb
            # seconds this signature is heard within the music span
            s0, s1 = max(tm.seconds(float(bar)), t_first), min(tm.seconds(float(bar_end)), t_last)
            if s1 > s0:
                sig_time[f'{num}/{den}'] += s1 - s0
            bar = bar_end
    main_sig = sig_time.most_common(1)[0][0] if sig_time else '4/4'
    num, den = map(int, main_sig.split('/'))

    segs = tm.segments(t_first, t_last)
    main_bpm, within = main_tempo(segs)
    span = t_last - t_first
    compound = den == 8 and num in (6, 9, 12)
    beat_unit = '3/8' if compound else '1/4'
    bpm_felt = main_bpm * 2 / 3 if compound else main_bpm
    irregular = Fraction(num * 4, den).denominator != 1

    # beats in seconds, from half a main-tempo beat before the first onset to the last note-off
    lead = 0.5 * 60.0 / main_bpm
    beats_s = [tm.seconds(float(b)) for b in beats]
    beats_s = [t for t in beats_s if t_first - lead - 1e-9 <= t <= t_last + 1e-9]
    down_s = [tm.seconds(float(b)) for b in downbeats]
    down_s = [t for t in down_s if t_first - lead - 1e-9 <= t <= t_last + 1e-9]
    felt_s = None
    if compound:  # dotted-quarter grid from each bar line of the compound signature(s)
        felt = []
        for i, (tick, n_, d_) in enumerate(changes):
            end = changes[i + 1][0] if i + 1 < len(changes) else last_tick + 1
            unit = Fraction(3 * tpb, 2) if (d_ == 8 and n_ in (6, 9, 12)) else Fraction(tpb)
            bar_len = Fraction(n_ * 4 * tpb, d_)
            bar = Fraction(tick)
            while bar < end:
                bar_end = min(bar + bar_len, Fraction(end))
                b = bar
                while b < bar_end:
                    felt.append(b)
                    b += unit
                bar = bar_end
        felt_s = [t for t in (tm.seconds(float(b)) for b in felt)
                  if t_first - lead - 1e-9 <= t <= t_last + 1e-9]

    skip = None
    if span < MIN_SPAN_S:
        skip = f'music span {span:.1f} s < {MIN_SPAN_S:.0f} s'
    elif grid_lock < MIN_GRID_LOCK:
        skip = (f'grid lock {grid_lock:.2f} < {MIN_GRID_LOCK}: note onsets do not follow the tempo map '
                f'(free performance against a nominal {60e6 / tm.us[0]:.0f} BPM map)')
    return {
        'skip': skip,
        'midi_type': m.type,
        'ticks_per_beat': tpb,
        'notes_md5': notes_md5,
        'n_notes': len(ons),
        'n_drum_notes': drums,
        'grid_lock': round(grid_lock, 3),
        'music_start_s': round(t_first, 6),
        'music_end_s': round(t_last, 6),
        'bpm': round(main_bpm, 4),
        'bpm_felt': round(bpm_felt, 4),
        'beat_unit': beat_unit,
        'irregular_meter': irregular,
        'time_signature': main_sig,
        'time_signatures': sig_spans,
        'beats_per_bar': num * 4 // den if not irregular else None,
        'beats_per_bar_felt': (num // 3) if compound else (num * 4 // den if not irregular else None),
        'tempo_segments': [{'start_s': round(s, 6), 'end_s': round(e, 6), 'bpm': round(b, 4)} for s, e, b in segs],
        'n_tempo_changes': len(segs) - 1,
        'steady_share': round(within / span, 4) if span > 0 else 1.0,
        'steady': within >= STEADY_SHARE * span,
        'beats_s': [round(t, 4) for t in beats_s],
        'beats_felt_s': [round(t, 4) for t in felt_s] if felt_s is not None else None,
        'downbeats_s': [round(t, 4) for t in down_s],
        'beat_origin_s': round(down_s[0], 4) if down_s else (round(beats_s[0], 4) if beats_s else None),
    }


def cmd_scan(a):
    out = a.outdir
    pkgs_dir = os.path.join(out, 'pkgs')
    entries, seen_notes = [], {}
    for pkg in sorted(os.listdir(pkgs_dir)):
        root = os.path.join(pkgs_dir, pkg)
        if not os.path.isdir(root):
            continue
        cands = []
        for d, _, files in os.walk(root):
            for f in files:
                low = f.lower()
                if low.endswith(('.mid', '.midi', '.mid.gz', '.midi.gz', '.kar', '.smf')):
                    cands.append(os.path.join(d, f))
        for path in sorted(cands):
            src = '/' + os.path.relpath(path, root)
            e = {'package': pkg, 'source_midi': src, 'stem': stem_for(root, path)}
            try:
                data = read_bytes(path)
            except Exception as ex:
                e['skip'] = f'unreadable: {ex}'
                entries.append(e)
                continue
            if data[:4] != b'MThd':
                e['skip'] = 'not a Standard MIDI File (no MThd)'
                entries.append(e)
                continue
            e['md5'] = hashlib.md5(data).hexdigest()
            try:
                info = analyse(data)
            except Exception as ex:
                e['skip'] = f'mido cannot read it: {ex}'
                entries.append(e)
                continue
            if not info.get('skip') and info['notes_md5'] in seen_notes:
                info['skip'] = f'same notes as {seen_notes[info["notes_md5"]]}'
            elif not info.get('skip'):
                seen_notes[info['notes_md5']] = f'{pkg}:{src}'
            e.update(info)
            if not e.get('skip'):
                dst = os.path.join(out, 'midi', pkg, e['stem'] + '.mid')
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if not (os.path.exists(dst) and open(dst, 'rb').read() == data):
                    with open(dst + '.tmp', 'wb') as fh:
                        fh.write(data)
                    os.replace(dst + '.tmp', dst)
            entries.append(e)
    with open(os.path.join(out, 'midi', 'index.json.tmp'), 'w') as fh:
        json.dump(entries, fh, indent=1)
    os.replace(os.path.join(out, 'midi', 'index.json.tmp'), os.path.join(out, 'midi', 'index.json'))
    c = collections.Counter((e['package'], 'kept' if not e.get('skip') else 'skipped') for e in entries)
    for pkg in sorted({e['package'] for e in entries}):
        print(f'  {pkg}: {c[(pkg, "kept")] + c[(pkg, "skipped")]} MIDI files, {c[(pkg, "kept")]} kept, '
              f'{c[(pkg, "skipped")]} skipped', file=sys.stderr)
    for e in entries:
        if e.get('skip'):
            print(f'  skip {e["package"]}:{e["source_midi"]}: {e["skip"]}', file=sys.stderr)


# ----------------------------------------------------------------------------- rendering

def fluid_render(sf2, mid, wav_float):
    subprocess.run(['fluidsynth', '-ni', '-q', '-F', wav_float, '-r', str(SR), '-O', 'float', sf2, mid],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def render_one(job):
    import numpy as np
    import soundfile as sf
    mid, sf2, wav, mp3 = job
    if os.path.exists(wav) and os.path.getmtime(wav) >= os.path.getmtime(mid) and (mp3 is None or os.path.exists(mp3)):
        return None
    os.makedirs(os.path.dirname(wav), exist_ok=True)
    tmpd = tempfile.mkdtemp(prefix='miditempo_')
    try:
        raw = os.path.join(tmpd, 'r.wav')
        fluid_render(sf2, mid, raw)
        score = mido.MidiFile(mid)
        if sf.info(raw).frames < 0.5 * score.length * SR:
            # fluidsynth 2.3 stops after 64 samples on freedink's Sound/104.mid; the same events written
            # back by mido (same ticks, tempo map and channels) render whole
            plain = os.path.join(tmpd, 'plain.mid')
            score.save(plain)
            fluid_render(sf2, plain, raw)
        y, sr = sf.read(raw, dtype='float64', always_2d=True)
        assert sr == SR, sr
        peak = float(np.max(np.abs(y))) or 1.0
        y *= 10 ** (PEAK_DBFS / 20) / peak
        # tail: keep the render up to its last sample above -60 dBFS, then a 10 ms cosine ramp
        loud = np.nonzero(np.max(np.abs(y), axis=1) > 10 ** (TAIL_DBFS / 20))[0]
        end = min(len(y), int(loud[-1]) + 1 + int(0.01 * SR)) if len(loud) else len(y)
        y = y[:end]
        rl = min(int(0.01 * SR), len(y))
        y[len(y) - rl:] *= (0.5 * (1 + np.cos(np.pi * (np.arange(rl) + 1) / rl)))[:, None]
        pcm = np.clip(np.round(y * 32767), -32768, 32767).astype(np.int16)
        sf.write(wav + '.tmp.wav', pcm, SR, subtype='PCM_16')
        os.replace(wav + '.tmp.wav', wav)
        if mp3:
            subprocess.run(['lame', '--quiet', '-V2', wav, mp3 + '.tmp'], check=True)
            os.replace(mp3 + '.tmp', mp3)
    finally:
        shutil.rmtree(tmpd, ignore_errors=True)
    return wav


def load_index(out):
    return json.load(open(os.path.join(out, 'midi', 'index.json')))


def cmd_render(a):
    out = a.outdir
    jobs = []
    for e in load_index(out):
        if e.get('skip'):
            continue
        mid = os.path.join(out, 'midi', e['package'], e['stem'] + '.mid')
        for font, sf2, mp3 in FONTS:
            wav = os.path.join(out, 'audio', font, e['package'], e['stem'] + '.wav')
            jobs.append((mid, sf2, wav, wav[:-4] + '.mp3' if mp3 else None))
    # longest first, so the two workers finish together
    jobs.sort(key=lambda j: -os.path.getsize(j[0]))
    done = 0
    with multiprocessing.Pool(a.jobs) as pool:
        for r in pool.imap_unordered(render_one, jobs):
            done += r is not None
    print(f'  rendered {done} of {len(jobs)} (the rest existed)', file=sys.stderr)


def cmd_check(a):
    """Click test: a side-stick (GM drum 37) and a woodblock every half second, at irregular ticks."""
    import numpy as np
    import soundfile as sf
    tpb = 480
    m = mido.MidiFile(type=0, ticks_per_beat=tpb)
    tr = mido.MidiTrack()
    m.tracks.append(tr)
    tr.append(mido.MetaMessage('set_tempo', tempo=500000, time=0))
    tr.append(mido.Message('program_change', program=115, channel=0, time=0))
    ticks = [0] + [tpb * k + (37 * k) % 61 for k in range(1, 24)]
    last = 0
    for tk in ticks:
        tr.append(mido.Message('note_on', note=37, velocity=120, channel=9, time=tk - last))
        tr.append(mido.Message('note_off', note=37, velocity=0, channel=9, time=20))
        last = tk + 20
    tr.append(mido.MetaMessage('end_of_track', time=tpb))
    tmpd = tempfile.mkdtemp(prefix='miditempo_click_')
    res = {}
    try:
        mid = os.path.join(tmpd, 'click.mid')
        m.save(mid)
        tmap = TempoMap(tpb, [(0, 500000)])
        for font, sf2, _ in FONTS:
            raw = os.path.join(tmpd, font + '.wav')
            fluid_render(sf2, mid, raw)
            y, sr = sf.read(raw, dtype='float64', always_2d=True)
            env = np.max(np.abs(y), axis=1)
            lags = []
            for tk in ticks:
                t = tmap.seconds(tk)
                s = int(round(t * SR))
                seg = env[s - int(0.05 * SR) if s > int(0.05 * SR) else 0: s + int(0.2 * SR)]
                off = s - int(0.05 * SR) if s > int(0.05 * SR) else 0
                thr = 0.1 * seg.max()  # -20 dB below this click's peak
                first = off + int(np.argmax(seg > thr))
                lags.append((first - s) / SR * 1000)
            res[font] = {'lag_ms_median': round(float(np.median(lags)), 2), 'lag_ms_min': round(min(lags), 2),
                         'lag_ms_max': round(max(lags), 2), 'clicks': len(lags),
                         'first_nonzero_sample': int(np.argmax(env > 0))}
    finally:
        shutil.rmtree(tmpd, ignore_errors=True)
    res['rule'] = ('onset = first sample above -20 dB of the click peak; beats_s keep the MIDI times '
                   'uncorrected when every |lag| <= 10 ms')
    json.dump(res, open(os.path.join(a.outdir, 'render_check.json'), 'w'), indent=1)
    for font, sf2, _ in FONTS:
        r = res[font]
        print(f'  fluidsynth onset lag {font}: median {r["lag_ms_median"]} ms, '
              f'range {r["lag_ms_min"]}..{r["lag_ms_max"]} ms', file=sys.stderr)
        if max(abs(r['lag_ms_min']), abs(r['lag_ms_max'])) > 10:
            sys.exit(f'ERROR: fluidsynth onset lag above 10 ms with {font}; beat truth would need a correction')


def cmd_truth(a):
    import soundfile as sf
    out = a.outdir
    idx = load_index(out)
    tracks, skipped = [], []
    for e in idx:
        if e.get('skip'):
            skipped.append({k: e.get(k) for k in ('package', 'source_midi', 'skip', 'grid_lock', 'music_start_s',
                                                  'music_end_s', 'bpm')})
            continue
        for font, _, mp3 in FONTS:
            for ext in ('wav', 'mp3') if mp3 else ('wav',):
                rel = f'{font}/{e["package"]}/{e["stem"]}.{ext}'
                p = os.path.join(out, 'audio', rel)
                if not os.path.exists(p):
                    continue
                wavp = p[:-4] + '.wav'
                dur = sf.info(wavp).frames / SR
                if dur < 0.5 * (e['music_end_s'] or 0):
                    # the synthesiser stopped early even on mido's copy of the file: nothing to score
                    skipped.append({'package': e['package'], 'source_midi': e['source_midi'], 'soundfont': font,
                                    'skip': f'render of {dur:.3f} s for a {e["music_end_s"]:.0f} s score'})
                    continue
                t = {'relative_path': rel, 'package': e['package'], 'source_midi': e['source_midi'],
                     'soundfont': font, 'format': ext, 'duration_s': round(dur, 6)}
                for k in ('bpm', 'bpm_felt', 'beat_unit', 'time_signature', 'time_signatures', 'beats_per_bar',
                          'beats_per_bar_felt', 'irregular_meter', 'tempo_segments', 'n_tempo_changes', 'steady',
                          'steady_share', 'music_start_s', 'music_end_s', 'beat_origin_s', 'beats_s',
                          'beats_felt_s', 'downbeats_s', 'ticks_per_beat', 'n_notes', 'n_drum_notes',
                          'grid_lock', 'md5'):
                    t[k] = e.get(k)
                t['has_drums'] = (e.get('n_drum_notes') or 0) > 0
                tracks.append(t)
    meta = {
        'sample_rate': SR,
        'soundfonts': {f: p for f, p, _ in FONTS},
        'mp3': 'lame -V2 of the fluidr3 WAV',
        'time_origin': 'audio t=0 is MIDI tick 0; no start trim',
        'render_check': json.load(open(os.path.join(out, 'render_check.json')))
        if os.path.exists(os.path.join(out, 'render_check.json')) else None,
        'rules': {'main_tempo': 'set_tempo value lasting longest between the first onset and the last note-off',
                  'steady': f'>= {STEADY_SHARE:.0%} of that span within +-{STEADY_TOL:.0%} of the main tempo',
                  'beats_s': 'quarter-note grid restarted at each bar line, half a beat before the first onset '
                             'to the last note-off',
                  'beat_unit': '3/8 for 6/8, 9/8, 12/8, else 1/4; bpm_felt = bpm * (1/4) / beat_unit',
                  'skip': f'span < {MIN_SPAN_S:.0f} s; grid lock < {MIN_GRID_LOCK}; duplicate notes; not SMF; no notes',
                  'tail': f'render kept to its last sample above {TAIL_DBFS:.0f} dBFS (after peak normalisation to '
                          f'{PEAK_DBFS:.0f} dBFS) + 10 ms cosine ramp'},
    }
    doc = {'meta': meta, 'tracks': tracks, 'skipped': skipped}
    with open(os.path.join(out, 'truth.json.tmp'), 'w') as fh:
        json.dump(doc, fh, indent=1)
    os.replace(os.path.join(out, 'truth.json.tmp'), os.path.join(out, 'truth.json'))
    c = collections.Counter((t['package'], t['soundfont'], t['format']) for t in tracks)
    for k in sorted(c):
        print(f'  {k[0]:16s} {k[1]:9s} {k[2]}: {c[k]}', file=sys.stderr)
    songs = {(t['package'], t['source_midi']): t for t in tracks}
    slow = sum(1 for t in songs.values() if t['bpm'] < 100)
    print(f'  {len(songs)} songs ({slow} with main tempo < 100 BPM, '
          f'{sum(1 for t in songs.values() if not t["steady"])} not steady), {len(tracks)} audio files, '
          f'{len(skipped)} MIDI files skipped', file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    for name in ('scan', 'check', 'render', 'truth'):
        p = sub.add_parser(name)
        p.add_argument('outdir')
        if name == 'render':
            p.add_argument('-j', '--jobs', type=int, default=os.cpu_count() or 2)
        if name != 'scan':
            p.add_argument('--fonts', default=DEV_FONTS,
                           help=f'soundfonts to render with, by name ({", ".join(FONT_TABLE)}; default {DEV_FONTS})')
    a = ap.parse_args()
    if a.cmd != 'scan':
        unknown = [f for f in a.fonts.split(',') if f not in FONT_TABLE]
        if unknown:
            ap.error(f'unknown soundfont {", ".join(unknown)}: choose from {", ".join(FONT_TABLE)}')
        FONTS[:] = font_list(a.fonts)
    a.outdir = os.path.abspath(a.outdir)
    {'scan': cmd_scan, 'check': cmd_check, 'render': cmd_render, 'truth': cmd_truth}[a.cmd](a)


if __name__ == '__main__':
    main()
