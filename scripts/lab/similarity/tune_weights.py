#!/usr/bin/env python3
"""tune_weights.py OUTDIR STORE_DB [--weights t,s,n,r,d] -- naviscan's similarity, cross-validated by source.

Reads the features naviscan stored for OUTDIR/library (a scan with DJ profiles: `naviscan scan
OUTDIR/library --no-vis -o DIR`, STORE_DB = DIR/naviscan.db) and OUTDIR/labels.json, and repeats
naviscan's distance in numpy (SimilarityIndex.swift): per component a robust z-score over the tracks
in play (median, 1.4826 x MAD, floored at 1e-3 x max(1, |median|), clipped to +-4), group weights
spread over each group's components, Euclidean distance, leave-one-out k nearest.

Folds split by source: fold A = the styles rendered with seed 1 and every other package (sorted by
name), fold B = seed 2 and the remaining packages. For each fold the group weights are chosen on the
other fold (grid {0, 0.5, 1, 2} per group, by mean precision@5, ties to the smaller total weight) and
scored on the held-out fold, whose own tracks are the candidates and its own normalisation the scale
(as on a user's library: normalisation needs no labels). The librosa MFCC baseline (features cached
by librosa_baseline.py in OUTDIR/work/librosa-mfcc.json) is scored on the same held-out folds.
--weights scores one weighting on both folds without choosing (e.g. the shipped one).
Prints per fold and per group precision@5 and 1-NN, and the weights each fold chose.
"""
import argparse
import itertools
import json
import os
import sqlite3
import struct
import sys

import numpy as np

GROUPS = [('timbre', 24), ('shape', 11), ('tonal', 3), ('rhythm', 3), ('dynamics', 2)]
FEATURES_VERSION = 1
GRID = [0.0, 0.5, 1.0, 2.0]


def load_features(db_path):
    db = sqlite3.connect(f'file:{db_path}?mode=ro', uri=True)
    rows = db.execute('SELECT relative_path, features FROM track WHERE status = ? AND features IS NOT NULL AND features_version = ?',
                      ('ok', FEATURES_VERSION)).fetchall()
    dim = sum(n for _, n in GROUPS)
    out = {}
    for path, blob in rows:
        if len(blob) != 4 * dim:
            sys.exit(f'{path}: {len(blob)} bytes of features, expected {4 * dim}: another features version?')
        out['library/' + path] = np.array(struct.unpack(f'<{dim}f', blob), dtype=np.float64)
    return out


def normalise(matrix):
    median = np.median(matrix, axis=0)
    mad = np.median(np.abs(matrix - median), axis=0) * 1.4826
    scale = np.maximum(mad, 1e-3 * np.maximum(1, np.abs(median)))
    return np.clip((matrix - median) / scale, -4, 4)


def weight_vector(weights):
    return np.concatenate([np.full(n, w / n) for (_, n), w in zip(GROUPS, weights)])


def neighbours(z, w, k=5):
    x = z * np.sqrt(w)
    d = ((x[:, None, :] - x[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1, kind='stable')[:, :k]


def score(paths, labels, nn, scored):
    """Mean precision@5 and 1-NN over the scored queries, per group and overall."""
    by_group = {}
    for i, p in enumerate(paths):
        if not scored[i]:
            continue
        same = [labels[paths[j]]['label'] == labels[p]['label'] and labels[paths[j]]['group'] == labels[p]['group'] for j in nn[i]]
        g = labels[p]['group']
        by_group.setdefault(g, []).append((np.mean(same), 1.0 if same[0] else 0.0))
    out = {g: (np.mean([a for a, _ in v]), np.mean([b for _, b in v]), len(v)) for g, v in by_group.items()}
    allv = [x for v in by_group.values() for x in v]
    out['overall'] = (np.mean([a for a, _ in allv]), np.mean([b for _, b in allv]), len(allv))
    return out


def scored_mask(paths, labels):
    counts = {}
    for p in paths:
        counts[(labels[p]['group'], labels[p]['label'])] = counts.get((labels[p]['group'], labels[p]['label']), 0) + 1
    return [counts[(labels[p]['group'], labels[p]['label'])] > 1 for p in paths]


def evaluate(paths, labels, matrix, weights):
    z = normalise(matrix)
    return score(paths, labels, neighbours(z, weight_vector(weights)), scored_mask(paths, labels))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('outdir')
    ap.add_argument('store')
    ap.add_argument('--weights', help='score this weighting (timbre,shape,tonal,rhythm,dynamics) instead of choosing')
    a = ap.parse_args()
    labels = json.load(open(os.path.join(a.outdir, 'labels.json')))['tracks']
    features = load_features(a.store)
    missing = sorted(set(labels) - set(features))
    if missing:
        print(f'{len(missing)} labelled tracks have no naviscan features (silent or not scanned): {missing[:5]}')
    librosa_cache = os.path.join(a.outdir, 'work', 'librosa-mfcc.json')
    librosa = {}
    if os.path.exists(librosa_cache):
        for k, v in json.load(open(librosa_cache)).get('features', {}).items():
            librosa[k] = np.array(v['v'], dtype=np.float64)
    packages = sorted({t['source'] for t in labels.values() if t['group'] == 'packages'})
    fold_of_package = {p: 'A' if i % 2 == 0 else 'B' for i, p in enumerate(packages)}

    def fold(p):
        t = labels[p]
        if t['group'] == 'styles':
            return 'A' if t['source'] == 'seed1' else 'B'
        return fold_of_package[t['source']]

    folds = {}
    for p in sorted(features):
        if p in labels:
            folds.setdefault(fold(p), []).append(p)
    headline = {}
    for held in ['A', 'B']:
        train = folds['B' if held == 'A' else 'A']
        test = folds[held]
        train_matrix = np.array([features[p] for p in train])
        if a.weights:
            chosen = [float(x) for x in a.weights.split(',')]
        else:
            best = None
            for weights in itertools.product(GRID, repeat=len(GROUPS)):
                if sum(weights) == 0:
                    continue
                s = evaluate(train, labels, train_matrix, weights)['overall'][0]
                key = (s, -sum(weights))
                if best is None or key > best[0]:
                    best = (key, weights)
            chosen = best[1]
        result = evaluate(test, labels, np.array([features[p] for p in test]), chosen)
        headline[held] = result
        print(f'fold {held} held out ({len(test)} tracks), weights chosen on the other fold: '
              + ', '.join(f'{g}={w:g}' for (g, _), w in zip(GROUPS, chosen)))
        for g, (p5, nn1, n) in sorted(result.items()):
            print(f'  naviscan {g:9s} p@5 {p5:.3f}  1-NN {nn1:.3f}  ({n} queries)')
        lib_test = [p for p in test if p in librosa]
        if len(lib_test) == len(test):
            z = normalise(np.array([librosa[p] for p in lib_test]))
            base = score(lib_test, labels, neighbours(z, np.ones(z.shape[1])), scored_mask(lib_test, labels))
            for g, (p5, nn1, n) in sorted(base.items()):
                print(f'  librosa  {g:9s} p@5 {p5:.3f}  1-NN {nn1:.3f}  ({n} queries)')
    mean = {g: tuple(np.mean([headline[f][g][i] for f in 'AB']) for i in range(2)) for g in headline['A']}
    print('held-out mean over the two folds: ' + ', '.join(f'{g} p@5 {v[0]:.3f} 1-NN {v[1]:.3f}' for g, v in sorted(mean.items())))


if __name__ == '__main__':
    main()
