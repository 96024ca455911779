#!/usr/bin/env python3
"""score_modules.py TRUTH.json PROFILES_DIR [SCORE_PY] -- ../shared/modtempo/score.py over the whole
set and over each package's tracks alone (one truth file per package in a temporary folder), then the
calibration of bpm_confidence: for each confidence floor, how many tracks reach it and how many of
those are right within ACC2 (x1/2/3/½/⅓ of the stated tempo, 4 %)."""
import glob, json, os, subprocess, sys, tempfile

truth_path, profiles = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
score = sys.argv[3] if len(sys.argv) > 3 else os.path.join(here, '..', '..', '..', '..', 'shared', 'modtempo', 'score.py')
truth = json.load(open(truth_path))
packages = sorted({t['package'] for t in truth['tracks'].values()})
print('== all packages')
subprocess.run([sys.executable, score, truth_path, profiles], check=True)
with tempfile.TemporaryDirectory() as tmp:
    for p in packages:
        sub = dict(truth, tracks={k: v for k, v in truth['tracks'].items() if v['package'] == p})
        path = os.path.join(tmp, p + '.json')
        json.dump(sub, open(path, 'w'))
        print('== %s (%d modules)' % (p, len(sub['tracks']) // 2))
        subprocess.run([sys.executable, score, path, profiles], check=True)

found = {}
for f in glob.glob(os.path.join(profiles, '**', '*.json'), recursive=True):
    try:
        j = json.load(open(f))
    except ValueError:
        continue
    found[os.path.basename(j.get('relative_path') or f[:-5])] = j
print('== bpm_confidence calibration (ACC2 against the stated tempo)')
for ext in ('wav', 'mp3'):
    rows = []
    for name, t in truth['tracks'].items():
        if not name.endswith('.' + ext) or name not in found:
            continue
        b, c = found[name].get('bpm'), found[name].get('bpm_confidence', 0)
        ok = b is not None and any(abs(b - t['bpm'] * f) <= 0.04 * t['bpm'] * f for f in (1, 2, 0.5, 3, 1 / 3))
        rows.append((c, ok))
    for floor in (0.5, 0.8, 0.9, 0.95):
        sel = [ok for c, ok in rows if c >= floor]
        if sel:
            print('%s: confidence >= %.2f: %d tracks, %d right (%.1f %%)' % (ext, floor, len(sel), sum(sel), 100 * sum(sel) / len(sel)))
        else:
            print('%s: confidence >= %.2f: no tracks' % (ext, floor))
