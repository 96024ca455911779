#!/usr/bin/env python3
"""downbeat_cv.py -- where BarLines' weights and threshold come from, and their leave-one-source-out figures.

  downbeat_cv.py PROFILES [--cache DIR] [--styles DIR] [--midi DIR] [--per-file]

PROFILES holds naviscan profiles (`naviscan analyze FILE --dj`) of the rendered grooves as
PROFILES/seedN/NAME.json and of the MIDI dev set's WAVs as PROFILES/midi/<relative_path without .wav>.json;
--cache holds tempo_cv.py's onset-band dumps of the same files (STEM.f32: every hop's compressed band
levels). Only the profiles' beat grids are read: the bars are chosen here again, as BarLines does.

Per track, the grid's beats (every beat of `beat_grid.segments`) each get the five accents of
Sources/NaviscanCore/Tempo/BarLines.swift, computed exactly as the Swift does:
  low, full    the emphasised low-band and full-band onset strength (quantised as the Swift keeps it)
               at its largest within +-2 hops of the beat, 0 before the first onset's hop;
  change, change_low, change_mid
               the band levels in 50 ms blocks (12 groups: the low region split in 4, the mid in 5,
               the high in 3; one byte in steps of 1/32, as BandLevels keeps them); at each beat the
               groups' mean over the blocks to the next beat minus that from the previous one (the
               time before the track counts as silence), as a Euclidean length over all groups, the
               low ones and the mid ones.
A candidate (4 beats per bar at phase 0..3, 3 at 0..2; only with >= 4 bars of beats) has as features
each accent's contrast: its mean at that phase minus its mean at the other phases, over its mean.

Labels: the candidate whose bar lines have the highest downbeat F-measure (+-70 ms, first 5 s left out)
against the truth (grooves: ../shared/tempo's beats_s and beats_per_bar from beat_origin_s; MIDI:
downbeats_s), for tracks whose grid reaches beat F >= 0.9 (else the bar question is moot) and whose
truth has 3 or 4 beats per bar.

The choice (as BarLines.choose): the meter of the best candidate over the beats after the first four
(the change from silence where the sound starts says where a bar starts, not how long bars are), then
the best phase of that meter over all beats; named when its probability among all the
candidates (softmax of the scores) reaches the threshold.

A ridge conditional logit over the candidates is fitted with one source left out at a time (grooves by
seed, MIDI by package; the ridge strength chosen by an inner leave-one-source-out split). The threshold
on the winner's probability (bars named only at or above it) is chosen on the training sources as the
one that maximises the sum over named bars of (2 F - 1): a wrong bar line costs as much as a right one
gains. Prints per source the held-out downbeat F on the good grids, the F of the rule the profiles
were made with, the best reachable, and the all-data fit (what BarLines carries).
"""
import argparse, json, os, sys
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tempo-model')); sys.path.insert(0, HERE)
import fit_tempo_model as ftm                 # noqa: E402
from beat_level_cv import quant, rnd          # noqa: E402
from score_beats import f_measure, expand     # noqa: E402
from phase_cv import clogit                   # noqa: E402

FR = ftm.FR
BLOCK_HOPS, GROUPS, CODE_SCALE = 5, 12, 32.0
MID_FIRST, HIGH_FIRST = 12, 27
CANDS = [(4, p) for p in range(4)] + [(3, p) for p in range(3)]
FEATS = ('low', 'full', 'change', 'change_low', 'change_mid')
LAMS = (0.1, 1, 10)
METER_SKIP = 4                 # the meter is chosen from the beats after the first four (BarLines.meterSkip)
THRESHOLDS = (0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


def edges(nbands):
    split = lambda a, b, k: [a + i * (b - a) // k for i in range(k)]
    return split(0, MID_FIRST, 4) + split(MID_FIRST, HIGH_FIRST, 5) + split(HIGH_FIRST, nbands, 3) + [nbands]


def band_blocks(raw):
    """BandLevels.finish(): block codes, blocks x 12 (the last block may hold fewer hops)."""
    e = edges(raw.shape[1])
    g = np.stack([raw[:, e[i]:e[i + 1]].astype(np.float32).mean(1) for i in range(GROUPS)], 1)
    out = []
    for s in range(0, len(g), BLOCK_HOPS):
        m = g[s:s + BLOCK_HOPS].mean(0)
        out.append(np.clip(np.floor(m * CODE_SCALE + 0.5), 0, 255))
    return np.array(out) / CODE_SCALE


def spectral_change(blocks, beats):
    """BarLines.spectralChange"""
    n_blocks = len(blocks)
    hb = []
    for t in beats:
        b = rnd(t * FR / BLOCK_HOPS)
        if b >= n_blocks: break
        hb.append(max(0, b))
    if len(hb) < 2: return [np.zeros(0)] * 3
    cs = np.vstack([np.zeros(GROUPS), np.cumsum(blocks, 0)])
    mean = lambda a, b: (cs[b] - cs[max(0, a)]) / (b - a)     # blocks before the track are silence
    n = len(hb); out = [[], [], []]
    for i in range(n):
        before = hb[i - 1] if i > 0 else hb[0] - (hb[1] - hb[0])
        after = min(n_blocks, hb[i + 1] if i + 1 < n else hb[-1] + (hb[-1] - hb[-2]))
        d = mean(hb[i], after) - mean(before, hb[i]) if before < hb[i] < after else np.zeros(GROUPS)
        out[0].append(np.sqrt((d ** 2).sum())); out[1].append(np.sqrt((d[0:4] ** 2).sum())); out[2].append(np.sqrt((d[4:9] ** 2).sum()))
    return [np.array(x) for x in out]


def accents(dump, beats):
    raw = np.fromfile(dump, dtype='<f4').reshape(-1, ftm.NBANDS)
    change = spectral_change(band_blocks(raw), beats)
    B = ftm.load(dump)                                   # row j = hop j + 1
    full_y = ftm.emph(B['all'])
    nz = np.flatnonzero(full_y > 0)
    start = int(nz[0]) + 1 if len(nz) else 0             # OnsetPeriodicity's beatStart (a hop)
    env = {k: quant(ftm.emph(B[k])) for k in ('low', 'all')}
    last_hop = len(full_y)                               # hops 1..last_hop
    def peak(e, hop):
        lo, hi = max(start, hop - 2), min(last_hop, hop + 2)
        return float(e[lo - 1:hi].max()) if hi >= lo and hi >= 1 else 0.0
    hops = [rnd(t * FR) for t in beats[:len(change[0])]]
    return dict(low=np.array([peak(env['low'], h) for h in hops]), full=np.array([peak(env['all'], h) for h in hops]),
                change=change[0], change_low=change[1], change_mid=change[2])


def features(acc):
    """rows: the candidates with >= 4 bars of beats, columns: FEATS' contrasts"""
    n = len(acc['full']); rows, cands = [], []
    for m, p in CANDS:
        if n < 4 * m: continue
        row = []
        for f in FEATS:
            a = acc[f]; mu = a.mean()
            if mu <= 0: row.append(0.0); continue
            ph = np.array([a[j::m].mean() for j in range(m)])
            row.append((ph[p] - (ph.sum() - ph[p]) / (m - 1)) / mu)
        rows.append(row); cands.append((m, p))
    return np.array(rows).reshape(-1, len(FEATS)), cands


def tracks(a):
    for seed in ('seed1', 'seed2'):
        tp = os.path.join(a.styles, seed, 'truth.json')
        if not os.path.exists(tp): continue
        for c in json.load(open(tp))['clips']:
            if not c['beats_s'] or c.get('beats_per_bar') not in (3, 4): continue
            o, m, per = c['beat_origin_s'], c['beats_per_bar'], 60 / c['bpm']
            down = [b for b in c['beats_s'] if min(((b - o) / per) % m, m - ((b - o) / per) % m) < 1e-3]
            yield ('grooves:' + seed, c['name'], c['beats_s'], down, os.path.join(a.cache, 'styles', seed, c['name'] + '.wav.f32'),
                   os.path.join(a.profiles, seed, c['name'] + '.json'))
    tp = os.path.join(a.midi, 'truth.json')
    if os.path.exists(tp):
        for x in json.load(open(tp))['tracks']:
            if x['format'] != 'wav' or not x.get('beats_s') or x.get('beats_per_bar') not in (3, 4): continue
            rp = x['relative_path']
            yield ('midi:' + x['package'], rp, x['beats_s'], x['downbeats_s'], os.path.join(a.cache, 'midi', rp + '.f32'),
                   os.path.join(a.profiles, 'midi', rp[:-4] + '.json'))


def load(a):
    rows = []
    for src, name, beats, down, dump, prof in tracks(a):
        if not (os.path.exists(dump) and os.path.exists(prof)): continue
        grid = json.load(open(prof)).get('beat_grid') or {}
        est, est_down = expand(grid)
        if len(est) < 2 or f_measure(beats, est) < 0.9: continue
        acc = accents(dump, est)
        X, cands = features(acc)
        if not len(cands): continue
        # the candidates over the beats after the first four, for the meter
        X1, c1 = features({k: v[METER_SKIP:] for k, v in acc.items()})
        meters1 = np.array([m for m, p in c1])
        F = np.array([f_measure(down, est[p::m]) for m, p in cands])
        rows.append(dict(src=src, name=name, X=X, X1=X1, meters1=meters1, F=F, cands=cands, given=f_measure(down, est_down)))
    return rows


def fit(rows, lam):
    return clogit([r for r in rows if r['F'].max() >= 0.5], lam)


def predict(r, w):
    """BarLines.choose: (F of the chosen candidate, its probability among all); the meter from the
    beats after the first four, the phase within it from all beats"""
    if not len(r['X1']): return 0.0, 0.0
    meter = r['meters1'][int(np.argmax(r['X1'] @ w))]
    z = r['X'] @ w; p = np.exp(z - z.max()); p /= p.sum()
    i = max((i for i, c in enumerate(r['cands']) if c[0] == meter), key=lambda i: z[i])
    return r['F'][i], p[i]


def choose(train):
    """ridge strength by inner leave-one-source-out, then weights and threshold on all of train"""
    srcs = sorted({r['src'] for r in train}); best = None
    for lam in LAMS:
        ok = sum(predict(r, fit([q for q in train if q['src'] != s], lam))[0] for s in srcs for r in train if r['src'] == s)
        if best is None or ok > best[0] + 1e-9: best = (ok, lam)
    w = fit(train, best[1])
    P = [predict(r, w) for r in train]
    util = {t: sum(2 * f - 1 for f, p in P if p >= t) for t in THRESHOLDS}
    t = max(THRESHOLDS, key=lambda t: (round(util[t], 9), -t))
    return w, best[1], t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('profiles')
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/naviscan-tempo-cv'))
    ap.add_argument('--styles', default=os.path.expanduser('~/.cache/naviscan-similarity/work/styles'))
    ap.add_argument('--midi', default=os.path.expanduser('~/.cache/naviscan-miditempo'))
    ap.add_argument('--per-file', action='store_true')
    a = ap.parse_args()
    rows = load(a)
    srcs = sorted({r['src'] for r in rows})
    print('| source | tracks (grid F >= 0.9) | held-out downbeat F | named | rule of the profiles | best reachable | lam | threshold |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|')
    pooled = {}
    for s in srcs:
        train = [r for r in rows if r['src'] != s]; test = [r for r in rows if r['src'] == s]
        w, lam, t = choose(train)
        got = []
        for r in test:
            f, p = predict(r, w)
            got.append(f if p >= t else 0.0)
            if a.per_file: print(f'  {s} {r["name"]} F {got[-1]:.3f} p {p:.2f} given {r["given"]:.3f}')
        named = sum(predict(r, w)[1] >= t for r in test)
        print(f'| {s} | {len(test)} | {np.mean(got):.3f} | {named} | {np.mean([r["given"] for r in test]):.3f} | '
              f'{np.mean([r["F"].max() for r in test]):.3f} | {lam} | {t} |')
        for grp in ('grooves', 'midi'):
            if s.startswith(grp): pooled.setdefault(grp, []).extend(zip(got, [r['given'] for r in test]))
    for grp, v in pooled.items():
        print(f'| **all {grp}** | {len(v)} | **{np.mean([g for g, _ in v]):.3f}** | | {np.mean([x for _, x in v]):.3f} | | | |')
    w, lam, t = choose(rows)
    print(f'\nall data: lam {lam}, threshold {t}, weights ' + ', '.join(f'{f} {x:.4f}' for f, x in zip(FEATS, w)))
    print('Swift: static let weights: [Double] = [' + ', '.join(f'{x:.4f}' for x in w) + f']; minProbability = {t}')


if __name__ == '__main__':
    main()
