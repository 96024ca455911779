#!/usr/bin/env python3
"""harmonic_cv.py -- does harmonic rhythm or note rate tell the metrical level? Leave-one-source-out.

The level model of MetricalLevel.swift (beat_level_cv.py's beat+acf22 variant: the mean of the ridge fits
at lambda 0.3, 3 and 30, the beatless threshold on r, every fit inside the fold) with and without extra
per-candidate features, on the same folds and dumps as beat_level_cv.py. The extra features come from
evidence the onset envelopes do not carry:

  chroma     12 pitch classes per 10 ms hop of the first 120 s from the first sample above 1e-4 (mono,
             22.05 kHz, 4096-point STFT, bins 60-2500 Hz, log(1 + 100 |X| / max), 90 ms median filter,
             L2 per hop); cached as STEM.chroma.npy beside the dump.
  novelty    1 - cos(mean chroma of the 250 ms before, of the 250 ms after), minus its 1 s moving mean,
             half-wave rectified: chord and note changes, whatever their attack.
  h1 h2 h4   autocorrelation of the novelty (normalised) at 1, 2 and 4 beats of the candidate (max of
             4 lags around it): how far apart chord changes lie, in beats.
  hd hb2 hb4 chords per beat of the candidate's DP beats (the tracker of beat_level_cv.dp_beats on the
             full-band envelope): the cosine distance d_i between the chroma averaged over beat i and
             beat i+1; hd = mean d, hbM = the lag-M phase contrast of d (beat_level_cv.contrast): chords
             changing on every 2nd or 4th beat.
  nr nr2     note rate in the candidate's beats: log2(rho * 60 / T) and its square, rho = local maxima of
             the emphasised full-band envelope above mean + std per second (a per-track constant makes
             no difference in a conditional logit; its square does).

  harmonic_cv.py [--lmms DIR] [--sets h1,h2,h4:hd,hb2,hb4:nr,nr2]
Prints, per feature set, folded ACC1 / ACC2 / false nulls for real music and grooves, held out, and the
tracks whose answer changes. Reads beat_level_cv.py's cached dumps (run tempo_cv.py first) and the WAVs.
"""
import argparse, os, sys
import numpy as np
import soundfile as sf
from scipy.ndimage import median_filter, uniform_filter1d
from scipy.signal import resample_poly, stft

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import beat_level_cv as blc  # noqa: E402
import tempo_cv as tc        # noqa: E402

SR, NFFT, HOP = 22050, 4096, 220          # HOP: 10 ms, the dumps' hop
HALF_WINDOW = 25                          # novelty: 250 ms either side
LAMS = [0.3, 3, 30]


def chroma(wav, cache):
    if os.path.exists(cache):
        return np.load(cache).astype(np.float32)
    x, sr = sf.read(wav, dtype='float32', always_2d=True, frames=130 * 48000)
    x = x.mean(1)[:130 * sr]
    if sr != SR: x = resample_poly(x, SR, sr).astype(np.float32)
    nz = np.flatnonzero(np.abs(x) > 1e-4)
    C = np.zeros((12, 0), np.float32)
    if len(nz):
        x = x[nz[0]:nz[0] + 120 * SR]
        f, _, Z = stft(x, SR, nperseg=NFFT, noverlap=NFFT - HOP, boundary=None, padded=False)
        M = np.abs(Z); sel = (f >= 60) & (f <= 2500)
        pc = (np.round(12 * np.log2(f[sel] / 440.0)) + 69).astype(int) % 12
        L = np.log1p(100 * M[sel] / (M[sel].max() + 1e-12))
        C = np.zeros((12, M.shape[1])); np.add.at(C, pc, L)
        C = median_filter(C, size=(1, 9))
        C /= np.linalg.norm(C, axis=0, keepdims=True) + 1e-9
        C = np.pad(C, ((0, 0), (NFFT // HOP // 2, 0)), mode='edge')   # hop 0 ~ the first sample
    np.save(cache, C.astype(np.float16))
    return C


def novelty(C):
    n = C.shape[1]; W = HALF_WINDOW; nov = np.zeros(n)
    if n <= 2 * W: return nov
    cs = np.cumsum(np.pad(C, ((0, 0), (1, 0))), axis=1); i = np.arange(W, n - W)
    a = cs[:, i] - cs[:, i - W]; b = cs[:, i + W] - cs[:, i]
    nov[i] = 1 - (a * b).sum(0) / (np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0) + 1e-9)
    return np.maximum(nov - uniform_filter1d(nov, 101), 0)


def extra_features(stem, wav, cs):
    C = chroma(wav, stem + '.chroma.npy')
    nov = novelty(C); v = nov - nov.mean()
    F = np.fft.rfft(v, 2 * len(v)); ac = np.fft.irfft(F * np.conj(F))[:801]
    ac = ac / ac[0] if len(v) and ac[0] > 0 else np.zeros(801)
    seg = blc.segment_envelopes(stem)
    rho = 1.0
    if seg is not None:
        e = seg[0]; thr = e.mean() + e.std()
        pk = (e[1:-1] > e[:-2]) & (e[1:-1] >= e[2:]) & (e[1:-1] > thr)
        rho = max(pk.sum() / (len(e) / blc.FR), 0.05)
    csum = np.cumsum(np.pad(C, ((0, 0), (1, 0))), axis=1)
    rows = []
    for T in cs:
        r = {}
        for k in (1, 2, 4):
            j = int(k * 6000 / T)       # lag in hops
            r[f'h{k}'] = float(max(ac[max(j - 1, 0):j + 3].max(), 0)) if j < len(ac) - 1 else 0.0
        r.update(hd=0.0, hb2=0.0, hb4=0.0)
        if seg is not None and C.shape[1] > 100:
            E = seg[0] / seg[0].std() if seg[0].std() > 0 else seg[0]
            b, _ = blc.dp_beats(E, blc.FR * 60 / T)
            b = b[b < C.shape[1] - 1]
            if len(b) >= 9:
                c = (csum[:, b[1:]] - csum[:, b[:-1]]).T
                c /= np.linalg.norm(c, axis=1, keepdims=True) + 1e-9
                d = 1 - np.sum(c[1:] * c[:-1], 1)
                r.update(hd=float(d.mean()), hb2=blc.contrast(d, 2), hb4=blc.contrast(d, 4))
        q = np.log2(rho * 60 / T); r.update(nr=q, nr2=q * q)
        rows.append(r)
    return rows


def held_out(items, key):
    pred = {}
    for s in sorted({it['source'] for it in items}):
        train = [it for it in items if it['source'] != s]
        w, _ = blc.fit_level_model(train, key, LAMS, None)
        pred.update(blc.predict_fold(train, [it for it in items if it['source'] == s], key, w)[0])
    return pred


def right(p, truth):
    return p is not None and tc.close(p, tc.fold(truth))


def summary(items, pred, sel):
    its = [it for it in items if sel(it)]; wt = [it for it in its if it['truth']]
    a1 = sum(right(pred[it['key']], it['truth']) for it in wt)
    a2 = sum(pred[it['key']] is not None and any(tc.close(pred[it['key']], it['truth'] * m) for m in (1, 2, .5, 3, 1 / 3))
             for it in wt)
    nulls = sum(pred[it['key']] is None for it in wt)
    given = sum(pred[it['key']] is not None for it in its if not it['truth'])
    return f'{len(wt):4d} | {100 * a1 / len(wt):5.1f} | {100 * a2 / len(wt):5.1f} | {nulls} | {given}'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--modules', default=os.path.join(tc.WORK, 'modtempo'))
    ap.add_argument('--styles', default=os.path.join(tc.WORK, 'styles'))
    ap.add_argument('--midi', default=os.path.expanduser('~/.cache/naviscan-miditempo'))
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/naviscan-tempo-cv'))
    ap.add_argument('--lmms')
    ap.add_argument('--sets', default='h1,h2,h4:hd,hb2,hb4:nr,nr2:hd,hb2,hb4,nr,nr2')
    a = ap.parse_args(); a.subset = 'all'
    sets = [s.split(',') for s in a.sets.split(':')]
    items = blc.load_items(a)
    for it in items:
        n = len(it['f']['cs'])
        ex = extra_features(it['stem'], it['wav'], it['f']['cs'])
        it['base'] = it['both']
        for k, fs in enumerate(sets):
            it[f'set{k}'] = np.hstack([it['base'], np.array([[row[x] for x in fs] for row in ex]).reshape(n, len(fs))])
    print(f'# {len(items)} tracks')
    groups = (('real music', lambda it: not it['source'].startswith('grooves')),
              ('grooves', lambda it: it['source'].startswith('grooves')))
    base = held_out(items, 'base')
    print('| features | set | n | folded ACC1 | ACC2 | false nulls | beatless given a tempo |\n|---|---|---:|---:|---:|---:|---:|')
    for g, sel in groups:
        print(f'| shipped | {g} | {summary(items, base, sel)} |')
    for k, fs in enumerate(sets):
        pred = held_out(items, f'set{k}')
        for g, sel in groups:
            print(f'| + {" ".join(fs)} | {g} | {summary(items, pred, sel)} |')
        for it in items:
            if it['truth'] and not it['source'].startswith('grooves') and pred[it['key']] != base[it['key']]:
                was, now = right(base[it['key']], it['truth']), right(pred[it['key']], it['truth'])
                if was != now:
                    print(f'|   | {"fixed" if now else "broken"}: {it["key"]} ({it["truth"]:g}: '
                          f'{base[it["key"]]} -> {pred[it["key"]]}) | | | | | |')


if __name__ == '__main__':
    main()
