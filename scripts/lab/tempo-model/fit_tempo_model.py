#!/usr/bin/env python3
"""Fits the octave-decision weights of naviscan's TempoEstimator (a conditional logit over metrical
candidates) from onset-band dumps, and reports cross-validated accuracy.

Each SET is DIR[:WEIGHT]; DIR holds truth.json (make_tempo_corpus.py or synth_grooves.py format) and
bands/NAME.wav.f32 (or bands/NAME.f32), written by `naviscan analyze NAME.wav --dj --dump-onset-bands DIR/bands/NAME.f32`.
The feature code mirrors Sources/NaviscanCore/Tempo (OnsetEnvelope, TempoEstimator): keep them in step.

  fit_tempo_model.py [--lam 0.3] [--test DIR] SET [SET ...]
prints the accuracy per set (training and 8-fold CV), the accuracy on --test, and the Swift weights.
"""
import argparse, json, os
import numpy as np

FR = 22050 / 221                         # envelope frames per second (221-sample hop at 22.05 kHz)
NBANDS = 37                              # the nominal 40 bands (30 Hz-16 kHz) below 0.455 x 22.05 kHz
MAXLAG = int(FR * 60 / 40 * 4) + 2       # four beats at 40 BPM
BANDS = ['all', 'low', 'mid', 'high']    # full = low + mid + high; band index splits 12 and 27
MULTS = (0.5, 1, 2, 3, 4)                # lags in beats
RATIOS = (1/4, 1/3, 1/2, 2/3, 3/4, 1, 4/3, 3/2, 2, 3, 4)


def load(path):
    L = np.fromfile(path, dtype='<f4').reshape(-1, NBANDS).astype(np.float64)
    prev = np.maximum(np.vstack([L[:1], L[:-1]]), np.vstack([L[:1], L[:1], L[:-2]]))
    d = np.maximum(0, L - prev)[1:]      # rise against the louder of the two previous hops
    low, mid, high = d[:, :12].sum(1), d[:, 12:27].sum(1), d[:, 27:].sum(1)
    return {'all': low + mid + high, 'low': low, 'mid': mid, 'high': high}


def emph(e):
    k = int(FR * 0.5); c = np.concatenate([[0], np.cumsum(e)]); n = len(e); i = np.arange(n)
    lo = np.maximum(0, i - k); hi = np.minimum(n, i + k + 1)
    return np.maximum(0, e - (c[hi] - c[lo]) / (hi - lo))


def acf(x, maxlag=MAXLAG):
    # StreamingAutocorrelation's rule: a region whose variance is at most 1e-12 * max(1, mean^2) is
    # constant (nil in the Swift, whose features are then 0): a near-silent band's rounding dust
    # (variance ~1e-13 in a -45 dBFS pad's high band) has no periodicity to offer
    mean = x.mean()
    if not np.mean((x - mean) ** 2) > 1e-12 * max(1.0, mean * mean):
        return np.zeros(maxlag + 1)
    x = x - mean; n = len(x); f = np.fft.rfft(x, 2 * n)
    r = np.fft.irfft(f * np.conj(f))[:maxlag + 1] / np.arange(n, n - maxlag - 1, -1)
    return r / r[0] if r[0] > 0 else r


def at(r, l):
    i = int(l); f = l - i
    return r[i] * (1 - f) + r[i + 1] * f if i + 1 < len(r) else 0.0


def salience(r, t):
    tau = FR * 60 / t
    return sum(at(r, tau * k) / k for k in range(1, 5) if tau * k < len(r) - 1)


def refine(r, t):
    best, bs = t, salience(r, t)
    for u in np.arange(t * 0.97, t * 1.03, 0.05):
        s = salience(r, u)
        if s > bs: bs, best = s, u
    return best


def features(R, t):
    tau = FR * 60 / t; x = np.log2(t / 110)
    return np.array([at(R[k], tau * m) for k in BANDS for m in MULTS] + [x, x * x])


def candidates(R):
    grid = np.arange(40, 250, 0.5); s = np.array([salience(R['all'], t) for t in grid]); seed = grid[s.argmax()]
    cs = []
    for q in RATIOS:
        if 57 <= seed * q <= 205:
            t = refine(R['all'], seed * q)
            if all(abs(t - c) / c > 0.03 for c in cs): cs.append(t)
    return cs


def read_set(spec):
    d, _, w = spec.partition(':')
    truth = json.load(open(f'{d}/truth.json')); clips = truth['clips'] if isinstance(truth, dict) else truth
    items = []
    for c in clips:
        if not c.get('bpm'): continue
        path = next((p for p in (f"{d}/bands/{c['name']}.wav.f32", f"{d}/bands/{c['name']}.f32") if os.path.exists(p)), None)
        if path is None: continue
        E = load(path); R = {k: acf(emph(E[k])) for k in BANDS}
        cs = candidates(R)
        items.append(dict(set=d, weight=float(w or 1), name=c['name'], bpm=c['bpm'], cs=cs,
                          X=np.array([features(R, t) for t in cs]),
                          y=np.array([abs(t - c['bpm']) <= 0.04 * c['bpm'] for t in cs], float)))
    return items


def fit(items, lam, iters=3000, lr=0.05):
    w = np.zeros(items[0]['X'].shape[1])
    for _ in range(iters):
        g = lam * w
        for it in items:
            if not it['y'].any(): continue
            z = it['X'] @ w; p = np.exp(z - z.max()); p /= p.sum()
            g += it['weight'] * it['X'].T @ (p - it['y'] / it['y'].sum())
        w -= lr * g / len(items)
    return w


def accuracy(items, w):
    out = {}
    for it in items:
        ok, n = out.get(it['set'], (0, 0)); out[it['set']] = (ok + it['y'][np.argmax(it['X'] @ w)], n + 1)
    return {k: f'{int(a)}/{b}' for k, (a, b) in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('sets', nargs='+'); ap.add_argument('--lam', type=float, default=0.3); ap.add_argument('--test')
    a = ap.parse_args()
    items = [it for s in a.sets for it in read_set(s)]
    w = fit(items, a.lam)
    print('training accuracy:', accuracy(items, w))
    idx = np.random.default_rng(0).permutation(len(items)); folds = np.array_split(idx, 8); cv = {}
    for f in folds:
        wf = fit([items[i] for i in idx if i not in f], a.lam, iters=1500)
        for i in f:
            ok, n = cv.get(items[i]['set'], (0, 0)); cv[items[i]['set']] = (ok + items[i]['y'][np.argmax(items[i]['X'] @ wf)], n + 1)
    print('8-fold CV accuracy:', {k: f'{int(x)}/{n}' for k, (x, n) in cv.items()})
    if a.test: print('test accuracy:', accuracy(read_set(a.test), w))
    print('static let weights: [Double] = [')
    for row in (w[0:5], w[5:10], w[10:15], w[15:20], w[20:22]): print('    ' + ', '.join('%.4f' % v for v in row) + ',')
    print(']')


if __name__ == '__main__':
    main()
