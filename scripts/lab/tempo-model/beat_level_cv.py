#!/usr/bin/env python3
"""beat_level_cv.py -- metrical level (tempo octave) from DP beat tracking, leave-one-package-out CV.

Prototype for TempoEstimator: the candidates stay those of TempoEstimator.estimate (seed T0 x ratios in
57-205 BPM, each refined, see tempo_cv.py / fit_tempo_model.py), but the candidate that wins is chosen
from the beats a dynamic-programming tracker (Ellis 2007, librosa.beat.beat_track's recursion) lays
down at each candidate's period, instead of (or on top of) the 22-feature autocorrelation model.

Per track (the first 120 s of the envelope, from the first hop whose emphasised strength is > 0):
  e  = emphasised full-band onset strength (PeakEmphasis of low+mid+high flux), l = the same for the
       low band (bands 0..11); both quantised to 1/8 octave as the Swift stores them (quant() below);
  E  = e / std(e), L = l / std(l)  (population std over the segment);
  for each candidate tempo T (period p = FR*60/T hops, fractional):
     DP: C[t] = E[t] + max_{d in [round(p/2), round(2p)], t-d >= 0} (C[t-d] - ALPHA*ln(d/p)^2) when that
         max is >= 0, else C[t] = E[t] (no predecessor); backtrace from argmax C over the last round(p)
         hops (ties: the earliest), beats b_0 < b_1 < ... (hop indices);
     features (FEATS below, all computed from the beats only):
        eb    mean over beats of max(E[b-1..b+1])
        eo    mean over off-beats m_i = floor((b_i+b_{i+1})/2) of max(E[m-1..m+1])
        lb,lo same on L
        irr   std(ibi)/mean(ibi)  (ibi = b_{i+1}-b_i, population std)
        cost  mean over ibi of ln(ibi/p)^2
        bar2, bar3, bar4   a_i = max(L[b_i-1..b_i+1]); for m in 2,3,4: mean of a over beats i = j (mod m)
                for j = 0..m-1 ("phase means", beats counted from the first tracked beat),
                (max_j - min_j) / mean(a)           (0 when fewer than 2m beats)
        ebar2 the same lag-2 contrast on full-band a_i = max(E[b_i-1..b_i+1])
        x, x2 x = log2(T/110)
  with --subdivisions, also sub3 sub4 sub6 beside the 22 autocorrelation features: the full band's
  autocorrelation (tempo_cv's R['all']) at 1/3, 1/4 and 1/6 of the candidate's beat
  (subdivision_features), since a beat is rarely split in 6 and a shuffle read at half its tempo shows
  there (trial S of docs/tempo-dev-set.md "After 0.5.8"; not shipped);
  level score z(T) = w . features(T) (conditional logit over the track's candidates; its weights
  fitted INSIDE each fold only: the mean of the ridge fits at every lam of --lams, so no strength is
  chosen from data; --choose-lam instead fits at the lam an inner grouped split of the training sources
  picks, as tempo_cv.py does), the highest z wins.
  Beatless rule: r = mean e at the winning candidate's beats (max over b-1..b+1) / mean e over the
  segment, or the same on m (the emphasised mid band, bands 12..26, quantised) where that is higher and
  m passes the track's onset floor on at least 1 % of the segment's hops (mid_counts); the track has no
  tempo when r < rho, rho chosen in each fold with tempo_cv.choose_centre's rule (midway between the
  best beatless training clip and the worst training track with a tempo, or the fewest training errors).
  TempoEstimator's floor rule (99th percentile) stays before it.
  The reported BPM is then produced exactly as TempoEstimator does for the winning candidate (fine
  refine, period from the autocorrelation peaks, clamp to 60-200), so only the level decision changes.

Variants printed (all held out, same folds as tempo_cv.py: modules and MIDI by package, grooves by seed):
  shipped      the shipped weights and centre (reference; in-sample for grooves:seed1)
  acf22        the 22 autocorrelation features refitted per fold (this script's fitter) + shipped-style
               score centre (tempo_cv.choose_centre) -- should match tempo_cv.py's held-out table
  beat         beat features alone (+ x, x2), beatless rule r < rho
  beat+acf22   beat features and the 22 features in one conditional logit, beatless rule r < rho (with
               --subdivisions, sub3 sub4 sub6 too)
  beat+acf22+sixth  the model MetricalLevel.swift ships: beat+acf22's weights held and one more weight
               fitted on top (fit_sixth), on the full band's autocorrelation at a sixth of the beat (a beat
               is rarely split in 6, so a shuffle read at half its tempo shows there); it only moves the
               tempo: "no tempo" is decided at beat+acf22's winner by beat+acf22's rule, so the extra
               term cannot give a beatless track a tempo
  beat+shipped beat features and ONE more feature, the shipped model's score (its weights frozen; they
               were fitted on groove renders incl. seed 1, so grooves:seed1 is not clean for this one)
  (in beat+acf22, x and x2 appear twice -- beat features and the last two acf features; the ridge
  splits their weight evenly, so the Swift adds the two weights of each.)
  (and --smooth adds librosa's local-score smoothing: E convolved with exp(-0.5 (32 k/p)^2), |k| <= p)

  beat_level_cv.py [--subset small] [--smooth] [--subdivisions] [--lams 0.3,3,30]
                   [--choose-lam [--inner-k K]] [--lmms DIR] [--json OUT]
Reads only the cached dumps of tempo_cv.py (~/.cache/naviscan-tempo-cv); caches the DP features in
STEM.beat.pkl beside them.
"""
import argparse, collections, json, math, os, pickle, statistics, sys, time
import numpy as np
from scipy.optimize import minimize, minimize_scalar

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fit_tempo_model as ftm  # noqa: E402
import tempo_cv as tc          # noqa: E402

FR = ftm.FR
ALPHA = 100.0                  # librosa's tightness
SEGMENT_S = 120.0              # level choice on the first 120 s from the first onset
FEATS = ['eb', 'eo', 'lb', 'lo', 'irr', 'cost', 'bar2', 'bar3', 'bar4', 'ebar2', 'x', 'x2']
# --feats v2: FEATS plus scale-free ratios and beat-accent consistency
FEATS_V2 = FEATS + ['ro', 'lro', 'cv', 'lcv']
VERSION = 7
SUBDIVISIONS = (3, 4, 6)       # --subdivisions: lags at 1/3, 1/4, 1/6 of a beat (trial S, not in the Swift)


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


def segment_envelopes(stem):
    """(e, l, m): the emphasised full, low and mid envelopes (quantised as the Swift stores them) over
    the first SEGMENT_S seconds from the first hop with any full-band strength; m is None where the mid
    band does not count (mid_counts). None when the full band is empty."""
    B = ftm.load(stem + '.f32')
    e = quant(ftm.emph(B['all'])); l = quant(ftm.emph(B['low'])); m = quant(ftm.emph(B['mid']))
    nz = np.flatnonzero(e > 0)
    if not len(nz): return None
    s = nz[0]; n = int(SEGMENT_S * FR)
    e, l, m = e[s:s + n], l[s:s + n], m[s:s + n]
    if not mid_counts(m, len(e), tc.floor_quarter_octaves(tc.track_lufs(stem))): m = None
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


def smooth(E, p):
    k = np.arange(-rnd(p), rnd(p) + 1); w = np.exp(-0.5 * (k * 32.0 / p) ** 2)
    return np.convolve(E, w, 'same')


def track_beats(stem, cs, smoothed):
    pk = stem + ('.beats.pkl' if smoothed else '.beat.pkl')
    if os.path.exists(pk):
        d = pickle.load(open(pk, 'rb'))
        if d.get('version') == VERSION and np.allclose(d['cs'], cs): return d
    seg = segment_envelopes(stem)
    rows = []
    if seg is not None:
        e, l, m = seg
        E = e / e.std() if e.std() > 0 else e
        L = l / l.std() if l.std() > 0 else l
        for T in cs:
            p = FR * 60 / T
            Es = smooth(E, p) if smoothed else E
            rows.append(beat_features(Es, L, e, p, T, m))
    d = dict(version=VERSION, cs=list(cs), rows=rows)
    pickle.dump(d, open(pk, 'wb'))
    return d


# ------------------------------------------------------------------------------- conditional logit
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


def choose_lam(train, key, lams, k=3):
    """The ridge strength with the best inner held-out accuracy: k groups of training sources (0: each
    source its own group)."""
    srcs = sorted({it['source'] for it in train}, key=lambda s: (-sum(i['source'] == s for i in train), s))
    groups = [srcs[i::k] for i in range(k)] if k else [[s] for s in srcs]
    res = {}
    for lam in lams:
        ok = n = 0
        for g in groups:
            tr = [it for it in train if it['source'] not in g]; te = [it for it in train if it['source'] in g and it['y'].any()]
            if not te or not tr: continue
            w = fit_clogit(tr, key, lam)
            ok += sum(it['y'][int(np.argmax(it[key] @ w))] for it in te); n += len(te)
        res[lam] = ok / n
    best = max(res.values())
    return max(l for l in lams if res[l] >= best - 1e-12), res


def fit_level_model(train, key, lams, inner_k=None, weights=None):
    """The level weights: with inner_k None (the shipped procedure) the mean of the fits at every ridge
    strength in lams, so no strength is chosen from data; else the fit at the strength choose_lam picks.
    weights: fit_clogit's, with inner_k None only. Returns (weights, what was chosen)."""
    if inner_k is None:
        return np.mean([fit_clogit(train, key, lam, weights) for lam in lams], axis=0), 'mean'
    lam, inner = choose_lam(train, key, lams, inner_k)
    return fit_clogit(train, key, lam), lam


def threshold(beatless, tempo):
    """tempo_cv.threshold's rule on any statistic (higher = more beat)."""
    return tc.threshold(beatless, [t for t in tempo if np.isfinite(t)], -np.inf, 'no beatless clip in training')


def gate(f):
    return not (f['n'] < ftm.MAXLAG + 2 or f['reach'] * 100 < f['n'] or not len(f['cs']))


def final_bpm(f, i):
    r = f['full']; chosen = tc.refine(r, f['cs'][i], 0.005, 0.01)
    p = tc.period_from_peaks(r, FR * 60 / chosen)
    precise = FR * 60 / p if p else chosen
    bpm = min(tc.MAX_BPM, max(tc.MIN_BPM, precise if abs(precise - chosen) < 0.01 * chosen else chosen))
    return round(bpm * 100) / 100


def beat_fraction_acf(f, d):
    """Each candidate's full-band autocorrelation at 1/d of its beat."""
    return np.array([ftm.at(f['full'], FR * 60 / T / d) for T in f['cs']])


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


def subdivision_features(f):
    """sub3 sub4 sub6 of every candidate: the full band's autocorrelation at 1/3, 1/4, 1/6 of its beat."""
    return np.column_stack([beat_fraction_acf(f, d) for d in SUBDIVISIONS]).reshape(len(f['cs']), len(SUBDIVISIONS))


def load_items(a, feats=FEATS, smoothed=False, subdivisions=False):
    """Every dumped track of tc.track_list(a) with what the level models need: f (tempo_cv's
    features), y (which candidates are right), acf (the 22 autocorrelation features), beat (the beat
    features `feats`), both (beat + acf, and the subdivision features with `subdivisions`), bship (beat +
    the shipped autocorrelation model's score) and r (each candidate's on-beat ratio). A track without a
    dump is named on stderr and left out."""
    items = []
    for source, name, wav, truth, stem in tc.track_list(a):
        if not os.path.exists(stem + '.f32') or os.path.getsize(stem + '.f32') == 0:
            # a missing or empty dump leaves the track out of every figure: say so
            print(f'# NOT SCORED (no dump or an empty one; run tempo_cv.py to dump): {source} {name}', file=sys.stderr)
            continue
        f = tc.track_features(stem)
        bt = track_beats(stem, f['cs'], smoothed)
        B = np.array([[r[k] for k in feats] for r in bt['rows']]) if bt['rows'] else np.zeros((0, len(feats)))
        if len(B) != len(f['cs']): B = np.zeros((len(f['cs']), len(feats)))
        y = np.array([tc.close(c, tc.fold(truth)) for c in f['cs']], float) if truth else np.zeros(len(f['cs']))
        items.append(dict(source=source, key=source + '/' + name, name=name, wav=wav, stem=stem, truth=truth, f=f, y=y,
                          acf=f['X'], beat=B, x6=sixth_of_beat(f) if len(f['cs']) else np.zeros(0),
                          both=np.hstack([B, f['X']] + ([subdivision_features(f)] if subdivisions else []))
                          if len(B) else np.zeros((0, len(feats) + 22 + (len(SUBDIVISIONS) if subdivisions else 0))),
                          bship=np.hstack([B, (f['X'] @ tc.SHIPPED_WEIGHTS)[:, None]]) if len(B) else np.zeros((0, len(feats) + 1)),
                          r=np.array([r['r'] for r in bt['rows']]) if bt['rows'] else np.zeros(0)))
    return items


def beat_stat(key, w, by_score=False):
    """What decides "no tempo" under weights w: r of the winning candidate (the beat rule) or, with
    by_score, the winning score itself (the autocorrelation model's rule); -inf for a gated track."""
    if by_score:
        return lambda it: float(np.max(it[key] @ w)) if gate(it['f']) else -np.inf
    return lambda it: float(it['r'][int(np.argmax(it[key] @ w))]) if gate(it['f']) else -np.inf


def predict_fold(train, test, key, w, by_score=False, w6=0.0):
    """One held-out fold: the level weights w (fitted on train) pick each test track's candidate, and the
    beatless threshold on beat_stat is chosen on train with threshold()'s rule. With w6 (beat+acf22+sixth,
    fit_sixth) the tempo is the candidate of the highest w . features + w6 . x6, while "no tempo" is
    still decided at the highest w . features.
    Returns ({key: bpm or None}, threshold, how it was chosen)."""
    stat = beat_stat(key, w, by_score)
    thr, how = threshold([stat(it) for it in train if it['truth'] is None and np.isfinite(stat(it))],
                         [stat(it) for it in train if it['truth'] is not None])
    preds = {it['key']: None if not gate(it['f']) or stat(it) < thr
             else final_bpm(it['f'], int(np.argmax(it[key] @ w + w6 * it['x6']))) for it in test}
    return preds, thr, how


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    tc.add_data_arguments(ap)
    ap.add_argument('--smooth', action='store_true', help="librosa's Gaussian local-score smoothing before the DP")
    ap.add_argument('--subdivisions', action='store_true',
                    help='sub3 sub4 sub6 (the autocorrelation at 1/3, 1/4, 1/6 of a beat) in beat+acf22 (trial S, not shipped)')
    ap.add_argument('--lams', default='0.3,3,30')
    ap.add_argument('--feats', default=','.join(FEATS), help="beat features used (comma list, or 'v2' for FEATS_V2)")
    ap.add_argument('--choose-lam', action='store_true',
                    help='fit at the one ridge strength an inner split picks, instead of averaging the fits at every strength')
    ap.add_argument('--inner-k', type=int, default=3, help='with --choose-lam: inner groups (0: leave one source out)')
    ap.add_argument('--json')
    a = ap.parse_args()
    feats = FEATS_V2 if a.feats == 'v2' else a.feats.split(',')
    t0 = time.time()
    items = load_items(a, feats, a.smooth, a.subdivisions)
    print(f'# {len(items)} tracks, beat features in {time.time() - t0:.0f} s', flush=True)
    lams = [float(x) for x in a.lams.split(',')]
    srcs = sorted({it['source'] for it in items})
    VARIANTS = (('acf22', 'acf'), ('beat', 'beat'), ('beat+acf22', 'both'), ('beat+shipped', 'bship'))
    preds = {v: {} for v, _ in VARIANTS + (('beat+acf22+sixth', 'both'),)}
    shipped = {it['key']: tc.predict(it['f'], tc.SHIPPED_WEIGHTS, tc.SHIPPED_CENTRE) for it in items}
    folds = []
    for s in srcs:
        train = [it for it in items if it['source'] != s]; test = [it for it in items if it['source'] == s]
        info = dict(source=s)
        for v, key in VARIANTS:
            w, lam = fit_level_model(train, key, lams, a.inner_k if a.choose_lam else None)
            fold_preds, thr, how = predict_fold(train, test, key, w, by_score=v == 'acf22')
            preds[v].update(fold_preds)
            info[v] = dict(lam=lam, thr=round(thr, 3), rule=how, w=[round(x, 4) for x in w])
            if v == 'beat+acf22':
                w6 = fit_sixth(train, w, lams)
                preds['beat+acf22+sixth'].update(predict_fold(train, test, key, w, w6=w6)[0])
                info['beat+acf22+sixth'] = dict(lam=lam, thr=round(thr, 3), rule=how, w6=round(w6, 4))
        folds.append(info)
        print(f'# fold {s}: ' + '; '.join(f'{v} lam {info[v]["lam"]} thr {info[v]["thr"]} ({info[v]["rule"]})'
                                          for v in preds), flush=True)
    res = {'shipped': tc.table('the previous autocorrelation-only model (reference; in-sample for grooves:seed1)', shipped, items)}
    for v in preds:
        res[v] = tc.table(f'held out: {v}', preds[v], items)
    # the weights every variant ships: fitted on ALL data
    print('\n## fitted on all data (what the Swift would ship)')
    allfit = {}
    for v, key in VARIANTS:
        w, lam = fit_level_model(items, key, lams, a.inner_k if a.choose_lam else None)
        names = {'acf': [f'acf{i}' for i in range(22)], 'beat': feats, 'both': feats + [f'acf{i}' for i in range(22)] + ([f'sub{d}' for d in SUBDIVISIONS] if a.subdivisions else []),
                 'bship': feats + ['shipped_score']}[key]
        stat = beat_stat(key, w, by_score=v == 'acf22')
        bl = [stat(it) for it in items if it['truth'] is None and np.isfinite(stat(it))]
        tp = [stat(it) for it in items if it['truth'] is not None]
        thr, how = threshold(bl, tp)
        allfit[v] = dict(lam=lam, thr=thr, rule=how, weights=dict(zip(names, [float(x) for x in w])),
                         beatless_stats=sorted(bl), lowest_tempo_stats=sorted(t for t in tp if np.isfinite(t))[:5])
        print(f'{v}: lam {lam}, threshold {thr:.4f} ({how}); beatless {np.round(sorted(bl), 3)}, '
              f'lowest with tempo {np.round(allfit[v]["lowest_tempo_stats"], 3)}')
        print('   ' + ', '.join(f'{k} {x:+.4f}' for k, x in zip(names, w)))
        if key == 'both' and not a.subdivisions:
            allfit[v]['sixth_of_beat'] = w6 = fit_sixth(items, w, lams)
            print(f'beat+acf22+sixth: the weights above and sixth_of_beat {w6:+.4f} on top '
                  '(MetricalLevel.sixthOfBeatWeight)')
    print('\nmisses held out (source, track, truth, beat, beat+acf22, beat+acf22+sixth, the autocorrelation-only model):')
    for it in items:
        if it['truth'] and any(p[it['key']] is None or not tc.close(p[it['key']], tc.fold(it['truth']))
                               for p in (preds['beat'], preds['beat+acf22'], preds['beat+acf22+sixth'])):
            print(f'  {it["source"]}  {it["name"]}  {it["truth"]}  {preds["beat"][it["key"]]}  '
                  f'{preds["beat+acf22"][it["key"]]}  {preds["beat+acf22+sixth"][it["key"]]}  {shipped[it["key"]]}')
    print(f'# total {time.time() - t0:.0f} s')
    if a.json:
        json.dump(dict(results=res, folds=folds, all_data=allfit,
                       predictions={k: dict(shipped=shipped[k], **{v: preds[v][k] for v in preds}) for k in shipped}),
                  open(a.json, 'w'), indent=1, default=float)


if __name__ == '__main__':
    main()
