#!/usr/bin/env python3
"""nested_cv.py -- variants of the level model's fit, chosen inside the folds (tried for 0.5.6 and after,
none shipped: docs/tempo-dev-set.md, "Version 0.5.6" and "After 0.5.6").

Every variant keeps the shipped procedure of beat_level_cv.py (beat+acf22: beat features and the 22
autocorrelation features, mean of the ridge fits at 0.3, 3 and 30, the midway r threshold) and
changes one thing:
  shipped           nothing
  real2, real4      every real-music track (modules, MIDI, LMMS) counted 2 or 4 times in the fit
  tempo-x           8 more features: x = log2(T/110) times eb, eo, lb, lo, bar2, bar3, bar4, ebar2, so
                    the evidence of each level may count differently at slow and fast tempi
  balanced          each track weighted n^-1/2, n = its source's track count (weights of mean 1), so
                    the big sources (simutrans, the groove seeds) weigh less
  tempo-x+balanced  both
  jackknife         the mean of the fits leaving out each training source in turn
In each outer fold (leave one source out) an inner leave-one-source-out over the training sources
picks the variant whose inner held-out level choice is right on the most real-music tracks (ties: the
earlier in --variants); that variant, fitted on the whole training side, scores the outer fold.
Prints the outer held-out table, and what all data would pick. --plain instead prints each variant's
held-out table without a choice (for a single variant, or to see what the choice was between).

  nested_cv.py --variants shipped,real2,real4 [--lmms DIR] ...   (0.5.6; 3-6 minutes on 2 cores)
  nested_cv.py --variants shipped,tempo-x,balanced,tempo-x+balanced --lmms DIR   (after 0.5.6)
  nested_cv.py --variants jackknife --plain --lmms DIR
Reads the caches of tempo_cv.py and beat_level_cv.py (run those first).
"""
import argparse, os, sys
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import beat_level_cv as blc  # noqa: E402
import tempo_cv as tc        # noqa: E402

LAMS = [0.3, 3.0, 30.0]
TEMPO_X = ('eb', 'eo', 'lb', 'lo', 'bar2', 'bar3', 'bar4', 'ebar2')
VARIANTS = ('shipped', 'real2', 'real4', 'tempo-x', 'balanced', 'tempo-x+balanced', 'jackknife')


def is_real(it):
    return not it['source'].startswith('grooves:')


def key_of(variant):
    return 'tempo_x' if variant.startswith('tempo-x') else 'both'


def add_tempo_x(items, feats):
    ix = [feats.index(f) for f in TEMPO_X]; xi = feats.index('x')
    for it in items:
        B = it['beat']
        it['tempo_x'] = np.hstack([it['both'], B[:, ix] * B[:, [xi]]]) if len(B) else np.zeros((0, it['both'].shape[1] + len(ix)))


def fit(train, variant):
    key = key_of(variant)
    if variant in ('real2', 'real4'):
        w = int(variant[-1])
        return blc.fit_level_model(train + [it for it in train if is_real(it) and it['truth']] * (w - 1), key, LAMS)[0]
    if variant.endswith('balanced'):
        n = {}
        for it in train: n[it['source']] = n.get(it['source'], 0) + 1
        wts = np.array([n[it['source']] ** -0.5 for it in train])
        return blc.fit_level_model(train, key, LAMS, weights=wts / wts.mean())[0]
    if variant == 'jackknife':
        srcs = sorted({it['source'] for it in train})
        return np.mean([blc.fit_level_model([it for it in train if it['source'] != s], key, LAMS)[0] for s in srcs], axis=0)
    return blc.fit_level_model(train, key, LAMS)[0]


def choose(train, variants):
    score = {}
    for v in variants:
        ok = n = 0
        for s in sorted({it['source'] for it in train}):
            test = [it for it in train if it['source'] == s and is_real(it) and it['truth'] and it['y'].any()]
            if not test: continue
            W = fit([it for it in train if it['source'] != s], v)
            ok += sum(it['y'][int(np.argmax(it[key_of(v)] @ W))] for it in test); n += len(test)
        score[v] = ok / n
    best = max(score.values())
    return [v for v in variants if score[v] >= best - 1e-12][0], score


def held_out(items, pick):
    """{key: bpm or None}, each source scored by the variant pick(train) returns, fitted on train."""
    preds = {}
    for s in sorted({it['source'] for it in items}):
        train = [it for it in items if it['source'] != s]
        v = pick(train, s)
        preds.update(blc.predict_fold(train, [it for it in items if it['source'] == s], key_of(v), fit(train, v))[0])
    return preds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--variants', default='shipped,real2,real4', help=f'comma list of {", ".join(VARIANTS)}')
    ap.add_argument('--plain', action='store_true', help="each variant's held-out table, no choice")
    tc.add_data_arguments(ap)
    a = ap.parse_args()
    variants = a.variants.split(',')
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f'unknown variant {", ".join(unknown)}: choose from {", ".join(VARIANTS)}')
    items = blc.load_items(a)
    add_tempo_x(items, blc.FEATS)
    if a.plain:
        for v in variants:
            tc.table(f'held out: {v}', held_out(items, lambda train, s: v), items)
        return

    def pick(train, s):
        v, inner = choose(train, variants)
        print(f'# fold {s}: {v}, inner ' + ', '.join(f'{k}: {x:.4f}' for k, x in inner.items()), flush=True)
        return v
    tc.table('held out: the variant an inner leave-one-source-out picks', held_out(items, pick), items)
    v, inner = choose(items, variants)
    print(f'all data would pick {v} (' + ', '.join(f'{k}: {x:.4f}' for k, x in inner.items()) + ')')


if __name__ == '__main__':
    main()
