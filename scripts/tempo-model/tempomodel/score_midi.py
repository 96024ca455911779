#!/usr/bin/env python3
"""python3 -m tempomodel.score_midi TRUTH.json PROFILES_DIR [--by package|soundfont] -- tempo and beat accuracy of per-track
JSON profiles against the MIDI dev set's truth (build-midi.sh; docs/tempo-model.md).

A profile is any *.json below PROFILES_DIR with a "relative_path" (as naviscan writes it when it scans
OUTDIR/audio: "fluidr3/simutrans-data/music__01-Simutrans-Main-Theme.wav") and a "bpm" (null = "no
tempo"); optional "bpm_confidence", "beat_grid" (naviscan's segments), "beats" (list of seconds) or
"first_beat" (seconds).

Tempo, as ../shared/modtempo/score.py defines it (same tolerance, factors and folding):
  ACC1         |bpm - truth| <= 4 % of truth; truth = the main tempo in quarter notes per minute
               (the tempo held longest; --felt: bpm_felt, the dotted quarter in 6/8, 9/8, 12/8)
  ACC1 folded  the same with the truth first folded into --range (default 60-200) by halving/doubling
               (the estimate is not folded)
  ACC2         ACC1 against truth x {1, 2, 3, 1/2, 1/3}
  null         bpm null although the song has a tempo (every song here has one)
  no profile   counted as a miss in every rate (the rates divide by all truth files in the row)
Beat F-measure (MIREX / mir_eval): estimated beats against beats_s, both without the beats before
5 s, a hit within +-70 ms, one-to-one; F = 2PR/(P+R). Estimated beats are the profile's beat_grid or
"beats" when present, else a constant grid first_beat + k*60/bpm up to the end of the file (bpm and first_beat
needed; a null bpm scores F = 0).
Rows: per --by group and "all"; --by package also splits "all" by truth tempo (< 100 / >= 100 BPM)
and by steadiness. WAV files only unless --format says otherwise (default for --by soundfont: all).
Cross-validation (leave-one-package-out) happens in whatever tunes on this set: a tuned figure is
quoted for the package left out, never for the packages it was tuned on."""
import argparse
import collections
import glob
import json
import os
import statistics
import sys

FACTORS = (1, 2, 0.5, 3, 1 / 3)
MISS_FACTORS = ((2 / 3, 'x2/3'), (1.5, 'x3/2'), (4 / 3, 'x4/3'), (0.75, 'x3/4'), (4, 'x4'), (0.25, 'x1/4'))


def close(x, y):
    return abs(x - y) <= 0.04 * y


def fold(t, lo, hi):
    while t > hi:
        t /= 2
    while t < lo:
        t *= 2
    return t


def f_measure(ref, est, window=0.07, skip=5.0):
    ref = sorted(t for t in ref if t >= skip)
    est = sorted(t for t in est if t >= skip)
    if not ref or not est:
        return 0.0
    # greedy matching of two sorted lists within a window is a maximum one-to-one matching
    i = j = hits = 0
    while i < len(ref) and j < len(est):
        d = est[j] - ref[i]
        if abs(d) <= window:
            hits += 1
            i += 1
            j += 1
        elif d < 0:
            j += 1
        else:
            i += 1
    if hits == 0:
        return 0.0
    p, r = hits / len(est), hits / len(ref)
    return 2 * p * r / (p + r)


def est_beats(prof, duration):
    grid = prof.get('beat_grid')
    if isinstance(grid, dict) and grid.get('segments') is not None and prof.get('bpm'):
        # naviscan 0.5: the grid's segments (docs/profile-format.md, "Beat grid")
        return [s['start'] + k * s['interval'] for s in grid['segments'] for k in range(s['count'])]
    b = prof.get('beats')
    if isinstance(b, list) and b:
        return [float(x['time'] if isinstance(x, dict) else x) for x in b]
    bpm, fb = prof.get('bpm'), prof.get('first_beat')
    if not bpm or fb is None:
        return None if bpm else []
    step = 60.0 / bpm
    n = int((duration - fb) / step) + 1
    return [fb + k * step for k in range(max(0, n))]


def load_profiles(d):
    found = {}
    for p in glob.glob(os.path.join(d, '**', '*.json'), recursive=True):
        try:
            j = json.load(open(p))
        except Exception:
            continue
        if not isinstance(j, dict):
            continue
        rel = j.get('relative_path') or os.path.relpath(p[:-5], d)
        found[rel] = j
    return found


def match(found, rel):
    if rel in found:
        return found[rel]
    for k, v in found.items():  # a profile made from another root: match the tail
        if k.endswith('/' + rel) or rel.endswith('/' + k):
            return v
    return None


def score_rows(tracks, found, key_fn, lo, hi, felt):
    rows = collections.OrderedDict()
    for t in tracks:
        for key in key_fn(t):
            rows.setdefault(key, []).append(t)
    out = collections.OrderedDict()
    for key, ts in rows.items():
        n = a1 = a1f = a2 = nul = absent = 0
        fs, misses = [], collections.Counter()
        for t in ts:
            truth = t['bpm_felt'] if felt else t['bpm']
            n += 1
            prof = match(found, t['relative_path'])
            if prof is None:
                absent += 1
                misses['no profile'] += 1
                continue
            b = prof.get('bpm')
            eb = est_beats(prof, t['duration_s'])
            if eb is not None and t.get('beats_s'):
                fs.append(f_measure(t['beats_s'], eb))
            if b is None:
                nul += 1
                misses['null'] += 1
                continue
            a1 += close(b, truth)
            a1f += close(b, fold(truth, lo, hi))
            if any(close(b, truth * f) for f in FACTORS):
                a2 += 1
            else:
                for f, label in MISS_FACTORS:
                    if close(b, truth * f):
                        misses[label] += 1
                        break
                else:
                    misses['other'] += 1
            if not close(b, truth) and any(close(b, truth * f) for f in FACTORS[1:]):
                misses['ok x' + {2: '2', 0.5: '1/2', 3: '3', 1 / 3: '1/3'}[
                    next(f for f in FACTORS[1:] if close(b, truth * f))]] += 1
        out[key] = dict(n=n, acc1=a1 / n, acc1_folded=a1f / n, acc2=a2 / n, null=nul, absent=absent,
                        beat_f_mean=statistics.mean(fs) if fs else None,
                        beat_f_median=statistics.median(fs) if fs else None, beat_n=len(fs),
                        misses=dict(misses))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('truth')
    ap.add_argument('profiles')
    ap.add_argument('--by', choices=('package', 'soundfont'), default='package')
    ap.add_argument('--format', choices=('wav', 'mp3', 'all'), help='default: wav for --by package, all for soundfont')
    ap.add_argument('--soundfont', help='only this soundfont (fluidr3, timgm6mb)')
    ap.add_argument('--range', default='60-200', help='folding range for ACC1 folded (default 60-200)')
    ap.add_argument('--felt', action='store_true', help='score against bpm_felt (dotted quarter in compound meters)')
    ap.add_argument('--steady-only', action='store_true', help='only songs marked steady')
    ap.add_argument('--label', default='', help='a name printed in the header')
    ap.add_argument('--json', help='also write the rows here')
    ap.add_argument('--per-file', help='write a TSV of every scored file here')
    a = ap.parse_args()
    lo, hi = map(float, a.range.split('-'))
    fmt = a.format or ('wav' if a.by == 'package' else 'all')
    tracks = json.load(open(a.truth))['tracks']
    tracks = [t for t in tracks if (fmt == 'all' or t['format'] == fmt)
              and (not a.soundfont or t['soundfont'] == a.soundfont) and (t['steady'] or not a.steady_only)]
    found = load_profiles(a.profiles)
    if a.by == 'package':
        def keys(t):
            tb = t['bpm_felt'] if a.felt else t['bpm']
            return [t['package'], 'all', 'all, truth < 100' if tb < 100 else 'all, truth >= 100',
                    'all, steady' if t['steady'] else 'all, not steady']
    else:
        def keys(t):
            return [f'{t["soundfont"]}/{t["format"]}', 'all']
    rows = score_rows(tracks, found, keys, lo, hi, a.felt)
    order = sorted(rows, key=lambda k: (k.startswith('all'), k != 'all', k))
    print(f'# {a.label or a.profiles}: {len(found)} profiles; files: {fmt}'
          f'{", " + a.soundfont if a.soundfont else ""}; truth: {"bpm_felt" if a.felt else "bpm (quarter)"}'
          f'{"; steady only" if a.steady_only else ""}')
    print(f'| {"group":22s} |   n | ACC1 | ACC1 folded | ACC2 | null | no profile | beat F mean | beat F median |')
    print('|' + '-' * 24 + '|----:|-----:|------------:|-----:|-----:|-----------:|------------:|--------------:|')
    for k in order:
        r = rows[k]
        bf = f'{r["beat_f_mean"]:.3f}' if r['beat_f_mean'] is not None else '-'
        bm = f'{r["beat_f_median"]:.3f}' if r['beat_f_median'] is not None else '-'
        print(f'| {k:22s} | {r["n"]:3d} | {100 * r["acc1"]:4.1f} | {100 * r["acc1_folded"]:11.1f} | '
              f'{100 * r["acc2"]:4.1f} | {r["null"]:4d} | {r["absent"]:10d} | {bf:>11s} | {bm:>13s} |')
    print()
    for k in order:
        if rows[k]['misses']:
            print(f'misses {k}: {dict(sorted(rows[k]["misses"].items()))}')
    if a.json:
        json.dump(rows, open(a.json, 'w'), indent=1)
    if a.per_file:
        with open(a.per_file, 'w') as fh:
            fh.write('relative_path\tpackage\tsoundfont\tformat\ttruth_bpm\tbpm_felt\tsteady\test_bpm\tconfidence\tratio\tbeat_f\n')
            for t in tracks:
                p = match(found, t['relative_path']) or {}
                b = p.get('bpm')
                eb = est_beats(p, t['duration_s']) if p else None
                f = f_measure(t['beats_s'], eb) if eb is not None and t.get('beats_s') else None
                fh.write(f'{t["relative_path"]}\t{t["package"]}\t{t["soundfont"]}\t{t["format"]}\t{t["bpm"]}\t'
                         f'{t["bpm_felt"]}\t{t["steady"]}\t{b}\t{p.get("bpm_confidence")}\t'
                         f'{(b / t["bpm"]) if b else ""}\t{"" if f is None else round(f, 3)}\n')


if __name__ == '__main__':
    sys.exit(main())
