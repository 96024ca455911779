#!/usr/bin/env python3
"""real_weight_cv.py -- does counting real music more in the level model's fit help? (tried for 0.5.6,
not shipped: docs/tempo-dev-set.md, "Version 0.5.6").

The shipped variant of beat_level_cv.py (beat+acf22: beat features and the 22 autocorrelation
features, mean of the ridge fits at 0.3, 3 and 30, the midway r threshold), with every real-music
track (modules, MIDI, LMMS) counted W times in the fit. W is chosen in each outer fold by an inner
leave-one-source-out over the training sources: the W whose inner held-out level choice is right on
the most real-music tracks (ties: the smaller W). Prints the outer held-out table and the W all data
would pick.

  real_weight_cv.py [--weights 1,2,4] [--lmms DIR] [--styles DIR] ...   (about 6 minutes on 2 cores)
Reads the caches of tempo_cv.py and beat_level_cv.py (run those first).
"""
import argparse, os, sys
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import beat_level_cv as blc  # noqa: E402
import tempo_cv as tc        # noqa: E402

LAMS = [0.3, 3.0, 30.0]


def is_real(it):
    return not it['source'].startswith('grooves:')


def fit(train, w):
    return blc.fit_level_model(train + [it for it in train if is_real(it) and it['truth']] * (w - 1), 'both', LAMS)[0]


def choose(train, weights):
    score = {}
    for w in weights:
        ok = n = 0
        for s in sorted({it['source'] for it in train}):
            test = [it for it in train if it['source'] == s and is_real(it) and it['truth'] and it['y'].any()]
            if not test: continue
            W = fit([it for it in train if it['source'] != s], w)
            ok += sum(it['y'][int(np.argmax(it['both'] @ W))] for it in test); n += len(test)
        score[w] = ok / n
    best = max(score.values())
    return min(w for w in weights if score[w] >= best - 1e-12), score


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--weights', default='1,2,4')
    ap.add_argument('--subset', choices=('all', 'small'), default='all')
    ap.add_argument('--modules', default=os.path.join(tc.WORK, 'modtempo'))
    ap.add_argument('--styles', default=os.path.join(tc.WORK, 'styles'))
    ap.add_argument('--midi', default=os.path.expanduser('~/.cache/naviscan-miditempo'))
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/naviscan-tempo-cv'))
    ap.add_argument('--lmms')
    a = ap.parse_args()
    weights = [int(x) for x in a.weights.split(',')]
    items = blc.load_items(a)
    preds = {}
    for s in sorted({it['source'] for it in items}):
        train = [it for it in items if it['source'] != s]
        w, inner = choose(train, weights)
        preds.update(blc.predict_fold(train, [it for it in items if it['source'] == s], 'both', fit(train, w))[0])
        print(f'# fold {s}: weight {w}, inner ' + ', '.join(f'{k}: {v:.4f}' for k, v in inner.items()), flush=True)
    tc.table('held out: real-music weight chosen by an inner leave-one-source-out', preds, items)
    w, inner = choose(items, weights)
    print(f'all data would pick weight {w} (' + ', '.join(f'{k}: {v:.4f}' for k, v in inner.items()) + ')')


if __name__ == '__main__':
    main()
