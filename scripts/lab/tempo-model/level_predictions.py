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

BEAT = dict(eb=1.1843, eo=0.9962, lb=1.2961, lo=0.2841, irr=-1.7746, cost=-414.4314, bar2=-0.5585, bar3=0.3101,
            bar4=0.3783, ebar2=2.8594)
ACF = [-5.1162, 5.3694, 1.6005, 7.5429, 1.2273, -1.0171, -5.1790, -2.2735, -8.0330, 1.6410,
       -1.1600, 1.9044, 2.1591, -2.4684, -0.5654, 4.9620, 2.9949, -1.0167, 6.5808, 0.5564, 5.8700, -4.4088]
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
