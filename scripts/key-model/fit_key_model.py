#!/usr/bin/env python3
"""Fits the key model in folds by source and writes the shipped weights (`make key-model`).

Reads the dumps of dump_features.py (what the Swift key decision reads, per track: a value per
feature for each of the 24 keys, and the track's key clarity). The model: a conditional logit over
the 24 keys, score = Σ weight[name] · feature[name], L2 strength fixed in advance (LAMBDA); the key
clarity below which a track has no key is the CLARITY_QUANTILE of the fitting tracks' clarity. Both
constants, the feature set and the decision rule were fixed before any fold figure was read.

Each source (a generator seed, a Debian package) is a fold: the model is fitted on the others and
judged on it. The variants in VARIANTS are reported beside the shipped one; the shipped weights are
then fitted on every track and written, by name, with their provenance, to
Sources/NaviscanCore/Key/KeyModel+Shipped.swift, and Fixtures/key/parity.json holds a few dumps with
the probabilities this script computes for them (the Swift twin must give the same).

usage: fit_key_model.py --dumps DIR [--write]
"""
import argparse, hashlib, json, math, os, subprocess, sys
import numpy as np
from scipy.optimize import minimize

LAMBDA = 1.0
CLARITY_QUANTILE = 0.01
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VARIANTS = {
    'krumhansl template (no fit)': None,
    'edma template (no fit)': None,
    'logit, treble only': lambda n: n in ('treble.krumhansl', 'treble.edma', 'treble.triad', 'mode.minor'),
    'logit, no learned profiles': lambda n: n.count('.') < 2 or n.startswith('bass.') and not n.split('.')[-1].isdigit(),
    'logit, learned profiles only': lambda n: n.split('.')[-1].isdigit() or n == 'mode.minor',
    'logit, all features (shipped)': lambda n: True,
}


def mirex(est, truth):
    """MIREX key score of key index est against truth (0-11 major C..B, 12-23 minor)."""
    if est is None:
        return 0.0
    et, em = est % 12, est // 12
    tt, tm = truth % 12, truth // 12
    if est == truth:
        return 1.0
    if em == tm and ((et - tt) % 12 in (5, 7)):
        return 0.5
    if em != tm and ((em == 1 and (tt - et) % 12 == 3) or (em == 0 and (et - tt) % 12 == 3)):
        return 0.3
    if et == tt and em != tm:
        return 0.2
    return 0.0


def load(dumps):
    manifest = json.load(open(os.path.join(dumps, 'manifest.json')))
    rows = []
    names = None
    for item in manifest:
        d = json.load(open(os.path.join(dumps, item['dump'])))
        if not d['values']:
            continue
        names = d['names']
        rows.append(dict(item, X=np.array(d['values'], dtype=float), clarity=d['clarity'], pitch_classes=d.get('pitch_classes', 12),
                         y=(12 if item['minor'] else 0) + item['key_pc']))
    return rows, names


def fit(rows, cols):
    X = np.stack([r['X'][:, cols] for r in rows])          # tracks × 24 × features
    y = np.array([r['y'] for r in rows])

    def loss(w):
        s = X @ w
        s = s - s.max(axis=1, keepdims=True)
        logp = s - np.log(np.exp(s).sum(axis=1, keepdims=True))
        p = np.exp(logp)
        value = -logp[np.arange(len(y)), y].sum() + LAMBDA * w @ w
        onehot = np.zeros_like(p)
        onehot[np.arange(len(y)), y] = 1
        grad = -np.einsum('tk,tkf->f', onehot - p, X) + 2 * LAMBDA * w
        return value, grad

    r = minimize(loss, np.zeros(len(cols)), jac=True, method='L-BFGS-B')
    return r.x


def probabilities(X, w):
    s = X @ w
    s = s - s.max()
    e = np.exp(s)
    return e / e.sum()


def evaluate(rows, names, variant):
    """Out-of-fold predictions: (row, estimate) for every row."""
    out = []
    sources = sorted({r['source'] for r in rows})
    for held in sources:
        train = [r for r in rows if r['source'] != held]
        test = [r for r in rows if r['source'] == held]
        threshold = float(np.quantile([r['clarity'] for r in train], CLARITY_QUANTILE))
        spec = VARIANTS[variant]
        if spec is None:
            col = names.index('treble.krumhansl' if variant.startswith('krumhansl') else 'treble.edma')
            for r in test:
                out.append((r, int(np.argmax(r['X'][:, col]))))
            continue
        cols = [i for i, n in enumerate(names) if spec(n)]
        w = fit(train, cols)
        for r in test:
            # KeyModel.minimumPitchClasses: fixed, not fitted.
            nokey = r['clarity'] < threshold or r['pitch_classes'] < 3
            est = None if nokey else int(np.argmax(probabilities(r['X'][:, cols], w)))
            out.append((r, est))
    return out


def table(pairs, by):
    groups = {}
    for r, est in pairs:
        groups.setdefault(by(r), []).append((r, est))
    lines = []
    for g in sorted(groups):
        ps = groups[g]
        scores = [mirex(e, r['y']) for r, e in ps]
        exact = sum(1 for r, e in ps if e == r['y'])
        kinds = {k: sum(1 for s in scores if abs(s - k) < 1e-9) for k in (0.5, 0.3, 0.2)}
        nokey = sum(1 for _, e in ps if e is None)
        lines.append(f'| {g} | {len(ps)} | {np.mean(scores):.3f} | {100 * exact / len(ps):.1f} | '
                     f"{kinds[0.5]} / {kinds[0.3]} / {kinds[0.2]} | {nokey} |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--dumps', required=True)
    ap.add_argument('--write', action='store_true', help='write the shipped weights and the parity fixture')
    a = ap.parse_args()
    rows, names = load(a.dumps)
    print(f'{len(rows)} tracks, sources: ' + ', '.join(f"{s} {sum(1 for r in rows if r['source'] == s)}"
                                                    for s in sorted({r['source'] for r in rows})))
    header = ['| fold | tracks | MIREX | exact % | fifth / relative / parallel | no key |', '|---|---|---|---|---|---|']
    for variant in VARIANTS:
        pairs = evaluate(rows, names, variant)
        print(f'\n### {variant}')
        print('\n'.join(header + table(pairs, lambda r: r['source']) + table(pairs, lambda r: 'all')))
        if variant.endswith('(shipped)'):
            print('\nby style / mode:')
            print('\n'.join(header + table(pairs, lambda r: f"{r['style']}") + table(pairs, lambda r: 'minor' if r['minor'] else 'major')))
    if not a.write:
        return
    w = fit(rows, list(range(len(names))))
    threshold = float(np.quantile([r['clarity'] for r in rows], CLARITY_QUANTILE))
    manifest = open(os.path.join(a.dumps, 'manifest.json'), 'rb').read()
    commit = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
    sources = ', '.join(f"{s} ({sum(1 for r in rows if r['source'] == s)})" for s in sorted({r['source'] for r in rows}))
    lines = [
        '// Generated by scripts/key-model/fit_key_model.py --write (make key-model): do not edit.',
        f'// Data: {len(rows)} tracks; manifest sha256 {hashlib.sha256(manifest).hexdigest()[:16]}; sources: {sources}.',
        f'// Fitted at commit {commit}; L2 {LAMBDA}; clarity floor = the {CLARITY_QUANTILE:.0%} quantile of the tracks\' clarity.',
        'extension KeyModel {',
        '    public static let shipped = KeyModel(weights: [',
    ] + [f'        "{n}": {w[i]:.6f},' for i, n in enumerate(names)] + [
        f'    ], minimumClarity: {threshold:.6f})',
        '}',
    ]
    path = os.path.join(ROOT, 'Sources/NaviscanCore/Key/KeyModel+Shipped.swift')
    open(path, 'w').write('\n'.join(lines) + '\n')
    # The parity fixture: a few tracks of each source, with the probabilities computed here.
    rounded = {n: float(f'{w[i]:.6f}') for i, n in enumerate(names)}
    wr = np.array([rounded[n] for n in names])
    picks = [next(r for r in rows if r['source'] == s) for s in sorted({r['source'] for r in rows})][::2]
    fixture = dict(names=names, weights=rounded, minimum_clarity=float(f'{threshold:.6f}'), tracks=[])
    for r in picks:
        X = np.round(r['X'], 6)
        fixture['tracks'].append(dict(id=r['id'], values=X.tolist(), clarity=round(r['clarity'], 6),
                                      probabilities=probabilities(X, wr).tolist()))
    os.makedirs(os.path.join(ROOT, 'Fixtures/key'), exist_ok=True)
    json.dump(fixture, open(os.path.join(ROOT, 'Fixtures/key/parity.json'), 'w'))
    print(f'\nwrote {path} and Fixtures/key/parity.json')


if __name__ == '__main__':
    main()
