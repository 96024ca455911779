#!/usr/bin/env python3
"""phase_cv.py -- where BeatPhase's two weights come from, and their leave-one-package-out figures.

  phase_cv.py PROFILES [--cache DIR] [--styles DIR] [--midi DIR] [--lmms DIR]

PROFILES holds naviscan profiles (`naviscan analyze FILE --dj`) of the rendered grooves as
PROFILES/seedN/NAME.json and of the MIDI dev set's WAVs as PROFILES/midi/<relative_path without .wav>.json;
--cache holds tempo_cv.py's onset-band dumps of the same files (STEM.f32).

For every segment of every grid (k = 0..count-1 at start + k*interval), the segment moved by 0, 1/4,
1/2 and 3/4 of its interval gives four candidates; a candidate's features are the means over its beats
of the low-band and the high-band emphasised envelopes (quantised as the Swift keeps them, each over
its standard deviation) and of the smaller of those two at each hop (the kick: a low thump with a
beater's click, where a bass note has no click and a hi-hat no thump), each at its largest within
+-1 hop of the beat. The four candidates of a
segment are the same whichever of them the grid holds (they differ by whole quarters of an interval,
modulo one interval), so profiles made with or without the phase step give nearly the same fit (not
exactly: the grid is extended to the sound's start and end from the moved segments, so edge beats
differ; docs/tempo-dev-set.md, "Correction", has the size of it). A segment's
label is the candidate with the highest beat F-measure against the truth inside the segment's span
(segments of 4 beats or more whose best candidate reaches F >= 0.5: the tempo is right).

A conditional logit over the four candidates (ridge lam chosen inside each fold by an inner
leave-one-source-out split of the training sources) is fitted with one source left out at a time
(grooves by seed, MIDI by package, the LMMS songs as one); each left-out track is then scored with every segment moved to its
predicted candidate. Prints per source the held-out mean beat F, the F of the grids as given, the best
reachable, and the weights; then the all-data weights (what BeatPhase carries: fitted with --lmms on
profiles whose grids had the two-band phase step only, without the kick term).
"""
import argparse, json, os, sys
import numpy as np
from scipy.optimize import minimize
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tempo-model')); sys.path.insert(0, HERE)
import fit_tempo_model as ftm                 # noqa: E402
from beat_level_cv import quant, wmax         # noqa: E402
from score_beats import f_measure             # noqa: E402

FR = ftm.FR
OFFSETS = (0, 0.25, 0.5, 0.75)
LAMS = (0.1, 1, 10)


def tracks(a):
    for seed in ('seed1', 'seed2'):
        tp = os.path.join(a.styles, seed, 'truth.json')
        if not os.path.exists(tp): continue
        for c in json.load(open(tp))['clips']:
            if c['beats_s']:
                yield ('grooves:' + seed, c['beats_s'], os.path.join(a.cache, 'styles', seed, c['name'] + '.wav.f32'),
                       os.path.join(a.profiles, seed, c['name'] + '.json'))
    tp = os.path.join(a.midi, 'truth.json')
    if os.path.exists(tp):
        for x in json.load(open(tp))['tracks']:
            rp = x['relative_path']
            if x['format'] != 'wav': continue
            bs = json.loads(x['beats_s']) if isinstance(x['beats_s'], str) else x['beats_s']
            yield ('midi:' + x['package'], bs, os.path.join(a.cache, 'midi', rp + '.f32'),
                   os.path.join(a.profiles, 'midi', rp[:-4] + '.json'))
    if a.lmms:
        for x in json.load(open(os.path.join(a.lmms, 'truth.json')))['tracks']:
            rp = x['relative_path']
            yield ('lmms:' + x['package'], x['beats_s'], os.path.join(a.cache, 'lmms', rp + '.f32'),
                   os.path.join(a.profiles, 'lmms', rp[:-4] + '.json'))


FEATURES = ('low', 'high', 'kick')


def envelopes(dump, start_hop):
    """The low and high envelopes over their standard deviations, and the smaller of the two per hop
    (0 where either is constant, as BeatPhase has it)."""
    B = ftm.load(dump)
    low, high = (quant(ftm.emph(B[k]))[start_hop:] for k in ('low', 'high'))
    if low.std() > 0 and high.std() > 0:
        low, high = low / low.std(), high / high.std()
        return [low, high, np.minimum(low, high)]
    return [low / low.std() if low.std() > 0 else low, high / high.std() if high.std() > 0 else high, np.zeros_like(low)]


def load(a):
    rows = []
    for src, truth, dump, prof in tracks(a):
        if not (os.path.exists(dump) and os.path.exists(prof)): continue
        segs = (json.load(open(prof)).get('beat_grid') or {}).get('segments') or []
        if not segs: continue
        full = quant(ftm.emph(ftm.load(dump)['all']))
        first = int(np.flatnonzero(full > 0)[0]) if (full > 0).any() else 0
        envs = envelopes(dump, first)
        n = len(envs[0])
        track = []
        for s in segs:
            X, F = [], []
            for o in OFFSETS:
                t = s['start'] + (np.arange(s['count']) + o) * s['interval']
                h = np.clip(np.round(t * FR).astype(int) - 1 - first, 0, n - 1)   # dump row i = hop i + 1
                X.append([wmax(v, h).mean() for v in envs])
                lo, hi = s['start'] - s['interval'] / 2, s['start'] + (s['count'] - 0.5) * s['interval']
                F.append(f_measure([b for b in truth if lo <= b < hi], list(t), skip=0))
            track.append(dict(X=np.array(X), F=np.array(F), seg=s))
        rows.append(dict(src=src, truth=truth, segs=track))
    return rows


def clogit(items, lam):
    """Ridge conditional logit: each item's candidates are the rows of item['X'], the label the one
    with the highest item['F']; returns the weights."""
    def nll(w):
        tot, g = 0.0, np.zeros_like(w)
        for it in items:
            z = it['X'] @ w; z -= z.max(); p = np.exp(z); p /= p.sum(); y = int(np.argmax(it['F']))
            tot -= np.log(p[y] + 1e-12); g -= it['X'][y] - p @ it['X']
        return tot + lam * w @ w, g + 2 * lam * w
    return minimize(nll, np.zeros(items[0]['X'].shape[1]), jac=True, method='L-BFGS-B').x


def fit(rows, lam):
    return clogit([g for r in rows for g in r['segs'] if g['seg']['count'] >= 4 and g['F'].max() >= 0.5], lam)


def track_f(r, choose):
    beats = []
    for g in r['segs']:
        s = g['seg']; o = OFFSETS[choose(g)]
        beats += list(s['start'] + (np.arange(s['count']) + o) * s['interval'])
    return f_measure(r['truth'], sorted(beats))


def held_out(train, test, lam):
    w = fit(train, lam)
    return [track_f(r, lambda g: int(np.argmax(g['X'] @ w))) for r in test], w


def choose_lam(train):
    srcs = sorted({r['src'] for r in train})
    def inner(lam):
        return np.mean([f for s in srcs for f in held_out([r for r in train if r['src'] != s],
                                                           [r for r in train if r['src'] == s], lam)[0]])
    return max(LAMS, key=inner)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('profiles')
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/naviscan-tempo-cv'))
    ap.add_argument('--styles', default=os.path.expanduser('~/.cache/naviscan-similarity/work/styles'))
    ap.add_argument('--midi', default=os.path.expanduser('~/.cache/naviscan-miditempo'))
    ap.add_argument('--lmms', help='add the LMMS demo songs (scripts/lab/lmmstempo OUTDIR; profiles in PROFILES/lmms/NAME.json)')
    a = ap.parse_args()
    rows = load(a)
    srcs = sorted({r['src'] for r in rows})
    print(f'{len(rows)} tracks with a grid, {sum(len(r["segs"]) for r in rows)} segments')
    print('| left out | tracks | held-out beat F mean / median | grids as given | best offset per segment | lam | ' + ', '.join(f'w_{f}' for f in FEATURES) + ' |')
    print('|---|---|---|---|---|---|---|')
    pooled = []
    for s in srcs:
        train = [r for r in rows if r['src'] != s]; test = [r for r in rows if r['src'] == s]
        lam = choose_lam(train)
        fs, w = held_out(train, test, lam)
        pooled += fs
        given = [track_f(r, lambda g: 0) for r in test]
        best = [track_f(r, lambda g: int(np.argmax(g['F']))) for r in test]
        print(f'| {s} | {len(test)} | {np.mean(fs):.3f} / {np.median(fs):.3f} | {np.mean(given):.3f} | {np.mean(best):.3f} '
              f'| {lam} | ' + ', '.join(f'{x:.2f}' for x in w) + ' |')
    print(f'pooled held-out mean {np.mean(pooled):.3f} over {len(pooled)} tracks')
    lam = choose_lam(rows)
    w = fit(rows, lam)
    print(f'all data: lam {lam}, ' + ', '.join(f'w_{f} {x:.4f}' for f, x in zip(FEATURES, w)))


if __name__ == '__main__':
    main()
