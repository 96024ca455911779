"""The metrical-level model's features, measured on each candidate's beats (MetricalLevel.swift's twin),
and its fitting: a ridge conditional logit over a track's candidates.

Per track (the first 120 s of the envelope, from the first hop whose emphasised strength is > 0):
  e = emphasised full-band onset strength, l = the same for the low band (bands 0..11), both quantised to
  1/8 octave as the Swift stores them (quant); E = e / std(e), L = l / std(l);
  for each candidate tempo T (period p = FR*60/T hops) a dynamic-programming tracker (Ellis 2007:
  C[t] = E[t] + max over d in [round(p/2), round(2p)] of C[t-d] - 100 ln(d/p)^2, a fresh start where
  that is below 0; read back from the best C of the last round(p) hops) lays down beats b, and:
     eb, eo   mean of max(E[b-1..b+1]) at the beats, and at the off-beats halfway between
     lb, lo   the same on L
     irr      std(ibi) / mean(ibi); cost: mean ln(ibi/p)^2
     bar2..4  contrast of the low band's accents at 2, 3, 4 positions; ebar2: the full band's at 2
     x, x2    x = log2(T/110)
  plus the 20 autocorrelation features (envelope.ACF_NAMES) and `sixth` (the full band's autocorrelation
  at a sixth of the beat, which only moves the tempo: "no tempo" is decided at the winner without it).
"""
import math
import os
import pickle

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from . import data
from . import envelope as env

FR = env.FR
ALPHA = 100.0                  # librosa's tightness
SEGMENT_S = 120.0              # level choice on the first 120 s from the first onset
BEAT_NAMES = ['eb', 'eo', 'lb', 'lo', 'irr', 'cost', 'bar2', 'bar3', 'bar4', 'ebar2']
TEMPO_NAMES = ['x', 'x2']
VERSION = 8


def quant(v):
    """1/8-octave code and back, as the Swift stores the envelopes."""
    v = np.asarray(v, float)
    k = np.where(v < 2.0 ** -10, 0, np.clip(np.floor(8 * np.log2(np.maximum(v, 1e-300)) + 0.5) + 80, 1, 255))
    return np.where(k == 0, 0.0, 2.0 ** ((k - 80) / 8))


def rnd(x):
    """Swift's .rounded() (half away from zero; Python's round() is half to even)"""
    return int(np.floor(x + 0.5))


def mid_counts(m, n, floor_q):
    """The mid band's r counts only where its onsets pass the track's onset floor as the full band's
    must: at least 1 % of the segment's n hops at a code of 80 + 2 floor_q or more."""
    codes = np.where(m > 0, np.floor(8 * np.log2(np.maximum(m, 1e-300)) + 0.5) + 80, 0)
    return m.mean() > 0 and np.sum((codes > 0) & (codes >= 80 + 2 * floor_q)) * 100 >= n


def dp_beats(E, p, alpha=ALPHA):
    """Beat hops of the DP tracker at period p (hops); vectorised in blocks of round(p/2) hops (a hop
    only looks back at least round(p/2) hops, so a block depends on earlier blocks only)."""
    n = len(E); dmin = max(1, rnd(p / 2)); dmax = rnd(2 * p)
    d = np.arange(dmin, dmax + 1); tx = -alpha * np.log(d / p) ** 2
    C = np.zeros(n); back = np.full(n, -1)
    for t0 in range(0, n, dmin):
        ts = np.arange(t0, min(n, t0 + dmin)); idx = ts[:, None] - d[None, :]
        vals = np.where(idx >= 0, C[np.maximum(idx, 0)] + tx, -np.inf)
        j = vals.argmax(1); best = vals[np.arange(len(ts)), j]
        ok = best >= 0
        C[ts] = E[ts] + np.where(ok, best, 0.0)
        back[ts] = np.where(ok, ts - d[j], -1)
    last = max(0, n - rnd(p))
    t = last + int(np.argmax(C[last:]))
    beats = [t]
    while back[t] >= 0:
        t = back[t]; beats.append(t)
    return np.array(beats[::-1]), C


def wmax(X, idx):
    """max of X over idx-1..idx+1 (clipped)"""
    n = len(X)
    return np.maximum.reduce([X[np.clip(idx + k, 0, n - 1)] for k in (-1, 0, 1)])


def contrast(a, m):
    if len(a) < 2 * m or a.mean() <= 0: return 0.0
    ph = np.array([a[j::m].mean() for j in range(m)])
    return float((ph.max() - ph.min()) / a.mean())


def beat_features(E, L, e_raw, p, T, m_raw=None):
    """m_raw: the mid band, or None where it does not count (see mid_counts)."""
    b, C = dp_beats(E, p)
    x = np.log2(T / 110)
    if len(b) < 3:
        return dict(eb=0, eo=0, lb=0, lo=0, irr=1, cost=1, bar2=0, bar3=0, bar4=0, ebar2=0, x=x, x2=x * x, r=0, nb=len(b),
                    ro=1, lro=1, cv=1, lcv=1)
    ibi = np.diff(b).astype(float); m = (b[:-1] + b[1:]) // 2
    aE = wmax(E, b); aL = wmax(L, b)
    r = wmax(e_raw, b).mean() / e_raw.mean() if e_raw.mean() > 0 else 0
    if m_raw is not None and m_raw.mean() > 0:
        r = max(r, wmax(m_raw, b).mean() / m_raw.mean())
    return dict(eb=aE.mean(), eo=wmax(E, m).mean(), lb=aL.mean(), lo=wmax(L, m).mean(),
                irr=ibi.std() / ibi.mean(), cost=float(np.mean(np.log(ibi / p) ** 2)),
                bar2=contrast(aL, 2), bar3=contrast(aL, 3), bar4=contrast(aL, 4), ebar2=contrast(aE, 2),
                x=x, x2=x * x, r=float(r), nb=len(b),
                ro=wmax(E, m).mean() / max(aE.mean(), 1e-9), lro=wmax(L, m).mean() / max(aL.mean(), 1e-9),
                cv=aE.std() / max(aE.mean(), 1e-9), lcv=aL.std() / max(aL.mean(), 1e-9))


def dump_path(stem):
    """STEM.f32 (a dump) or, where there is none, STEM.f16 (a committed parity fixture)."""
    return stem + '.f32' if os.path.exists(stem + '.f32') or not os.path.exists(stem + '.f16') else stem + '.f16'


def segment_envelopes(stem):
    """(e, l, m): the emphasised full, low and mid envelopes (quantised as the Swift stores them) over
    the first SEGMENT_S seconds from the first hop with any full-band strength; m is None where the mid
    band does not count (mid_counts). None when the full band is empty."""
    B = env.load(dump_path(stem))
    e = quant(env.emph(B['all'])); l = quant(env.emph(B['low'])); m = quant(env.emph(B['mid']))
    nz = np.flatnonzero(e > 0)
    if not len(nz): return None
    s = nz[0]; n = int(SEGMENT_S * FR)
    e, l, m = e[s:s + n], l[s:s + n], m[s:s + n]
    if not mid_counts(m, len(e), data.floor_quarter_octaves(data.track_lufs(stem))): m = None
    return e, l, m


SLOW_HOPS = 10                 # the slow-onset ratio's moving sum: 100 ms, a bowed or swelling attack


def slow_onset_ratio(stem, T):
    """MetricalLevel.slowOnsetRatio: the on-beat ratio of the onset strength summed over the last
    SLOW_HOPS hops (the whole rise of a slow attack in one value), beats tracked on that sum at
    period FR*60/T, the higher of the full band's and the mid band's (where mid_counts)."""
    seg = segment_envelopes(stem)
    if seg is None: return 0.0
    e, _, m = seg
    p = FR * 60 / T; best = 0.0
    for x in (e, m):
        if x is None or x.mean() <= 0: continue
        xs = np.convolve(x, np.ones(SLOW_HOPS))[:len(x)]
        sd = xs.std()
        b, _ = dp_beats(xs / sd if sd > 0 else xs, p)
        if len(b) >= 3: best = max(best, float(wmax(xs, b).mean() / xs.mean()))
    return best


PULSE_WINDOW = 1000            # MetricalLevel.pulseWindowHops: 10 s
PULSE_BINS = 24
UNRELATED = (0.83, 0.91, 1.09, 1.19)


def steady_pulse(stem, T):
    """MetricalLevel.steadyPulse: the full-band envelope folded onto PULSE_BINS phases of the period in
    10 s windows (each window's peak bin over its mean bin, each bin summed with its neighbours around the
    circle); a period scores the mean over windows, best of 9 periods within +-1 %. Returns (ratio,
    consistency): the score at FR*60/T over its mean at the UNRELATED multiples of it, and
    (ratio - 1) * sqrt(k) / sd- of the k windows' own ratios, sd- their lower semideviation
    sqrt(2 * sum(min(0, v - ratio)^2) / (k - 1)) (0 with fewer than two windows)."""
    seg = segment_envelopes(stem)
    if seg is None: return 0.0, 0.0
    e = seg[0]; n = len(e)

    def folded(p):
        vals = []
        for s in range(0, n - PULSE_WINDOW // 2, PULSE_WINDOW):
            w = e[s:s + PULSE_WINDOW]
            if w.sum() <= 0: continue
            x = np.arange(len(w)) * (1 / p)
            ph = np.minimum(((x - np.floor(x)) * PULSE_BINS).astype(int), PULSE_BINS - 1)
            h = np.bincount(ph, weights=w, minlength=PULSE_BINS)
            h = h + np.roll(h, 1) + np.roll(h, -1)
            vals.append(h.max() / (3 * w.sum() / PULSE_BINS))
        return np.array(vals)

    def best(p):
        """the best of the 9 periods: (its mean score, its windows' scores); the first on a tie"""
        top, windows = -np.inf, np.zeros(0)
        for k in range(9):
            v = folded(p * (1 + (-0.01 + k * 0.0025)))
            score = float(v.mean()) if len(v) else 0.0
            if score > top: top, windows = score, v
        return top, windows
    p = FR * 60 / T
    unrelated = float(np.mean([best(p * q)[0] for q in UNRELATED]))
    if unrelated <= 0: return 0.0, 0.0
    score, windows = best(p)
    ratio = score / unrelated
    k = len(windows)
    if k < 2: return ratio, 0.0
    semideviation = math.sqrt(2 * float(np.sum(np.minimum(0.0, windows - score) ** 2)) / (k - 1)) / unrelated
    return ratio, (max(0.0, (ratio - 1) * math.sqrt(k) / semideviation) if semideviation > 0 else 0.0)


def track_beats(stem, cs):
    """Each candidate's beat features (beat_features), cached in STEM.beat.pkl."""
    pk = stem + '.beat.pkl'
    if os.path.exists(pk):
        d = pickle.load(open(pk, 'rb'))
        if d.get('version') == VERSION and np.allclose(d['cs'], cs): return d
    seg = segment_envelopes(stem)
    d = dict(version=VERSION, cs=list(cs), rows=beat_rows(seg, cs))
    pickle.dump(d, open(pk, 'wb'))
    return d


def beat_rows(seg, cs):
    rows = []
    if seg is not None:
        e, l, m = seg
        E = e / e.std() if e.std() > 0 else e
        L = l / l.std() if l.std() > 0 else l
        for T in cs:
            rows.append(beat_features(E, L, e, FR * 60 / T, T, m))
    return rows


def fit_clogit(items, key, lam, weights=None):
    """ridge conditional logit on standardised features; returns weights in RAW feature units
    (a per-feature mean shift adds the same to every candidate of a track and cancels).
    weights: one per item, how much its track counts in the loss (None: 1 each)."""
    wts = np.ones(len(items)) if weights is None else np.asarray(weights, float)
    its = [(it, w) for it, w in zip(items, wts) if it['y'].any() and len(it[key])]
    Xall = np.vstack([it[key] for it, _ in its]); sd = Xall.std(0); sd[sd == 0] = 1
    Xs = [it[key] / sd for it, _ in its]; Ys = [w * it['y'] / it['y'].sum() for it, w in its]
    off = np.cumsum([0] + [len(x) for x in Xs]); Xc = np.vstack(Xs); Yc = np.concatenate(Ys)
    tw = np.concatenate([np.full(len(x), w) for x, (_, w) in zip(Xs, its)])
    seg = np.repeat(np.arange(len(Xs)), [len(x) for x in Xs])

    def f(w):
        z = Xc @ w
        zmax = np.maximum.reduceat(z, off[:-1]); ez = np.exp(z - zmax[seg]); s = np.add.reduceat(ez, off[:-1])
        lse = zmax + np.log(s); p = ez / s[seg]
        loss = -(Yc * (z - lse[seg])).sum() + 0.5 * lam * w @ w
        g = Xc.T @ (tw * p - Yc) + lam * w
        return loss, g
    w = minimize(f, np.zeros(Xc.shape[1]), jac=True, method='L-BFGS-B', options=dict(maxiter=500)).x
    return w / sd


def gate(f):
    return not (f['n'] < env.MAXLAG + 2 or f['reach'] * 100 < f['n'] or not len(f['cs']))


def final_bpm(f, i):
    r = f['full']; chosen = data.refine(r, f['cs'][i], 0.005, 0.01)
    p = data.period_from_peaks(r, FR * 60 / chosen)
    precise = FR * 60 / p if p else chosen
    bpm = min(data.MAX_BPM, max(data.MIN_BPM, precise if abs(precise - chosen) < 0.01 * chosen else chosen))
    return round(bpm * 100) / 100


def beat_fraction_acf(f, d):
    """Each candidate's full-band autocorrelation at 1/d of its beat."""
    return np.array([env.at(f['full'], FR * 60 / T / d) for T in f['cs']])


def sixth_of_beat(f):
    """TempoEstimator's sixthOfBeat of every candidate."""
    return beat_fraction_acf(f, 6)


def fit_sixth(train, w, lams):
    """The sixth-of-beat weight fitted on top of the level weights w (held): a conditional logit in that one
    weight with w . both as each candidate's offset, ridge on the standardised feature, the mean of the fits
    at every strength in lams (fit_level_model's procedure)."""
    its = [it for it in train if it['y'].any() and len(it['both'])]
    sd = np.concatenate([it['x6'] for it in its]).std() or 1.0
    data = [(it['both'] @ w, it['x6'], it['y'] / it['y'].sum()) for it in its]

    def loss(v, lam):
        total = 0.0
        for z0, x, y in data:
            z = z0 + v * x; m = z.max(); total -= (y * (z - m - np.log(np.exp(z - m).sum()))).sum()
        return total + 0.5 * lam * (v * sd) ** 2
    fits = [minimize_scalar(lambda v: loss(v, lam), bounds=(-100, 100), method='bounded').x for lam in lams]
    return float(np.mean(fits))


