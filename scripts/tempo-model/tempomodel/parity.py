"""The parity fixtures: onset dumps the Swift and this twin both run, and what the twin makes of them.

  python3 -m tempomodel.parity --cache CACHE [--data DATA] --out Fixtures/tempo-model

Takes the first PARITY_S seconds of one dump of each kind of training track (a module, a tempo-scaled
MIDI song, a shuffle, a groove of the wide set, a beatless clip), stores each as Float16 (NAME.f16, with
NAME.json holding its loudness, which sets the onset floor) and writes parity.json: for each, the
candidates, every named feature of each candidate, both scores and the decision under the model file in
the tree (model.SWIFT_PATH). TempoModelTests replays the same dumps through the Swift
(OnsetEnvelope.replay → TempoEstimator.weigh / estimate) and compares.
"""
import argparse
import json
import os

import numpy as np

from . import data
from . import envelope as env
from . import level
from . import model as tm

PARITY_S = 30.0
KINDS = (('modules', lambda t: True), ('midi-scaled', lambda t: True), ('shuffles', lambda t: t.truth is not None),
         ('grooves-wide', lambda t: t.truth is not None), ('grooves-wide', lambda t: t.truth is None))


def twin(stem, m):
    floor_q = data.floor_quarter_octaves(data.track_lufs(stem))
    f = data.features_of(env.load(stem + '.f16'), floor_q)
    rows = level.beat_rows(level.segment_envelopes(stem), f['cs']) if f['cs'] else []
    X = tm.feature_matrix(f, rows)
    d = tm.decide(m, f, rows, stem)
    return dict(candidates=[float(c) for c in f['cs']], features=[dict(zip(tm.FEATURES, map(float, x))) for x in X],
                scores=d['scores'], levelScores=d['level_scores'], onBeatRatio=[float(r['r']) for r in rows],
                bpm=d['bpm'], beatIndex=d['beat_index'], levelIndex=d['level_index'])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--data', default=os.path.expanduser('~/.cache/naviscan-tempo-model'))
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/naviscan-tempo-model/dumps'))
    ap.add_argument('--out', required=True)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    m = tm.read(os.path.join(root, tm.SWIFT_PATH))
    tracks = [t for t in data.track_list(a.data, a.cache) if os.path.exists(t.stem + '.f32')]
    os.makedirs(a.out, exist_ok=True)
    for f in os.listdir(a.out):
        if f.endswith(('.f16', '.json')): os.remove(os.path.join(a.out, f))
    chosen, out = [], []
    for kind, rule in KINDS:
        t = next(t for t in sorted(tracks, key=lambda t: t.stem) if t.set == kind and rule(t) and t not in chosen)
        chosen.append(t)
        name = f'{len(chosen)}-{kind}'
        L = np.fromfile(t.stem + '.f32', dtype='<f4').reshape(-1, env.NBANDS)[:int(PARITY_S * env.FR)]
        stem = os.path.join(a.out, name)
        L.astype('<f2').tofile(stem + '.f16')
        json.dump(dict(lufs=data.track_lufs(t.stem), source=os.path.relpath(t.wav, a.data), truth=t.truth),
                  open(stem + '.json', 'w'))
        out.append(dict(name=name, **twin(stem, m)))
    doc = dict(generator='tempomodel.parity', seconds=PARITY_S, bands=env.NBANDS, model=dict(
        weights=m.weights, levelOnlyWeights=m.level_only, thresholds=m.thresholds), tracks=out)
    with open(os.path.join(a.out, 'parity.json'), 'w') as f:
        json.dump(doc, f, indent=1)
    print(f'# {len(out)} parity dumps in {a.out}')


if __name__ == '__main__':
    main()
