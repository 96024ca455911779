#!/usr/bin/env python3
"""tempomodel.score_beats -- beat-grid F-measure (±70 ms, first 5 s ignored: the MIREX / mir_eval convention)
and downbeat F-measure of naviscan profiles against a truth file with `beats_s` / `downbeats_s`
(../shared/tempo's truth.json: clips with beats_s, beat_origin_s, beats_per_bar; or
the MIDI dev set's truth.json (build-midi.sh): tracks with beats_s, downbeats_s).

  python3 -m tempomodel.score_beats TRUTH.json PROFILES_DIR [--per-file]

A profile is PROFILES_DIR/<truth key with its extension replaced by .json>; its grid is expanded
from `beat_grid.segments` exactly as docs/profile-format.md says. Beatless truth (beats_s null) is
scored as right when the grid is empty.
"""
import json, os, sys, statistics


def expand(grid):
    beats = []
    for s in grid.get('segments') or []:
        beats += [s['start'] + k * s['interval'] for k in range(s['count'])]
    down = []
    if grid.get('meter') and grid.get('first_downbeat') is not None:
        down = beats[grid['first_downbeat']::grid['meter']]
    return beats, down


def f_measure(ref, est, tol=0.07, skip=5.0):
    ref = [r for r in ref if r >= skip]
    est = [e for e in est if e >= skip]
    if not ref and not est: return 1.0
    if not ref or not est: return 0.0
    used, hits = set(), 0
    j = 0
    for r in ref:
        best = None
        for i, e in enumerate(est):
            if i in used: continue
            if abs(e - r) <= tol and (best is None or abs(e - r) < abs(est[best] - r)): best = i
        if best is not None: used.add(best); hits += 1
    p, q = hits / len(est), hits / len(ref)
    return 0.0 if hits == 0 else 2 * p * q / (p + q)


def main():
    if len(sys.argv) < 3 or sys.argv[1] in ('-h', '--help'):
        sys.exit(__doc__)
    truth_path, prof_dir = sys.argv[1], sys.argv[2]
    per_file = '--per-file' in sys.argv
    t = json.load(open(truth_path))
    if 'clips' in t or isinstance(t, list):
        items = t['clips'] if isinstance(t, dict) else t
        rows = []
        for c in items:
            name = c.get('file') or c.get('name') or c.get('relative_path')
            beats = c.get('beats_s')
            down = None
            if beats and c.get('beats_per_bar'):
                o = c.get('beat_origin_s', beats[0]); m = c['beats_per_bar']
                down = [b for b in beats if abs(((b - o) / (60 / c['bpm'])) % m) < 1e-3 or abs(((b - o) / (60 / c['bpm'])) % m - m) < 1e-3]
            rows.append((name, beats, down, c.get('style'), c.get('beats_per_bar')))
    else:
        rows = [(x['relative_path'], json.loads(x['beats_s']) if isinstance(x['beats_s'], str) else x['beats_s'],
                 json.loads(x['downbeats_s']) if isinstance(x.get('downbeats_s'), str) else x.get('downbeats_s'),
                 x.get('package'), x.get('beats_per_bar')) for x in t['tracks']]
    fs, dfs, meters, empties = [], [], [], []
    for name, beats, down, group, bpb in rows:
        p = os.path.join(prof_dir, os.path.splitext(os.path.basename(name))[0] + '.json')
        if not os.path.exists(p): continue
        prof = json.load(open(p))
        grid = prof.get('beat_grid') or {}
        est, est_down = expand(grid)
        if not beats:
            empties.append(not est)
            if per_file: print(f'{name:40s} beatless  grid {"empty" if not est else "%d beats" % len(est)}')
            continue
        f = f_measure(beats, est); fs.append(f)
        line = f'{name:40s} {group or "":12s} F {f:.3f}  beats {len(est)}/{len(beats)} bpm {prof.get("bpm")} meter {grid.get("meter")}/{bpb}'
        if down:
            df = f_measure(down, est_down); dfs.append(df)
            meters.append(grid.get('meter') == (int(bpb) if bpb else None))
            line += f' downbeat F {df:.3f}'
        if per_file: print(line)
    if fs:
        print(f'beat F-measure: mean {statistics.mean(fs):.3f} median {statistics.median(fs):.3f} over {len(fs)} tracks; '
              f'>= 0.9: {sum(f >= 0.9 for f in fs)}')
    if dfs:
        print(f'downbeat F-measure: mean {statistics.mean(dfs):.3f} over {len(dfs)}; meter right {sum(meters)}/{len(meters)}')
    if empties:
        print(f'beatless with an empty grid: {sum(empties)}/{len(empties)}')


if __name__ == '__main__':
    main()
