#!/usr/bin/env python3
"""level_predictions.py -- what the shipped level model (beat_level_cv.py's beat+acf22 variant with its
all-data weights, as MetricalLevel.swift carries them) predicts for every cached track, as JSON
{wav path: bpm or null}: the check that TempoEstimator and its Python twin agree
(`compare_profiles.py`-style: run naviscan on a few WAVs and compare `bpm`).

  level_predictions.py OUT.json [--subset small]
"""
import argparse, json, os, sys
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import beat_level_cv as bl  # noqa: E402
import tempo_cv as tc       # noqa: E402

BEAT = dict(eb=1.7087, eo=0.7868, lb=1.4206, lo=0.5015, irr=3.0351, cost=-463.0227, bar2=-0.2930, bar3=1.3270,
            bar4=0.8486, ebar2=3.3750)
ACF = [-4.9670, 7.4503, 2.5133, 5.9182, 1.8334, -2.6507, -5.5304, -2.9955, -6.6735, -0.4050,
       0.1099, 5.1346, 3.0062, -5.2196, 1.0784, 3.4426, 4.2047, -1.2736, 4.6795, 0.8713, 5.8982, -4.5569]
RHO = 6.941


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    ap.add_argument('--subset', choices=('all', 'small'), default='all')
    ap.add_argument('--modules', default=os.path.join(tc.WORK, 'modtempo'))
    ap.add_argument('--styles', default=os.path.join(tc.WORK, 'styles'))
    ap.add_argument('--midi', default=os.path.expanduser('~/.cache/naviscan-miditempo'))
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/naviscan-tempo-cv'))
    a = ap.parse_args()
    out = {}
    for source, name, wav, truth, stem in tc.track_list(a):
        if not os.path.exists(stem + '.f32') or os.path.getsize(stem + '.f32') == 0: continue
        f = tc.track_features(stem)
        if not bl.gate(f): out[wav] = None; continue
        bt = bl.track_beats(stem, f['cs'], False)
        z = [sum(BEAT[k] * r[k] for k in BEAT) + float(np.dot(ACF, x)) for r, x in zip(bt['rows'], f['X'])]
        i = int(np.argmax(z))
        r = bt['rows'][i]['r']
        out[wav] = None if r / (r + RHO) < 0.5 else bl.final_bpm(f, i)
    json.dump(out, open(a.out, 'w'), indent=1)
    print(f'{len(out)} tracks')


if __name__ == '__main__':
    main()
