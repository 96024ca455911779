#!/usr/bin/env python3
"""level_predictions.py -- what the shipped level model (beat_level_cv.py's beat+acf22+sixth variant with its
all-data weights, as MetricalLevel.swift carries them, and its three beatless thresholds: r, the
slow-onset ratio, beat_level_cv.slow_onset_ratio, and the steady pulse's consistency,
beat_level_cv.steady_pulse) predicts for every cached track, as JSON
{wav path: bpm or null}: the check that TempoEstimator and its Python twin agree
(`compare_profiles.py`-style: run naviscan on a few WAVs and compare `bpm`).

  level_predictions.py OUT.json [--subset small] [--lmms DIR]
"""
import argparse, json, os, sys
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import beat_level_cv as bl  # noqa: E402
import tempo_cv as tc       # noqa: E402

BEAT = dict(eb=1.2173, eo=0.3705, lb=0.9310, lo=0.3344, irr=0.7412, cost=-277.4067, bar2=0.5747, bar3=1.0297,
            bar4=0.5270, ebar2=1.4256)
ACF = [-1.0817, 4.4344, 1.6179, 3.6013, 1.3041, -2.6991, -3.5755, -2.1323, -2.4128, 0.5062,
       -1.5040, 2.3812, 2.0925, -3.3047, 1.1979, 3.1086, 4.3150, 0.8516, 3.5106, 1.1217, 4.5916, -3.2567]
RHO = 6.941
RHO_SLOW = 1.93
PULSE_LINE = 5.23
SIXTH_OF_BEAT = -5.3064        # on the full band's autocorrelation at a sixth of the beat (beat_level_cv.fit_sixth)


def predict(stem):
    """(bpm or None, r, slow-onset ratio, the winning candidate's tempo, steady-pulse consistency) as
    TempoEstimator decides: r, the slow-onset ratio and the consistency are read at the candidate of the
    highest score without the sixth-of-beat term (they decide whether there is a tempo), the tempo is the
    candidate of the highest score with it."""
    f = tc.track_features(stem)
    if not bl.gate(f): return None, 0.0, 0.0, None, 0.0
    bt = bl.track_beats(stem, f['cs'], False)
    z = [sum(BEAT[k] * r[k] for k in BEAT) + float(np.dot(ACF, x)) for r, x in zip(bt['rows'], f['X'])]
    k = int(np.argmax(z)); i = int(np.argmax(np.array(z) + SIXTH_OF_BEAT * bl.sixth_of_beat(f)))
    r = bt['rows'][k]['r']; rs = bl.slow_onset_ratio(stem, f['cs'][k])
    t = bl.steady_pulse(stem, f['cs'][k])[1]
    confidence = max(r / (r + RHO), rs / (rs + RHO_SLOW), t / (t + PULSE_LINE))
    return (None if confidence < 0.5 else bl.final_bpm(f, i)), r, rs, f['cs'][i], t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    tc.add_data_arguments(ap)
    a = ap.parse_args()
    out = {}
    for source, name, wav, truth, stem in tc.track_list(a):
        if not os.path.exists(stem + '.f32') or os.path.getsize(stem + '.f32') == 0: continue
        out[wav] = predict(stem)[0]
    json.dump(out, open(a.out, 'w'), indent=1)
    print(f'{len(out)} tracks')


if __name__ == '__main__':
    main()
